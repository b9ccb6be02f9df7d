"""Published measurements of real deployments, predicted with ``api.estimate``.

A CSV of the columns of ``tests/data/published_benchmarks.csv`` (``KNOWN_COLUMNS``: ``kind``,
``model_ref``, ``dtype_override``, ``tool_hw``, ``gpus``, ``unit_gpus``, ``engine``,
``parallelism``, the layout ``tp``, ``pp``, ``ep``, ``dp_attention``, ``replicas``,
``chunk_tokens``, ``chunked_prefill``, ``mtp_tokens``, ``dynamic_chunking``, ``concurrency``, ``load``,
``max_batch``, ``input_len``,``output_len``, ``batch``, ``batch_scope``, ``requests``, ``context``, ``measured``, ``unit``,
...). Each row is predicted from the shipped profiles and defaults, with only what the source
publishes:

- the model (a shipped profile, or a Hugging Face config beside the CSV) and its precision
  (``dtype_override``: ``weights=fp8;kv=fp8;attention=fp8``);
- the layout: the columns ``tp``, ``pp``, ``ep``, ``dp_attention``, ``replicas`` when any is given
  (a blank one is 1; they must use exactly ``gpus`` chips and ep must divide tp x dp_attention),
  which override the ``parallelism`` text; else from that text: ``TP8`` -> {tp: 8}; ``DEP8`` or
  ``EP32 + DP attention`` (or an engine that names large-scale EP) -> {ep: n, dp_attention: n};
  anything else -> the best layout the tool finds for the chips; when the published chips cannot
  hold the model (a deployment that offloads weights to host memory) and the layout is not
  given in columns, the same kind of layout on the fewest chips that can, compared per GPU;
- the engine: its ``choices.EngineName`` by keyword in ``engine`` (``engine_name_of``), whose
  profile (``timing/engines``) gives the defaults and kernel efficiencies; two-batch overlap
  (``TBO`` in ``engine``) hides ``TBO_OVERLAP`` of the communication, and ``EPLB`` (expert load
  balancing) sets the expert imbalance to 1; a run of
  ``trtllm-bench`` gets the limits that tool sets itself when the command gives none
  (``trtllm_bench_limits``: its batch limit per rank and its token budget per iteration, without
  chunked prefill); then the row's own ``chunk_tokens`` (the chunked-prefill chunk, i.e. the
  token budget of a pass: the engine's ``prefill_tokens_per_pass``), ``chunked_prefill``
  (true/false), ``mtp_tokens`` (accepted tokens per decode step) and ``dynamic_chunking`` (SGLang's
  smooth factor of ``--enable-dynamic-chunking``, the chunk size being ``chunk_tokens``) override those, and
  ``max_batch`` (the command's running-request limit per scheduling rank: vLLM ``max_num_seqs``,
  SGLang ``max_running_requests``, TensorRT-LLM ``max_batch_size``; x dp_attention x replicas
  for the instance) the tool's or the engine's limit;
- the requests in flight: ``concurrency`` (the instance's), which wins over ``batch`` when both
  are given; else ``batch`` (x gpus with ``batch_scope`` per_gpu), as in the old CSVs; blank
  both: the memory-limited batch, or one request for ``ttft``, ``tpot`` and ``user_tps``;
- by kind: ``prefill_tps`` input tokens/s of saturated prefill; ``decode_tps`` output tokens/s
  at the concurrency and context, or the memory-limited batch; ``e2e_tps`` offline output
  tokens/s at the memory-limited batch (or the engine's limit), over a run of the ``requests``
  the source queued (``timing.offline``; blank: the steady state); ``e2e_latency`` the latency of
  a batch of C requests started together (vLLM ``benchmark_latency --batch-size``, a static
  batch): the batch's whole prefill (C prompts through the passes, chunked as configured), then
  its O - 1 decode steps at batch C (``timing.estimate``); ``ttft`` one prompt's time to first
  token on the idle instance (its chunks pipelined through the pp stages), or with C > 1 the
  mean over C prompts started together; ``tpot`` seconds per output token (step / MTP tokens)
  at C; ``user_tps`` output tokens/s per user, 1 / TPOT as the engine reports it; these three
  as a static batch (``load`` static), or under a load (``load`` closed: C in flight, a new one
  as one ends, ``vllm bench serve --max-concurrency``, ``genai-perf``, SGLang ``bench_serving``;
  open: arrivals at a rate with C in flight by Little's law, MLPerf Server) from the steady state
  of chunked-prefill scheduling (``timing.serving``): TTFT at load, mean TPOT at load with the
  newcomers' prompt chunks mixed into the steps, and 1 / it; blank ``load``: closed for these
  kinds with ``requests`` given, else static (``load_of``). ``ttft``,
  ``tpot`` and ``e2e_latency`` are seconds: their ``unit`` must be ``s`` or ``ms`` (the
  prediction is given in that unit). A decode kind (``decode_tps``, ``tpot``, ``user_tps``) with
  a ``context`` is one decode step at that context (input = context, output 1). A figure per node
  or per GPU divides the instance's by gpus / unit_gpus. A missing input length (MLPerf) is taken
  as ``DEFAULT_INPUT``.
- a row at the model's full context is accepted: a request holds at most input + output - 1
  tokens of KV (its last token is returned, never attended to), so a decode step at context =
  the model's context, or a prefill of the whole context, is predicted as it ran
  (``timing.estimate``).

Every field is checked as a scenario's is (``read_fields``): a value out of its range
(``ranges``), a fraction where a count belongs, an unknown ``kind`` or ``batch_scope``, a flag
that is not true/false, a unit other than s or ms for a latency kind, a layout that does not use
the row's gpus, or a blank where the row's kind needs a value is a one-line error naming the file,
the line and the column; a blank takes its documented default only where one is documented above.
"""

from __future__ import annotations

import csv
import difflib
import io
import math
import re
from dataclasses import dataclass
from pathlib import Path

from . import api
from .accounting.params import count_params
from .choices import Dtype, EngineName
from .errors import PlanInputError, shorten, show
from .profiles.hardware import HardwareProfile
from .profiles.model import GqaAttention, MlaAttention, ModelProfile
from .ranges import (
    CHIPS_PER_INSTANCE,
    DECODE_BATCH,
    MAX_CSV_BYTES,
    MTP_TOKENS,
    OFFLINE_REQUESTS,
    PASS_TOKENS,
    PUBLISHED_MEASUREMENT,
    SMOOTH_FACTOR,
    TOKENS,
    Range,
)
from .timing.engines import engine_profile
from .units import dtype_bytes
from .yamlio import read_input_text

TBO_OVERLAP = 0.5  # SGLang two-batch overlap: see docs/validation.md ("Published measurements")
DEFAULT_INPUT = 512  # tokens, where a source does not publish the input length
MAX_CHIPS = 1024  # the most chips tried when the published ones cannot hold the model
TRTLLM_KV_FRACTION = 0.90  # trtllm-bench's default --kv_cache_free_gpu_mem_fraction
GIB = 2**30


def trtllm_tuned(checkpoint: ModelProfile) -> bool:
    """Whether trtllm-bench sizes its limits for this checkpoint's quantization (its ``TUNED_QUANTS``:
    NVFP4, FP8, FP8 block scales, none; NVIDIA/TensorRT-LLM@7eb710fa tensorrt_llm/bench/build/build.py
    ``get_benchmark_engine_settings``). A checkpoint whose routed experts are FP4 over BF16 weights is
    OpenAI's MXFP4 release (``profiles.hf_import``: quant_method mxfp4), which TensorRT-LLM loads as
    ``W4A8_MXFP4_MXFP8`` on Blackwell or ``W4A16_MXFP4`` on Hopper: not tuned, so the tool takes the
    LLM API defaults (``trtllm_bench_limits``)."""
    d = checkpoint.dtypes
    return not (d.experts == Dtype.fp4 and d.weights in (Dtype.bf16, Dtype.fp16))


def trtllm_bench_limits(
    model: ModelProfile,
    hw: HardwareProfile,
    tp_size: int,
    input_tokens: int,
    output_tokens: int,
    fraction: float = TRTLLM_KV_FRACTION,
    pp_size: int = 1,
    tuned: bool = True,
) -> tuple[int, int] | None:
    """(max_batch_size per rank, max_num_tokens per iteration) that ``trtllm-bench throughput``
    sets when its command gives neither (NVIDIA/TensorRT-LLM tensorrt_llm/bench/build/tuning.py,
    ``calc_engine_setting`` and ``finetune_setting``; bench/benchmark/utils/general.py
    ``get_settings``), computed as the tool computes it, from the Hugging Face view of the model.
    A quantization the tool does not tune (``tuned`` False, ``trtllm_tuned``) gets TorchLlmArgs'
    defaults, max_batch_size 2048 and max_num_tokens 8192 (the trtllm engine profile's
    ``max_batch`` and ``prefill_tokens_per_pass``), raised like the tuned ones to I + batch without
    chunked prefill (NVIDIA/TensorRT-LLM@c0b2ee6e tensorrt_llm/bench/benchmark/utils/general.py
    ``get_settings``: ``max(max_num_tokens, max_isl + max_batch_size)``). Tuned:

        KV per token  = 2 x layers x max(tp, kv heads) x head size x KV bytes   (MLA: its 128
                        "kv heads" of hidden / heads each, as the config reads to the tool)
        requests      = fraction x (tp x pp x device memory - parameters x weight bytes) / (KV per token x (I + O))
                        (weight bytes: the tool's BYTES_PER_ELEM of the checkpoint's quantization, NVFP4 0.5,
                        FP8 1, none 2; an NVFP4 checkpoint quantizes the experts, the tool counts every
                        parameter at 0.5)
        batch         = min(requests, 4096) / pp, rounded up: to 32 (at least 64) below 256, to 128
                        below 1,024, else to 256
        tokens        = min(batch x (1 + I / O), 32768), rounded up: to 256 (at least 2,048) below
                        4,096, to 512 below 8,192, else to 1,024; without chunked prefill (the
                        default) at least I + batch

    Device memory is what the chip reports to the tool (CUDA's total memory, in GiB), which the
    profile's ``memory_gib`` stands for: a "141 GB" H200 reports 143,771 MiB = 140.4 GiB and an
    "80 GB" H100 81,559 MiB = 79.6 GiB (within 0.5% of the datasheet figures read as GiB). None
    for a model without attention the tool sizes this way."""
    if not tuned:
        defaults = engine_profile(EngineName.trtllm).defaults
        assert defaults.max_batch is not None  # the shipped trtllm profile gives it (TorchLlmArgs' 2048)
        return defaults.max_batch, max(defaults.prefill_tokens_per_pass, input_tokens + defaults.max_batch)
    mixer = next((m for m in model.mixers.values() if isinstance(m, (GqaAttention, MlaAttention))), None)
    if mixer is None:
        return None
    if isinstance(mixer, MlaAttention):
        kv_heads, head = mixer.num_heads, model.hidden_size // mixer.num_heads
    else:
        kv_heads, head = mixer.num_kv_heads, mixer.qk_head_dim
    kv_gib_per_token = 2 * model.layers.count * max(tp_size, kv_heads) * head * dtype_bytes(model.dtypes.kv) / GIB
    params = model.total_params_b * 1e9 if model.total_params_b else count_params(model).total
    # the tool's bytes per parameter are its quantization's (BYTES_PER_ELEM): an NVFP4 checkpoint (FP4 experts) is
    # 0.5 for every parameter, whatever its other layers are stored in
    weight_dtype = Dtype.fp4 if model.dtypes.experts == Dtype.fp4 else model.dtypes.weights
    free_gib = (tp_size * pp_size * hw.memory_bytes - params * dtype_bytes(weight_dtype)) / GIB
    requests = fraction * free_gib / (kv_gib_per_token * (input_tokens + output_tokens))
    if requests < 1:
        return None
    raw_batch = min(requests, 4096) / pp_size
    raw_tokens = min(raw_batch * (1 + input_tokens / output_tokens), 32768)
    batch = max(64, _round_up(raw_batch, ((256, 32), (1024, 128), (math.inf, 256))))
    tokens = max(2048, _round_up(raw_tokens, ((4096, 256), (8192, 512), (math.inf, 1024))))
    return batch, max(tokens, input_tokens + batch)


def _round_up(value: float, tiers: tuple[tuple[float, int], ...]) -> int:
    """``value`` rounded up to the step of the first tier whose bound it is below."""
    step = next(step for bound, step in tiers if value < bound)
    return step * math.ceil(value / step)


@dataclass(frozen=True)
class Prediction:
    id: str
    kind: str
    model: str
    hardware: str
    gpus: int  # chips of the predicted instance
    layout: str
    predicted: float
    measured: float
    unit: str
    note: str = ""

    @property
    def ratio(self) -> float:
        return self.predicted / self.measured

    @property
    def error(self) -> float:
        """|predicted / measured - 1|."""
        return abs(self.ratio - 1.0)

    @property
    def speed_ratio(self) -> float:
        """Predicted over measured speed: the ratio of a rate, the inverse of a time's (above 1,
        the model is too fast, whatever the kind)."""
        return 1.0 / self.ratio if self.kind in LATENCY_KINDS else self.ratio


KINDS = ("prefill_tps", "decode_tps", "e2e_tps", "e2e_latency", "ttft", "tpot", "user_tps")
LATENCY_KINDS = ("ttft", "tpot", "e2e_latency")  # seconds: the unit says s or ms
SECONDS_PER_UNIT = {"s": 1.0, "ms": 1e-3}
DECODE_KINDS = ("decode_tps", "tpot", "user_tps")  # a context given: one decode step at that context
QUEUED_KINDS = DECODE_KINDS + ("e2e_tps",)  # rates at a concurrency: what memory cannot hold waits in a queue
LOADS = ("static", "closed", "open")  # how the source's requests arrive (``load_of``)
LOAD_KINDS = ("ttft", "tpot", "user_tps")  # the kinds a load changes; e2e_latency is a static batch
LATENCY_DEFAULT_CONCURRENCY = 1  # ttft, tpot, user_tps without a batch or concurrency: a lone request
BATCH_SCOPES = ("", "per_gpu", "total")  # blank: the batch is the instance's total
LAYOUT_COLUMNS = ("tp", "pp", "ep", "dp_attention", "replicas")  # timing.layout.FIELDS
# columns a CSV must have; every other column the prediction reads may be absent, which is a blank
# cell in every row (its documented default, or an error where the row's kind needs a value)
REQUIRED_COLUMNS = ("id", "kind", "model_ref", "tool_hw", "gpus", "measured", "unit")
OPTIONAL_COLUMNS = (
    "model",
    "dtype_override",
    "unit_gpus",
    "engine",
    "parallelism",
    "input_len",
    "output_len",
    "batch",
    "batch_scope",
    "requests",
    "context",
    *LAYOUT_COLUMNS,
    "chunk_tokens",
    "chunked_prefill",
    "mtp_tokens",
    "dynamic_chunking",
    "concurrency",
    "load",
    "max_batch",
)
DESCRIPTIVE_COLUMNS = ("hardware", "precision", "metric", "trust", "notes", "source")  # read by people, not the model
# any other name is refused, since a misspelt optional column would silently take its default
KNOWN_COLUMNS = REQUIRED_COLUMNS + OPTIONAL_COLUMNS + DESCRIPTIVE_COLUMNS


def read_rows(path: str) -> list[dict[str, str]]:
    """The CSV's rows (cells stripped, absent ``OPTIONAL_COLUMNS`` blank); a row with more cells than
    the header, a header without one of ``REQUIRED_COLUMNS``, a column named twice, or a name
    outside ``KNOWN_COLUMNS`` (a misspelt ``unit_gpus`` would otherwise default every row) is an
    error."""
    text = read_input_text(path, MAX_CSV_BYTES)
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = reader.fieldnames or ()
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        raise PlanInputError(
            f"no column {', '.join(missing)} (required: {', '.join(REQUIRED_COLUMNS)})", source=path, field="header"
        )
    names = list(header)  # no header: every required column is missing
    for k, name in enumerate(names):
        if name in names[:k]:
            raise PlanInputError(f"column '{name}' appears twice", source=path, field="header")
        if name not in KNOWN_COLUMNS:
            close = difflib.get_close_matches(name, KNOWN_COLUMNS, n=1)
            hint = f"did you mean '{close[0]}'? " if close else ""
            raise PlanInputError(
                f"unknown column '{shorten(name, 40)}': {hint}(columns: {', '.join(KNOWN_COLUMNS)})", source=path, field="header"
            )
    absent = dict.fromkeys((c for c in OPTIONAL_COLUMNS if c not in names), "")
    rows = []
    for row in reader:
        if None in row:
            raise PlanInputError(
                f"{len(row) - 1 + len(row[None])} cells, more than the header's {len(names)} columns",
                source=path,
                field=f"line {reader.line_num}",
            )
        rows.append({**absent, **{k: (v or "").strip() for k, v in row.items()}})
    return rows


@dataclass(frozen=True)
class RowFields:
    """One row's checked figures (tokens, chips, requests; ``measured`` in the row's unit)."""

    kind: str
    gpus: int
    unit_gpus: int  # blank: gpus (the figure is the instance's)
    input_tokens: int  # blank: DEFAULT_INPUT
    output_tokens: int  # rounded to whole tokens; blank: 1 where the kind does not use it
    batch: int | None
    per_gpu_batch: bool
    requests: int | None
    context_tokens: int | None
    measured: float
    layout: dict[str, int] | None = None  # the layout columns given (the others 1); None: none given
    chunk_tokens: int | None = None  # the engine's prefill_tokens_per_pass
    chunked_prefill: bool | None = None
    mtp_tokens: float | None = None  # the engine's mtp_tokens_per_step
    dynamic_chunking: float | None = None  # SGLang's dynamic chunking smooth factor (the engine's dynamic_chunking)
    concurrency: int | None = None  # requests in flight, the instance's: the column, else batch (x gpus per GPU)
    seconds_per_unit: float | None = None  # latency kinds: 1 (s) or 1e-3 (ms)
    load: str = "static"  # LOADS: a batch started together, or requests in flight under load
    max_batch: int | None = None  # the engine's running-request limit per scheduling rank (the column)


def _number(row: dict[str, str], column: str, bounds: Range, *, whole: bool = True, default=None, required: bool = False):
    """The column's value checked against ``bounds`` (``whole``: a count, no fraction); a blank
    cell is ``default``, or an error when ``required``."""
    text = row[column]
    if not text:
        if required:
            raise PlanInputError(f"needs a value ({bounds.describe()})", field=column)
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise PlanInputError(f"malformed value in column {column}: {show(text)} is not a finite number")
    if whole and not value.is_integer():
        raise PlanInputError(f"must be a whole number, got {show(text)}", field=column)
    bounds.check(value, column)
    return int(value) if whole else value


def _flag(row: dict[str, str], column: str) -> bool | None:
    """``true`` or ``false`` (any case); blank: None."""
    text = row[column].lower()
    if not text:
        return None
    if text not in ("true", "false"):
        raise PlanInputError(f"must be true or false, got {show(row[column])}", field=column)
    return text == "true"


def _layout_columns(row: dict[str, str], gpus: int) -> dict[str, int] | None:
    """The layout the ``tp``, ``pp``, ``ep``, ``dp_attention`` and ``replicas`` columns give (a blank
    one is 1), or None when all are blank: ep must divide tp x dp_attention, and the chips add up to gpus."""
    given = {c: _number(row, c, CHIPS_PER_INSTANCE) for c in LAYOUT_COLUMNS}
    if all(v is None for v in given.values()):
        return None
    layout = {c: 1 if v is None else v for c, v in given.items()}
    stage = layout["tp"] * layout["dp_attention"]
    if stage % layout["ep"]:
        raise PlanInputError(f"ep {layout['ep']} must divide tp x dp_attention ({stage})", field="ep")
    chips = stage * layout["pp"] * layout["replicas"]
    if chips != gpus:
        raise PlanInputError(
            f"the layout's tp x dp_attention x pp x replicas is {chips} chips, not the row's {gpus}", field="gpus"
        )
    return layout


PER_GPU_UNIT = re.compile(r"\bper (?:rank \()?GPU\b", re.IGNORECASE)  # "tokens/s per GPU", "per rank (GPU)"


def read_fields(row: dict[str, str]) -> RowFields:
    """Check every numeric and enumerated field of a row (``ranges``; see the module doc)."""
    kind = row["kind"]
    if kind not in KINDS:
        raise PlanInputError(f"unknown kind {show(kind)} (one of {', '.join(KINDS)})", field="kind")
    if row["batch_scope"] not in BATCH_SCOPES:
        raise PlanInputError(f"unknown batch_scope {show(row['batch_scope'])} (blank, per_gpu or total)", field="batch_scope")
    seconds_per_unit = None
    if kind in LATENCY_KINDS:
        seconds_per_unit = SECONDS_PER_UNIT.get(row["unit"])
        if seconds_per_unit is None:
            raise PlanInputError(
                f"{_article(kind)} {kind} row is in seconds: unit must be s or ms, got {show(row['unit'])}", field="unit"
            )
    gpus = _number(row, "gpus", CHIPS_PER_INSTANCE, required=True)
    e2e = kind in ("e2e_tps", "e2e_latency")
    output = _number(row, "output_len", TOKENS, whole=False, default=1, required=e2e)
    if output < 1:
        raise PlanInputError(f"must be at least 1 token, got {output:g}", field="output_len")
    concurrency = _number(row, "concurrency", DECODE_BATCH)
    per_gpu = row["batch_scope"] == "per_gpu"
    batch = _number(row, "batch", DECODE_BATCH, required=kind == "e2e_latency" and concurrency is None)
    if concurrency is None and batch is not None:
        concurrency = batch * gpus if per_gpu else batch
    if concurrency is None and kind in ("ttft", "tpot", "user_tps"):
        concurrency = LATENCY_DEFAULT_CONCURRENCY
    if kind not in LATENCY_KINDS and row["unit"] in SECONDS_PER_UNIT:
        raise PlanInputError(f"{_article(kind)} {kind} row is a rate, not a time: got unit {show(row['unit'])}", field="unit")
    unit_gpus = _number(row, "unit_gpus", CHIPS_PER_INSTANCE, default=gpus)
    if unit_gpus > gpus:
        raise PlanInputError(f"the figure is per at most the row's {gpus} GPUs, got {unit_gpus}", field="unit_gpus")
    if PER_GPU_UNIT.search(row["unit"]) and unit_gpus != 1:
        raise PlanInputError(
            f"the unit {show(row['unit'])} is per GPU, but the figure is compared per {unit_gpus} GPUs: give unit_gpus 1",
            field="unit_gpus",
        )
    return RowFields(
        kind=kind,
        gpus=gpus,
        load=load_of(row, kind),
        unit_gpus=unit_gpus,
        input_tokens=_number(row, "input_len", TOKENS, default=DEFAULT_INPUT),
        output_tokens=round(output),
        batch=batch,
        per_gpu_batch=per_gpu,
        requests=_number(row, "requests", OFFLINE_REQUESTS),
        context_tokens=_number(row, "context", TOKENS),
        measured=_number(row, "measured", PUBLISHED_MEASUREMENT, whole=False, required=True),
        layout=_layout_columns(row, gpus),
        chunk_tokens=_number(row, "chunk_tokens", PASS_TOKENS),
        chunked_prefill=_flag(row, "chunked_prefill"),
        mtp_tokens=_number(row, "mtp_tokens", MTP_TOKENS, whole=False),
        dynamic_chunking=_number(row, "dynamic_chunking", SMOOTH_FACTOR, whole=False),
        concurrency=concurrency,
        seconds_per_unit=seconds_per_unit,
        max_batch=_number(row, "max_batch", DECODE_BATCH),
    )


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


def load_of(row: dict[str, str], kind: str) -> str:
    """The row's ``load``: ``static`` (the requests start together: ``benchmark_latency``,
    ``bench_one_batch``), ``closed`` (C in flight, a new one as one ends: ``vllm bench serve
    --max-concurrency``, ``genai-perf --concurrency``) or ``open`` (arrivals at a rate, C in flight by
    Little's law: MLPerf Server). Blank: ``closed`` for a ttft, tpot or user_tps row with
    ``requests`` (a serving run of that many), else ``static``. Only those kinds take a load other
    than static (an ``e2e_latency`` is a static batch; the throughput kinds have their own model)."""
    text = row.get("load", "").lower()
    if not text:
        return "closed" if kind in LOAD_KINDS and row["requests"] else "static"
    if text not in LOADS:
        raise PlanInputError(f"unknown load {show(row['load'])} (one of {', '.join(LOADS)})", field="load")
    if text != "static" and kind not in LOAD_KINDS:
        raise PlanInputError(
            f"{_article(kind)} {kind} row is not timed under a load: load must be static or blank, got {show(text)}", field="load"
        )
    return text


def layout_kind(parallelism: str, engine: str) -> tuple[str, int | None]:
    """The kind of layout a row publishes: ('dep', n) for ``DEP8`` or ``EP32 + DP attention`` (or an
    engine run with large-scale EP, n unstated), ('tp', n) for ``TP8``, ('search', None) else."""
    text = parallelism.upper()
    match = re.match(r"^\s*DEP(\d+)", text) or re.match(r"^\s*EP(\d+)\s*\+\s*DP ATTENTION", text)
    if match:
        return "dep", int(match.group(1))
    match = re.match(r"^\s*TP(\d+)\s*$", text)
    if match:
        return "tp", int(match.group(1))
    if "LARGE-SCALE EP" in engine.upper():
        return "dep", None
    return "search", None


def layout_of(kind: str, chips: int) -> dict[str, int] | None:
    if kind == "dep":
        return {"ep": chips, "dp_attention": chips}
    if kind == "tp":
        return {"tp": chips}
    return None


def precision_of(override: str) -> dict[str, str] | None:
    """``weights=fp8;kv=fp8`` as {part: dtype} (the dtypes are checked by ``api.precision_of``)."""
    if not override:
        return None
    parts = [part.strip() for part in override.split(";") if part.strip()]
    if not all("=" in part for part in parts):
        raise PlanInputError(
            f"expected part=dtype separated by ';' (weights=fp8;kv=fp8), got {show(override)}", field="dtype_override"
        )
    return dict(part.split("=", 1) for part in parts)


ENGINE_KEYWORDS = (
    (EngineName.sglang, ("SGLANG",)),
    (EngineName.trtllm, ("TENSORRT-LLM", "TRT-LLM", "TRTLLM")),
    (EngineName.vllm, ("VLLM",)),
)


def engine_name_of(text: str) -> EngineName:
    """The ``choices.EngineName`` an ``engine`` cell names by keyword (case-insensitive): SGLang ->
    sglang, TensorRT-LLM / TRT-LLM / trtllm -> trtllm, vLLM -> vllm; anything else -> generic."""
    upper = text.upper()
    return next((name for name, words in ENGINE_KEYWORDS if any(w in upper for w in words)), EngineName.generic)


def model_of_row(row: dict[str, str], folder: Path) -> tuple[ModelProfile, dict[str, str] | None]:
    """The row's checkpoint (a shipped profile, or a Hugging Face config beside the CSV) and its
    precision overrides (applied by ``api.estimate`` with the engine, whose KV default for an FP8
    checkpoint must see what the row gives)."""
    ref = row["model_ref"]
    try:
        checkpoint = api.import_model(str(folder / ref))[1] if ref.endswith(".json") else api.model_of(ref)
    except PlanInputError as exc:  # the cell's error (a file's own keeps its file and field)
        raise (exc if exc.source is not None else PlanInputError(exc.reason, field="model_ref")) from None
    return checkpoint, precision_of(row["dtype_override"])


def _layout_kind_of(row: dict[str, str], f: RowFields) -> str:
    """'dep', 'tp' or 'search': of the layout columns when given, else of the ``parallelism`` text."""
    if f.layout is not None:
        return "dep" if f.layout["dp_attention"] > 1 else "tp"
    return layout_kind(row["parallelism"], row["engine"])[0]


def _parallel(row: dict[str, str], f: RowFields, gpus: int) -> dict[str, int] | None:
    """The layout of ``gpus`` chips: the layout columns, else the kind of the ``parallelism`` text."""
    return dict(f.layout) if f.layout is not None else layout_of(_layout_kind_of(row, f), gpus)


def _ranks(f: RowFields, layout_kind_: str, gpus: int) -> int:
    """The scheduling ranks of the row's instance, each with its own running-request limit: the
    attention groups of every replica (dp_attention x replicas of the layout columns; all the chips
    of a DEP layout read from the text; else one)."""
    if f.layout is not None:
        return f.layout["dp_attention"] * f.layout["replicas"]
    return gpus if layout_kind_ == "dep" else 1


def _estimate_args(
    row: dict[str, str], f: RowFields, checkpoint: ModelProfile, precision: dict[str, str] | None, engine_name: EngineName
) -> dict:
    """The keyword arguments of ``api.estimate`` (after the checkpoint and hardware) for the row, on
    the published chips: its lengths (a decode kind at a ``context``: input = context, output = 1),
    the precision, the concurrency, the layout, the engine (its profile, the engine text's settings,
    trtllm-bench's own limits, then the row's ``chunk_tokens``, ``chunked_prefill`` and
    ``mtp_tokens``), the requests of an offline run."""
    kind, gpus = f.kind, f.gpus
    layout_kind_ = _layout_kind_of(row, f)
    published = row["engine"].upper()
    engine: dict = {"name": engine_name}
    model = api.precision_of(checkpoint, precision, engine)  # the dtypes the engine serves it at
    if "TBO" in published:
        engine["overlap"] = TBO_OVERLAP
    if "EPLB" in published:
        engine["expert_imbalance"] = 1.0  # the source balanced experts for its own traffic
    input_tokens, output_tokens = f.input_tokens, f.output_tokens
    max_batch = None
    if "TRTLLM-BENCH" in published and layout_kind_ != "search":
        stage = gpus if f.layout is None else f.layout["tp"] * f.layout["dp_attention"]
        pp = 1 if f.layout is None else f.layout["pp"]
        limits = trtllm_bench_limits(
            model, api.hardware_of(row["tool_hw"]), stage, input_tokens, output_tokens, pp_size=pp, tuned=trtllm_tuned(checkpoint)
        )
        if limits is not None:
            per_rank, tokens = limits
            max_batch = per_rank * _ranks(f, layout_kind_, gpus)  # attention DP: a limit per rank
            engine.update(prefill_tokens_per_pass=tokens, chunked_prefill=False)
    if f.max_batch is not None:  # the command's own limit per scheduling rank wins over the tool's
        max_batch = f.max_batch * _ranks(f, layout_kind_, gpus)
    for column, setting in (
        ("chunk_tokens", "prefill_tokens_per_pass"),
        ("chunked_prefill", "chunked_prefill"),
        ("mtp_tokens", "mtp_tokens_per_step"),
        ("dynamic_chunking", "dynamic_chunking"),
    ):
        if getattr(f, column) is not None:
            engine[setting] = getattr(f, column)
    if kind in DECODE_KINDS and f.context_tokens is not None:
        input_tokens, output_tokens = f.context_tokens, 1  # decode at this context (I + O / 2 = context)
    return {
        "gpus": gpus,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "precision": precision,
        "concurrency": f.concurrency,
        "parallel": _parallel(row, f, gpus),
        "engine": engine or None,
        "max_batch": max_batch,
        "requests": f.requests if kind == "e2e_tps" else None,
    }


def predicted_figure(est, f: RowFields, gpus: int, unit_gpus: int) -> float:
    """The estimate's figure for the row's kind, in the row's unit (see the module doc)."""
    if f.load != "static":  # requests in flight under load (``timing.serving``)
        if f.kind == "user_tps":
            return 1.0 / est.tpot_at_load_s
        seconds = est.ttft_at_load_s if f.kind == "ttft" else est.tpot_at_load_s
        return seconds / f.seconds_per_unit
    if f.kind in LATENCY_KINDS:
        lone = f.concurrency is None or f.concurrency == 1
        seconds = {"e2e_latency": est.e2e_latency_s, "tpot": est.tpot_s, "ttft": est.ttft_s if lone else est.batch_ttft_s}[f.kind]
        return seconds / f.seconds_per_unit
    if f.kind == "user_tps":
        return est.per_user_tokens_per_s
    figure = {
        "prefill_tps": est.prefill_tokens_per_s,
        "decode_tps": est.decode_tokens_per_s,
        "e2e_tps": est.e2e_output_tokens_per_s,
    }[f.kind]
    return figure / gpus * unit_gpus


def predict_row(row: dict[str, str], folder: Path, engine_name: EngineName | None = None) -> Prediction:
    """One row's figure from the shipped profiles (see the module doc); ``engine_name`` times it with
    that engine's profile in place of the one its ``engine`` cell names."""
    f = read_fields(row)
    checkpoint, precision = model_of_row(row, folder)
    try:
        api.hardware_of(row["tool_hw"])
    except PlanInputError as exc:  # the cell's error, under its column (``hardware`` is the free-text one)
        raise (exc if exc.source is not None else PlanInputError(exc.reason, field="tool_hw")) from None
    args = _estimate_args(row, f, checkpoint, precision, engine_name or engine_name_of(row["engine"]))
    unit_gpus, note = f.unit_gpus, ""
    while True:  # the published chips, or (weights offloaded to host memory) the fewest that hold it
        try:
            est = api.estimate(checkpoint, row["tool_hw"], **args)
            break
        except PlanInputError as exc:
            if "do not fit" in str(exc) and args["concurrency"] is not None and (f.kind in QUEUED_KINDS or f.load != "static"):
                # more requests in flight than memory holds (MLPerf Server's, counted by Little's law,
                # include those waiting): the engine runs the memory-limited batch, the rest queue
                note = f"{args['concurrency']:,} in flight do not fit: the memory-limited batch runs, the rest wait"
                if f.load != "static":  # under a load the waiting requests count (TTFT: their wait for a place)
                    args["load_concurrency"] = args["concurrency"]
                args["concurrency"] = None
                continue
            if (
                "does not fit" not in str(exc)
                or args["gpus"] >= MAX_CHIPS
                or args["concurrency"] is not None
                or f.layout is not None
            ):
                raise
            args["gpus"] += 1
            args["parallel"] = _parallel(row, f, args["gpus"])
    gpus = args["gpus"]
    if gpus != f.gpus:
        note = f"{f.gpus} GPUs cannot hold it: the fewest that can ({gpus}), per GPU"
        unit_gpus = 1
    predicted = predicted_figure(est, f, gpus, unit_gpus)
    prefill_side = {"prefill_tps": est.prefill, "ttft": est.first_token}
    layout = prefill_side.get(f.kind, est.decode).layout.label
    return Prediction(
        row["id"],
        f.kind,
        row.get("model") or checkpoint.name,
        row["tool_hw"],
        gpus,
        layout,
        predicted,
        f.measured,
        row["unit"],
        note,
    )


def predict_all(path: str, engine: EngineName | None = None) -> list[Prediction]:
    """Every row's prediction; a row with a missing or malformed field is a PlanInputError naming it
    (every row's fields are checked before the first is predicted). ``engine``: every row timed with
    that engine's profile (e.g. ``generic`` beside the engines the rows name)."""
    folder = Path(path).resolve().parent
    rows = read_rows(path)
    if not rows:
        raise PlanInputError("no rows to predict", source=path)
    for n, row in enumerate(rows, start=2):  # every field of every row first
        _on_line(read_fields, row, n, path)
    first_line: dict[str, int] = {}
    for n, row in enumerate(rows, start=2):  # an id names one row (the summary's worst row is by id)
        if row.get("id", "") in first_line:
            taken = f"id {show(row['id'])} is line {first_line[row['id']]}'s too"
            raise PlanInputError(taken, source=path, field=f"line {n}: id")
        first_line[row.get("id", "")] = n
    out = [_on_line(lambda row: predict_row(row, folder, engine), row, n, path) for n, row in enumerate(rows, start=2)]
    return out


def _on_line(step, row: dict[str, str], n: int, path: str):
    """``step(row)``, its errors naming the file and the row's line."""
    try:
        return step(row)
    except KeyError as exc:
        raise PlanInputError(f"no column {exc}", source=path, field=f"line {n}") from None
    except (ValueError, OverflowError, TypeError) as exc:
        raise PlanInputError(f"malformed value ({str(exc)[:80]})", source=path, field=f"line {n}") from None
    except PlanInputError as exc:  # a value out of range, a model that does not fit: name the row
        if exc.source is not None:
            raise
        field = f"line {n}" + (f": {exc.field}" if exc.field else "")
        raise PlanInputError(exc.reason, source=path, field=field) from None


def summary(predictions: list[Prediction]) -> dict[str, float]:
    """Median and worst |predicted / measured - 1|, the worst ratio either way (x), and the geometric
    mean of the speed ratios (``Prediction.speed_ratio``: times inverted, so that above 1 is too fast
    for every kind)."""
    errors = sorted(p.error for p in predictions)
    n = len(errors)
    median = errors[n // 2] if n % 2 else (errors[n // 2 - 1] + errors[n // 2]) / 2
    worst_factor = max(max(p.ratio, 1 / p.ratio) for p in predictions)
    return {
        "median_error": median,
        "worst_error": errors[-1],
        "worst_factor": worst_factor,
        "rows": float(n),
        "geomean_speed_ratio": math.exp(sum(math.log(p.speed_ratio) for p in predictions) / n),
    }
