"""Built-in rewards (registered by name)."""
