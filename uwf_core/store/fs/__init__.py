"""The file backend: a root that is a directory (nodes in one SQLite file, state files rewritten
atomically, flock'ed locks). Implements store/base.py's interfaces; nothing else imports it directly.
"""
