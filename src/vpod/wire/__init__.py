"""Generated protocol-buffer modules for the V-IPU user API and the agent protocol."""
