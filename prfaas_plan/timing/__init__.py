"""Roofline timing of one instance: prefill time T_prefill(l) and decode step time."""
