"""The PostgreSQL backend: a root that is a database (`postgresql://...`), shared by `uwf worker`
processes on many hosts. Implements store/base.py's interfaces; nothing else imports it directly.
"""
