"""FFN kinds, one module each; importing this package registers them all."""

from . import dense, moe  # noqa: F401
