"""The cloud's HTTP transport: routes (:mod:`.router`), JSON shapes (:mod:`.models`)."""

from .router import PREFIX, BindCloud, cloud_router

__all__ = ["PREFIX", "BindCloud", "cloud_router"]
