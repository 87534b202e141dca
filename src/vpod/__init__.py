"""vpod: an open control plane for AI accelerator pods."""

__version__ = "0.1.0"
