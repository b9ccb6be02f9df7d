"""Per-layer accounting: KVCache bytes, parameter counts, and FLOP/byte work of a pass.

One class per attention kind (``mixers/``) and per FFN kind (``ffns/``), registered by their
schema discriminator in ``kinds``; importing this package registers them all.
"""

from . import ffns, mixers  # noqa: F401  (registers every kind)
