"""Moved: the decode model is part of the resolved Study (``prfaas_plan.study.model``).

Kept so that notebooks written as ``from prfaas_plan.planner.decode_model import decode_model``
still run; new code imports ``DecodeModel`` and ``decode_model`` from ``prfaas_plan.study.model``.
"""

from ..study.model import DecodeModel, decode_model

__all__ = ["DecodeModel", "decode_model"]
