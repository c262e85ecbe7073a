"""The OpenAI-compatible chat client (httpx) used by uwf-builtin and the extract fallback,
and the Usage record of tokens every step detail carries.
"""
