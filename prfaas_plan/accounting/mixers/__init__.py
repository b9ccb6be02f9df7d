"""Attention kinds, one module each; importing this package registers them all."""

from . import gqa, linear, mla, sparse, swa  # noqa: F401
