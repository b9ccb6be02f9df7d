"""Per-layer accounting: KVCache bytes, parameter counts, and FLOP/byte work of a pass."""
