"""`python -m uwf_tui`: the workbench, as `uwf-tui` (what `--serve` starts per browser session)."""

import sys

from .launch import main

sys.exit(main())
