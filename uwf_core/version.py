"""The package version, in a module of its own so `uwf --version` imports nothing else."""

__version__ = "0.1.0"
