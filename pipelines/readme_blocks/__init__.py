"""Renderers of the README's result blocks, one module per part of the README (the registry of commands is
``pipelines/readme_results.py``)."""
