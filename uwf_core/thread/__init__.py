"""Threads as data: node payloads, the context walk, the pure moderator, lifecycle operations
(start, fork, resume), and read models (timeline, markdown, usage, step details).
"""
