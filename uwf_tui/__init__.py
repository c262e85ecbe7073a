"""uwf_tui: the Textual workbench over uwf_core."""
