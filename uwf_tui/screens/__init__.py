"""Modal screens: confirm, text input, the editor (human answers, edited outputs), new thread, help."""
