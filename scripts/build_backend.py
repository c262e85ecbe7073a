"""uwf's build backend: setuptools', except that an editable install is one a type checker can
follow. setuptools' default editable install for a flat layout is an import hook, which mypy and
pyright cannot see through ("Cannot find implementation or library stub"); its `compat` mode puts
the checkout on sys.path with a plain .pth file, which they read. `--config-settings
editable_mode=...` still chooses another; a setuptools that no longer has `compat` gets its own
default (and type checkers then need `editable_mode=strict`)."""

import warnings

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F401,F403  (every hook of PEP 517 and 660, as setuptools has them)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    settings = dict(config_settings or {})
    if "editable_mode" in settings or "editable-mode" in settings:
        return _setuptools.build_editable(wheel_directory, settings, metadata_directory)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*[Cc]ompat editable")  # chosen on purpose: said above
            return _setuptools.build_editable(wheel_directory, {**settings, "editable_mode": "compat"}, metadata_directory)
    except Exception:  # noqa: BLE001  (a setuptools without compat mode: its default, rather than no install)
        return _setuptools.build_editable(wheel_directory, settings, metadata_directory)
