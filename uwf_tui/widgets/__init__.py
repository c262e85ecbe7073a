"""The three views (workflows, threads, CAS) and the graph drawing; they read through uwf_core.api."""
