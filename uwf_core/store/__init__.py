"""The content-addressed store and the storage interface (base.py) that every backend implements;
the CAS logic (hashing, verification, schemas, gc, fsck) is backend-agnostic and lives here.
"""
