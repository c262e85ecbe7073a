"""A thread's files: snapshots of its workspace as CAS trees, their changes, and their restore.

Below `thread/` and `engine/`, above `store/`: it knows nodes and directories, not threads.
"""
