"""The cloud's HTTP transport: routes (:mod:`.router`), JSON shapes (:mod:`.models`)."""

from .router import PREFIX, cloud_router

__all__ = ["PREFIX", "cloud_router"]
