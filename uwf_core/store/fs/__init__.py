"""The file backend: a root that is a directory (atomic rewrites, flock'ed locks, one file per node).
It implements the interfaces in store/base.py and nothing else imports its files directly.
"""
