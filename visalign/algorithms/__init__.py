"""Alignment objectives (registered by name)."""
