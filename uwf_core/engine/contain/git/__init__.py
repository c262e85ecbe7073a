"""The workspace's git repositories as an agent run sees them: `.git` as a private copy and the
commits taken back (`private.py`), the other repositories kept read-only (`audit.py`), where
repositories are (`walk.py`), git's config read without a git process (`config.py`).

May import: the rest of contain/ and the step's terms."""
