"""Command lines: thin edges that parse, call and render."""
