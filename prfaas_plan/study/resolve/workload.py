"""A workload, resolved: its length distributions (a prefix cache, a trace's joint lengths, a cluster
cache from a trace) and the decode context and rate of one decoding instance.
"""

from __future__ import annotations

import math
from pathlib import Path

from ...accounting.kv import KvModel
from ...choices import Basis, CacheRegime, DecodeSource, TraceFormat
from ...errors import PlanInputError, shorten
from ...profiles.model import ModelProfile
from ...profiles.scenario import ClusterCachesSpec, DecodeSpec, WorkloadSpec
from ...profiles.workload_spec import TraceSpec, mixture_weight_notes, relative_shares_note
from ...timing.calibrate import FAR_FIT_FACTOR
from ...timing.decode import decode_capacity
from ...workload.cluster_cache import ClusterCaches, HitDistribution
from ...workload.distributions import build_distribution, declared_max_tokens, with_prefix_cache
from ..basis import decode_source, measured_decode_rate
from ..model import Decode, Pool, Workload, held_to_tpot, measured_rate_scale


def _workload(spec: WorkloadSpec, model: ModelProfile, source: str | None, where: str = "workload") -> tuple[Workload, list[str]]:
    """The length distributions (and caches) of a workload spec, within the model's context, and
    the notes of mixture weights read as relative; errors and notes name its fields under ``where``
    (``pd_sites.<site>.workload`` for a site's own)."""
    given = [name for name in ("input", "output") if getattr(spec, name) is not None]
    notes = [n for name in given for n in mixture_weight_notes(getattr(spec, name), f"{where}.{name}")]
    cc = spec.cluster_caches
    caches = {f"{where}.prefix_cache": spec.prefix_cache}
    if cc is not None:
        caches.update({f"{where}.cluster_caches.pd": cc.pd, f"{where}.cluster_caches.prfaas": cc.prfaas})
    for path, cache in caches.items():  # hit probabilities are normalised too (``with_prefix_cache``, ``HitDistribution``)
        note = None if cache is None else relative_shares_note(path, "the probs", list(cache.probs))
        notes += [note] if note is not None else []
    workload = _distributions(spec, source, model, where)
    longest = _longest_tokens(workload.full_input_dist.lengths_tokens, spec.input)
    context = model.max_context_tokens
    if longest > context:
        raise PlanInputError(
            f"inputs reach {longest:,} tokens, beyond {model.name}'s context of {context:,}",
            source=source,
            field=f"{where}.input",
        )
    notes += _context_note(workload, spec, model, longest, where)
    return workload, notes


def _longest_tokens(support_tokens, spec) -> int:
    """The longest length of a distribution (tokens): its declared bound where the spec has one
    (``declared_max_tokens``), never below its support's top point."""
    declared = None if spec is None else declared_max_tokens(spec)
    top = float(support_tokens[-1])
    return int(math.ceil(max(top, declared) if declared is not None else top))


def _context_note(workload: Workload, spec: WorkloadSpec, model: ModelProfile, longest_in: int, where: str) -> list[str]:
    """A note when the longest input with the longest output exceeds the model's context: an engine
    that holds a request's prompt and its output within the context (vLLM refuses prompt +
    max_tokens > max_model_len) refuses those requests; the plan serves them as the workload gives
    them. (They hold I + O - 1 tokens of KV: the last token is never attended to.)"""
    context = model.max_context_tokens
    longest_out = _longest_tokens(workload.output_dist.lengths_tokens, spec.output)
    if longest_in + longest_out <= context:
        return []
    room = context - longest_out  # the longest input an engine admits beside the longest output
    dist = workload.full_input_dist
    share = float(dist.probs[dist.lengths_tokens > room].sum())
    return [
        f"{where}: inputs up to {longest_in:,} tokens with outputs up to {longest_out:,} exceed {model.name}'s context "
        f"of {context:,} tokens ({longest_in + longest_out - 1:,} tokens of KV): requests with more than {room:,} input "
        f"tokens ({share:.2%} of them) would be refused by an engine that holds prompt and output within the context "
        "(vLLM: prompt + max_tokens <= max_model_len), and are planned as given"
    ]


def case_workload(base: WorkloadSpec, case: WorkloadSpec) -> WorkloadSpec:
    """A robust case's workload: the parts the case gives, and the scenario's (``base``) for those
    it leaves out: its output distribution, and its caches (``prefix_cache`` / ``cluster_caches``,
    taken together: a case that gives one gives the caches). Caches built from a trace come with
    the trace's input lengths, so a case that gives its own input does not take them."""
    given = case.model_fields_set
    keep: dict = {}
    if "output" not in given:
        keep["output"] = base.output
    from_trace = base.cluster_caches is not None and base.cluster_caches.from_trace is not None
    if not given & {"prefix_cache", "cluster_caches"} and not (from_trace and "input" in given):
        keep.update(prefix_cache=base.prefix_cache, cluster_caches=base.cluster_caches)
    return case.model_copy(update=keep)


def _distributions(spec: WorkloadSpec, source: str | None, model: ModelProfile, where: str) -> Workload:
    cc = spec.cluster_caches
    if cc is not None and cc.from_trace is not None:
        return _trace_caches(spec, cc, source, model, where)
    assert spec.input is not None  # the schema requires it without from_trace
    joint = _trace_joint(spec, source, where)
    if joint is not None:
        return joint
    full_input = build_distribution(spec.input, source, f"{where}.input")
    uncached = full_input
    if spec.prefix_cache is not None:
        try:
            uncached = with_prefix_cache(full_input, spec.prefix_cache.hit_fractions, spec.prefix_cache.probs)
        except PlanInputError as exc:
            raise exc.with_field(f"{where}.prefix_cache").with_source(source) from None
    output = build_distribution(_output_spec(spec), source, f"{where}.output", role="output")
    if spec.cluster_caches is None:
        return Workload(uncached, full_input, output)
    cc = spec.cluster_caches
    pd_hits, prfaas_hits = (
        HitDistribution.none() if c is None else HitDistribution.of(c.hit_fractions, c.probs) for c in (cc.pd, cc.prfaas)
    )
    caches = ClusterCaches(full_input, pd_hits, prfaas_hits, cc.regime)
    try:
        workload = Workload(uncached, full_input, output, caches)
        return workload.with_cache_regime(CacheRegime.scarce if cc.regime == CacheRegime.auto else cc.regime)
    except PlanInputError as exc:
        raise exc.with_field(exc.field or f"{where}.cluster_caches").with_source(source) from None


def _output_spec(spec: WorkloadSpec):
    """``workload.output``; where it is not given and the input is a request trace, that trace's outputs."""
    given = "output" in spec.model_fields_set
    if given or not isinstance(spec.input, TraceSpec) or spec.input.format is None:
        return spec.output
    return spec.input


def _trace_joint(spec: WorkloadSpec, source: str | None, where: str) -> Workload | None:
    """The workload of a request trace used jointly (``workload.joint``): the input is a trace with
    a format, the output that same trace (or not given), and no prefix-cache distribution is given
    (a trace's own cached prefix, where it has one, sets the routing length). None otherwise."""
    inp = spec.input
    if not isinstance(inp, TraceSpec) or inp.format is None or spec.prefix_cache is not None or spec.cluster_caches is not None:
        return None
    if _output_spec(spec) is not inp and (
        spec.output.type,
        getattr(spec.output, "path", None),
        getattr(spec.output, "format", None),
    ) != (
        inp.type,
        inp.path,
        inp.format,
    ):
        return None
    from ...workload.joint import joint_lengths
    from ...workload.trace_cache import spec_trace, trace_path

    path = trace_path(inp.path, source)
    if not path.is_file():  # named from the scenario, as every other missing file is
        raise PlanInputError(f"no trace file {shorten(str(path), 80)}", source=source, field=f"{where}.input.path")
    trace = spec_trace(path, inp.format)  # its errors name the trace file and line
    j = joint_lengths(trace)
    return Workload(
        j.input_dist,
        j.full_input_dist,
        j.output_dist,
        output_by_input=j.output_by_input,
        decode_context_tokens=j.decode_context_tokens,
        trace=trace,
    )


def _trace_caches(spec: WorkloadSpec, cc: ClusterCachesSpec, source: str | None, model: ModelProfile, where: str) -> Workload:
    """The workload of ``cluster_caches.from_trace``: the trace's input lengths, each request's
    cached prefix in each cluster (``workload.trace_caches``); without ``workload.output``, the
    trace's own outputs and the decode context of its requests (``workload.joint``)."""
    from ...workload.joint import joint_lengths
    from ...workload.trace_cache import spec_trace, trace_path
    from ...workload.trace_caches import caches_from_trace

    given = "output" in spec.model_fields_set
    output = build_distribution(spec.output, source, f"{where}.output") if given else None
    try:
        assert cc.from_trace is not None  # the caller's condition
        trace = spec_trace(trace_path(cc.from_trace.path, source), TraceFormat.mooncake)
        caches = caches_from_trace(cc.from_trace, trace, KvModel.of(model), cc.regime)
        joint = None if given else joint_lengths(trace)  # the output jointly: its decode context
        output = output if joint is None else joint.output_dist
        assert output is not None
        context = None if joint is None else joint.decode_context_tokens
        workload = Workload(caches.full_input, caches.full_input, output, caches, decode_context_tokens=context, trace=trace)
        return workload.with_cache_regime(CacheRegime.scarce if cc.regime == CacheRegime.auto else cc.regime)
    except PlanInputError as exc:  # a trace's error names its line; the model's, the cache spec
        raise (exc if exc.field else exc.with_field(f"{where}.cluster_caches.from_trace")).with_source(source) from None


def _decode_context(dec: DecodeSpec, model: ModelProfile, workload: Workload, source: str | None) -> int:
    """Context per decoding request: given, or the mean full input + half the mean output
    (decode holds the whole context, cached prefix included), within the model's context."""
    given = dec.context_tokens
    if given is not None and given > model.max_context_tokens:
        raise PlanInputError(
            f"{given} tokens exceeds {model.name}'s context of {model.max_context_tokens}",
            source=source,
            field="decode.context_tokens",
        )
    joint = workload.decode_context_tokens  # a trace's output-weighted context (workload.joint)
    default = int(round(workload.full_input_dist.mean_tokens() + workload.output_mean_tokens / 2 if joint is None else joint))
    return given or min(default, model.max_context_tokens)


def _decode(
    dec: DecodeSpec,
    model: ModelProfile,
    pd: Pool,
    written: str,
    context: int,
    source: str | None,
    basis: Basis = Basis.as_given,
    base: Path | None = None,
    measured: bool = True,
) -> tuple[Decode, list[str]]:
    """What one instance of the decoding pool (``pd``: the PD pool, or the decode-only pool, whose
    hardware the scenario names ``written``) sustains, on ``basis`` (``study.basis``); notes.
    ``measured`` False: the scenario's tokens/s are of another model (a what-if's) and not used."""
    rate, notes = measured_decode_rate(
        dec.tokens_per_s_per_instance if measured else None,
        dec.tokens_per_s_hardware,
        written,
        pd.gpus_per_instance,
        dec.tokens_per_s_gpus,
        base,
    )
    if rate is not None:  # as given, or calibrating the roofline (basis model): held to the TPOT limit alike
        used = DecodeSource.scenario if basis == Basis.as_given else DecodeSource.calibrated
        return _given_rate(dec, model, pd, written, context, rate, notes, used, source)
    try:
        capacity = decode_capacity(model, pd.instance, context, tpot_ms=dec.tpot_ms, max_batch=dec.max_batch)
    except PlanInputError as exc:
        raise PlanInputError(exc.reason, source=source, field=f"decode.{exc.field}" if exc.field else "decode") from None
    used = decode_source(rate is not None, capacity.source, basis)
    return Decode(context, dec.tpot_ms, dec.max_batch, capacity.tokens_per_s if rate is None else rate, used, capacity), notes


def _given_rate(
    dec: DecodeSpec,
    model: ModelProfile,
    pd: Pool,
    written: str,
    context: int,
    rate: float,
    notes: list[str],
    used: DecodeSource,
    source: str | None,
) -> tuple[Decode, list[str]]:
    """The scenario's measured decode rate as the plan uses it (``used``: as given, or calibrating
    the roofline): held to ``decode.tpot_ms`` on the roofline's curve of time per output token
    through it (``study.model.held_to_tpot``, noted), and noted when it is more than
    ``FAR_FIT_FACTOR`` times faster than that curve (a rate of another batch, hardware or chip
    count: 800 tokens/s at one running request on 8 x H20 is 1.25 ms a token, against 8.86 ms)."""
    try:
        k, per_token, cap = measured_rate_scale(model, pd.instance, context, rate, dec.max_batch)
        batch, held = held_to_tpot(k, per_token, rate, dec.tpot_ms)
    except PlanInputError as exc:
        field = exc.field if (exc.field or "").startswith("decode") else f"decode.{exc.field}" if exc.field else "decode"
        raise PlanInputError(exc.reason, source=source, field=field) from None
    notes = list(notes)
    requests = f"{len(per_token):,} running request{'s' * (len(per_token) != 1)}"
    where, at = f"decode on {pd.gpus_per_instance} x {written}", f"{rate:,.0f} tokens/s at {requests}"
    token_ms = len(per_token) / rate * 1e3
    if k < 1 / FAR_FIT_FACTOR:  # slower is common (what the roofline leaves out); this much faster is not
        notes.append(
            f"{where}: the scenario's {at} is {token_ms:.3g} ms per output token, {1 / k:.3g}x faster than the "
            f"roofline's {float(per_token[-1]) * 1e3:.3g} ms: "
            "is it of this batch (max_batch), hardware and chips? (tokens_per_s_hardware, tokens_per_s_gpus)"
        )
    if batch < len(per_token):
        notes.append(
            f"{where}: the scenario's {at} ({token_ms:.3g} ms per output token) held to tpot_ms {dec.tpot_ms:g}: "
            f"{batch:,} running requests, {held:,.0f} tokens/s (the roofline's curve through the measured point)"
        )
    capacity = cap if used == DecodeSource.calibrated else None  # a calibrated pool shows its roofline layout
    return Decode(context, dec.tpot_ms, dec.max_batch, held, used, capacity, batch), notes
