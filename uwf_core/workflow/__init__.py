"""Workflows as data: the typed model, the YAML reader with line numbers, lint, registration,
graph text and the JSONata/Mustache wrappers the lint and the moderator share.
"""
