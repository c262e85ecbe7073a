"""uwf-builtin: a tool-calling loop over an OpenAI-compatible endpoint, with its workspace-confined
tools. Runs as its own process on the step protocol.
"""
