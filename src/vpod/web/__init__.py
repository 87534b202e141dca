"""Web view of the pods."""
