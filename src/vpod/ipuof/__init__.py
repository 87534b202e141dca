"""Tools for IPUoF applications (not built yet)."""
