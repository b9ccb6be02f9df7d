"""Schema of a length distribution in a scenario (``workload.input``, ``workload.output``):
a pydantic union discriminated by ``type``, so that every error names its field path
(``workload.input.components[1].sigma``). ``prfaas_plan.workload`` builds the distribution.

Token values may be written as counts (``131072``) or with K = 1,024 (``128K``). A mixture's
weights are relative (like a histogram's counts: ``workload.distributions.mixture`` divides each
by their sum); ``mixture_weight_notes`` says so where they do not sum to 1.
"""

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, Strict, ValidationInfo, field_validator

from ..choices import TraceFormat, WorkloadType
from ..errors import show
from ..ranges import BINS, LOGNORMAL_MU, LOGNORMAL_SIGMA, MIXTURE_COMPONENTS, TOKENS, Range
from ._base import Items, Name, PathText, StrictModel, Tokens, Weight, Within, _token_count, refuse

TokenEdge = Annotated[float, BeforeValidator(_token_count), Strict(), Field(ge=0, le=TOKENS.hi)]


class _Spec(StrictModel):
    weight: Weight | None = None  # only inside a mixture's components


class LognormalSpec(_Spec):
    """ln L ~ N(mu, sigma^2), truncated to [min_tokens, max_tokens], in ``bins`` log-spaced bins."""

    type: Literal[WorkloadType.lognormal]
    mu: Annotated[float, Within(LOGNORMAL_MU)]
    sigma: Annotated[float, Within(LOGNORMAL_SIGMA)]
    min_tokens: Tokens
    max_tokens: Tokens
    bins: Annotated[int, Within(BINS)] = 4096

    @field_validator("max_tokens")
    @classmethod
    def _window(cls, value: int, info: ValidationInfo) -> int:
        low = info.data.get("min_tokens")
        if low is not None and value <= low:
            raise ValueError(f"must be above min_tokens ({low}), got {value}")
        return value


class TraceSpec(_Spec):
    """Observed lengths, one per row of ``path`` (relative to the scenario file); or, with
    ``format``, a request trace in a public format (``workload.traces``): ``workload.input``
    takes its input lengths, ``workload.output`` its output lengths."""

    type: Literal[WorkloadType.trace]
    path: PathText
    column: Name | None = None
    format: TraceFormat | None = None

    _one_reader = refuse(
        lambda s: s.column is not None and s.format is not None,
        "give column (a CSV of lengths) or format (a request trace), not both",
    )


class HistogramSpec(_Spec):
    """Bins [edges_i, edges_i+1) with mass counts_i, spread uniformly over points_per_bin points."""

    type: Literal[WorkloadType.histogram]
    edges_tokens: Annotated[list[TokenEdge], Items(min_length=2)]
    counts: Annotated[list[Weight], Items(min_length=1)]
    points_per_bin: Annotated[int, Within(BINS)] = 16


CdfTokens = Annotated[float, BeforeValidator(_token_count), Strict(), Field(ge=1, le=TOKENS.hi)]
CdfFraction = Annotated[float, Within(Range(0, 1, "", "a cumulative fraction of requests"))]


def _pair(value: Any) -> Any:
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise ValueError(f"a point is [tokens, F], got {show(value)}")
    return tuple(value)


CdfPoint = Annotated[tuple[CdfTokens, CdfFraction], BeforeValidator(_pair)]
CdfPoints = Annotated[list[CdfPoint], Items(min_length=1)]
"""Points [tokens, F] of a CDF, F = P(L <= tokens); order and F(last) = 1 are checked by
``workload.cdf.from_cdf``, which names the offending point."""


class CdfSpec(_Spec):
    """A cumulative distribution: F(tokens) = P(L <= tokens) at ``points`` (inline, or a JSON
    file ``path`` of ``[[tokens, F], ...]`` or ``{"cdf": [...]}``, relative to the scenario),
    linear between points and from (0, 0) to the first: uniform within each interval."""

    type: Literal[WorkloadType.cdf]
    points: CdfPoints | None = None
    path: PathText | None = None
    points_per_bin: Annotated[int, Within(BINS)] = 16

    _one_source = refuse(
        lambda s: (s.points is None) == (s.path is None),
        lambda s: (
            "give points (inline [[tokens, F], ...]) or path (a JSON file of them); "
            f"{'both' if s.points is not None else 'neither'} given"
        ),
    )


class FixedSpec(_Spec):
    """Every request has ``tokens`` tokens."""

    type: Literal[WorkloadType.fixed]
    tokens: Tokens


class MixtureSpec(_Spec):
    """A weighted mixture; each component is a distribution with a ``weight``."""

    type: Literal[WorkloadType.mixture]
    components: Annotated[list["LengthSpec"], Field(min_length=1, max_length=int(MIXTURE_COMPONENTS.hi))]

    @field_validator("components")
    @classmethod
    def _weights(cls, components: list) -> list:
        for i, component in enumerate(components):
            if component.weight is None:
                raise ValueError(f"components[{i}] needs a weight")
        return components


LengthSpec = Annotated[LognormalSpec | TraceSpec | HistogramSpec | CdfSpec | FixedSpec | MixtureSpec, Field(discriminator="type")]


def relative_shares_note(path: str, what: str, weights: list[float]) -> str | None:
    """The note for ``weights`` read as relative shares when they do not sum to 1 (within 1e-9):
    each is divided by their sum, and the note gives the shares used; None when they sum to 1."""
    total = sum(weights)
    if total <= 0 or abs(total - 1.0) <= 1e-9:
        return None
    shares = ", ".join(f"{w / total:.3g}" for w in weights[:6]) + (", ..." if len(weights) > 6 else "")
    return f"{path}: {what} sum to {total:g}, not 1: each is divided by the sum (shares {shares})"


def mixture_weight_notes(spec, field: str, limit_nodes: int = 10_000) -> list[str]:
    """A note per mixture (``field`` and below) whose component weights do not sum to 1 (within
    1e-9): each weight is divided by their sum, and the note gives the shares used. Walks at most
    ``limit_nodes`` specs (a mixture of aliased mixtures may have millions)."""
    notes: list[str] = []
    stack, seen = [(spec, field)], 0
    while stack and seen < limit_nodes:
        node, path = stack.pop()
        seen += 1
        if not isinstance(node, MixtureSpec):
            continue
        weights = [c.weight for c in node.components if c.weight is not None]  # each has one (MixtureSpec._weights)
        note = relative_shares_note(path, "the mixture's weights", weights)
        if note is not None:
            notes.append(note)
        stack.extend((c, f"{path}.components[{i}]") for i, c in reversed(list(enumerate(node.components))))
    return notes
