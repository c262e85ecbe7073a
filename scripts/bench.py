"""The benchmark suite in one command: `.venv/bin/python scripts/bench.py [--quick]`.
See tests/bench/suite.py and docs/explanation/benchmarks.md."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "bench"))

from suite import main  # noqa: E402

main()
