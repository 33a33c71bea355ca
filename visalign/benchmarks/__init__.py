"""Benchmark commands that print figures (ratios measured side by side in one run)."""
