"""The `uwf` command line: argparse in, uwf_core calls, JSON out."""
