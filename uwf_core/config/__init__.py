"""config.yaml (providers, models, agents, overrides) and .env (secrets, mode 0600), parsed into typed
values; presets for known agent CLIs; the writer behind `uwf setup`. No engine imports.
"""
