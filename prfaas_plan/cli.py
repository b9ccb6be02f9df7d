"""Command-line interface: a thin typer layer over ``prfaas_plan.api`` that parses options,
calls the API, and renders the result; nothing else.

Heavy modules (numpy, scipy, pydantic, the profiles) are imported inside the commands so
that ``prfaas-plan --help`` starts fast. Every choice is an enum of ``prfaas_plan.choices``.
Bad input, including an option click cannot parse, exits with code 2 and one line on
stderr; each warning is one line too. Every output file of a command (``-o``, ``--plot``) is
checked before the work starts and written only when all of them are ready, atomically.
"""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING

import typer

from . import __version__
from .choices import (
    ArrivalProcess,
    Basis,
    ComputeDtype,
    CurveSource,
    DeploymentName,
    Dtype,
    EngineName,
    OutputFormat,
    PlanMode,
    RoutingPolicy,
    SweepOver,
)
from .errors import PlanInputError, show
from .ranges import REQUESTS

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    Figures = tuple[tuple[Figure, str, str], ...]  # (figure, path, option) of each figure to write

SIM_LIMIT = f"{int(REQUESTS.hi):,}"  # simulated requests per command, over all its runs

app = typer.Typer(
    name="prfaas-plan",
    help="Capacity planner for Prefill-as-a-Service: KV throughput, prefill and decode timing, the "
    "PrfaaS/PD plan (threshold and instance counts), latency, SLOs and simulation. "
    "Start with `prfaas-plan plan`. Units: K = 1024 tokens, Gbps = 1e9 bit/s, MiB/GiB binary.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,  # plain help: typer's rich help imports a markdown renderer (0.2 s) on every --help
)
models_app = typer.Typer(help="List or show the shipped model profiles.", no_args_is_help=True)
hardware_app = typer.Typer(help="List or show the shipped hardware profiles.", no_args_is_help=True)
model_app = typer.Typer(help="Create model profiles (import from a Hugging Face config.json).", no_args_is_help=True)
app.add_typer(models_app, name="models")
app.add_typer(hardware_app, name="hardware")
app.add_typer(model_app, name="model")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"prfaas-plan {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
) -> None:
    """Capacity planner for Prefill-as-a-Service."""
    global _command
    _command = ctx.invoked_subcommand


# ---------------------------------------------------------------------------------------
# The library names what was wrong by its own field (``errors.PlanInputError``): an API
# parameter (``rate_rps``) or a spec field's path in a file. This is the one place that
# says which option of each command sets which parameter, where the names differ; ``main``
# renames the field of an error about a parameter's value, and the backticked parameters its
# reason names (``give `rate_rps` or `load`, not both``), by the running command's table.

_SERVING_OPTIONS = {  # api.instance_of, precision_of, engine_spec_of (profiles.serving)
    "hardware": "--hardware",
    "gpus": "--gpus",
    "parallel": "--parallel",
    "engine": "--engine",
    "overlap": "--overlap",
    "expert_imbalance": "--expert-imbalance",
    "mtp_tokens_per_step": "--mtp",
    "prefill_tokens_per_pass": "--pass-tokens",
    "chunked_prefill": "--chunked-prefill",
    "dynamic_chunking": "--dynamic-chunking",
    "kv": "--kv-dtype",
    "weights": "--weights-dtype",
    "experts": "--experts-dtype",
    "attention": "--attention-dtype",
}
_SIM_OPTIONS = {  # simulate.SimConfig
    "seed": "--seed",
    "arrivals": "--arrivals",
    "cv": "--cv",
    "burst_factor": "--burst-factor",
    "on_s": "--on-s",
    "off_s": "--off-s",
    "policy": "--policy",
    "bandwidth_trace": "--bandwidth-trace",
    "drop_at_s": "--drop-at",
    "drop_for_s": "--drop-for",
    "drop_to_fraction": "--drop-to",
    "rebalance": "--rebalance",
    "conversion_s": "--conversion",
    "warmup_fraction": "--warmup",
}


def _pick(names: dict[str, str], *fields: str) -> dict[str, str]:
    return {field: names[field] for field in fields}


_RANGE_OPTIONS = {"start": "--from", "stop": "--to", "start/stop": "--from/--to", "points": "--points", "mode": "--mode"}
OPTION_NAMES: dict[str, dict[str, str]] = {  # command -> {library field: option}
    "kv": {
        **_pick(
            _SERVING_OPTIONS,
            *("hardware", "gpus", "parallel", "engine", "prefill_tokens_per_pass"),
            *("kv", "weights", "experts", "attention"),
        ),
        "lengths_tokens": "--lengths",
        "source": "--source",
    },
    "decode": {
        **_pick(
            _SERVING_OPTIONS,
            *("hardware", "gpus", "parallel", "engine", "overlap", "expert_imbalance", "mtp_tokens_per_step"),
            *("kv", "weights", "experts", "attention"),
        ),
        "context_tokens": "--context",
        "context": "--context",
        "tpot_ms": "--tpot-ms",
        "max_batch": "--max-batch",
        "source": "--source",
    },
    "estimate": {  # timing.estimate names the lengths input, output, context (their sum)
        **_SERVING_OPTIONS,
        "input": "--input",
        "output": "--output-tokens",
        "input + output": "--input + --output-tokens",
        "context": "--input",
        "concurrency": "--concurrency",
        "tpot_ms": "--tpot-ms",
        "max_batch": "--max-batch",
        "requests": "--requests",
    },
    "calibrate": {"model": "--model", "hardware": "--hardware", "gpus": "--gpus", "points": "--points", "fit": "--fit"},
    "plan": {"mode": "--mode"},
    "plot": {"mode": "--mode"},
    "sweep": {**_RANGE_OPTIONS, "over": "--over", "upto": "--to", "gbps": "--from/--to"},
    "route-table": {**_RANGE_OPTIONS, "usable_gbps": "--from/--to"},
    "compare": {
        "prfaas": "--prfaas",
        "pd": "--pd",
        "pd_decode": "--decode",
        "model": "--model",
        "link_gbps": "--link",
        "jobs": "--jobs",
        "ray_address": "--ray",
        "basis": "--basis",
        "mode": "--mode",
    },
    "schedule": {"requests": "--simulate"},
    "sites": {"requests": "--simulate", "load": "--load"},
    "simulate": {
        **_SIM_OPTIONS,
        "rate_rps": "--rate",
        "load": "--load",
        "requests": "--requests",
        "deployment": "--deployment",
        "mode": "--mode",
        "replay": "--replay",
        "speedup": "--speedup",
        "from_s": "--from",
        "to_s": "--to",
    },
    "validate-model": {
        **_pick(_SIM_OPTIONS, "seed", "arrivals", "cv", "burst_factor", "on_s", "off_s", "warmup_fraction"),
        "requests": "--requests",
        "mode": "--mode",
    },
}
_command: str | None = None  # the command running (``_root``), for OPTION_NAMES


FORM_COMMANDS = {"sites": "`prfaas-plan sites FILE` (or robust, compare)", "scenario": "`prfaas-plan plan`"}


def _cli_error(exc: PlanInputError) -> PlanInputError:
    """``exc`` in the running command's words (``OPTION_NAMES``; a file of the other form names the
    command that plans it)."""
    if exc.form in FORM_COMMANDS:
        simulated = exc.form == "sites" and _command == "simulate"
        hint = f"{exc.reason}: " + (
            "simulate it with `prfaas-plan sites FILE --simulate N`" if simulated else f"plan it with {FORM_COMMANDS[exc.form]}"
        )
        exc = PlanInputError(hint, source=exc.source, field=exc.field, argument=exc.argument)
    return exc.renamed(OPTION_NAMES.get(_command or "", {}))


FORMAT_OPT = typer.Option(OutputFormat.table, "--format", "-f", help="Output format.")
OUTPUT_OPT = typer.Option(
    None, "--output", "-o", help="Write to this file (atomically) instead of stdout; never one of the files the command reads."
)
GPUS_OPT = typer.Option(8, "--gpus", "-g", help="Chips per instance (1 to 65,536).")
SOURCE_OPT = typer.Option(
    CurveSource.auto, "--source", help="auto: the model's measured points for this hardware and GPU count if any, else roofline."
)
MODE_OPT = typer.Option(PlanMode.exact, "--mode", help="exact: class means of T(L); paper: T at class mean lengths.")
SCENARIO_ARG = typer.Argument("paper-case-study", help="Scenario: shipped name or YAML file.")
TERMINAL_WIDTH_FALLBACK = 400  # piped or written to a file: wide enough that no column is cut


def _render(report, fmt: OutputFormat, preface: str = "") -> str:
    """The report as text for a file or a pipe (tables at full width)."""
    from .report import render

    return (preface if fmt == OutputFormat.table else "") + render(report, fmt.value, width=TERMINAL_WIDTH_FALLBACK)


def _emit(report, fmt: OutputFormat, output: str | None, figures: Figures = (), preface: str = "") -> None:
    """Print the report, or write it to ``output``; write ``figures`` ((figure, path, option))
    with it. All files are committed together, only after every one was written."""
    from .report import render
    from .yamlio import OutputFiles

    with OutputFiles() as out:
        if output:
            out.write_text(output, _render(report, fmt, preface), "--output")
        if figures:
            from .plot import save

            for fig, path, option in figures:
                save(fig, out, path, option)
        out.commit()
    for path in ([output] if output else []) + [path for _, path, _ in figures]:
        typer.echo(f"wrote {path}", err=True)
    if output:
        return
    if fmt == OutputFormat.table:
        if not sys.stdout.isatty():  # a pipe or a file: plain text, without importing rich
            sys.stdout.write(_render(report, fmt, preface))
            return
        from rich.console import Console

        from .report import color_disabled

        console = Console(color_system=None if color_disabled() else "auto")
        if preface:
            console.print(preface, highlight=False, markup=False, end="")
        sys.stdout.write(render(report, "table", width=console.width, color=True))
    else:
        sys.stdout.write(render(report, fmt.value))


def _one_line(text: str) -> str:
    """A user's text for a comment line of a written file: no line breaks, shortened."""
    from .errors import shorten

    return shorten(repr(str(text))[1:-1], 200)


def _check_outputs(
    *paths: tuple[str | None, str], inputs: tuple[tuple[str | None, str], ...] = (), figures: tuple[str, ...] = ()
) -> None:
    """Refuse unusable output paths before any work is done: each ((path, option); None: not
    given) must name a file (``yamlio.OutputFiles.check``: not empty, not a folder, in a folder
    that exists), none may be the same file as one of ``inputs`` ((path or name, what it is):
    the files the command reads, compared by device and inode) and no two may be the same;
    those of ``figures`` (options) must end in a figure format. Files the command reads that
    are not known yet (a trace a scenario names) are refused again when the outputs are
    written, before anything is."""
    from pathlib import Path

    from .yamlio import OutputFiles

    seen: dict[str, str] = {}
    for path, option in paths:
        if path is None:
            continue
        OutputFiles.check(path, option, inputs)
        if option in figures:
            from .plot import check_format

            check_format(path, option)
        key = str(Path(path).resolve())
        if key in seen:
            raise PlanInputError(f"the same file as {seen[key]}: give each output its own file", field=option)
        seen[key] = option


PARALLEL_OPT = typer.Option(
    None,
    "--parallel",
    "-P",
    help="Layout, e.g. tp=8, ep=32,dp_attention=32 or tp=4,pp=4 "
    "(tp, dp_attention, ep, pp, replicas). Default: the best layout that fits, per job.",
)
KV_DTYPE_OPT = typer.Option(
    None,
    "--kv-dtype",
    help="KV cache dtype (fp8 halves S_kv). Default: the engine's choice for a re-quantised checkpoint, else the model's.",
)
WEIGHTS_DTYPE_OPT = typer.Option(None, "--weights-dtype", help="Weights dtype. Default: the model's.")
EXPERTS_DTYPE_OPT = typer.Option(None, "--experts-dtype", help="Routed experts' dtype. Default: the model's.")
ATTENTION_DTYPE_OPT = typer.Option(
    None,
    "--attention-dtype",
    help="Attention compute dtype (bf16, fp8 or fp4; a chip "
    "without the dtype computes at its next wider peak). Default: the model's.",
)
OVERLAP_OPT = typer.Option(
    None,
    "--overlap",
    help="Share of communication hidden behind compute, 0 to 1 (two-batch overlap). Default: the engine's (generic 0).",
)
IMBALANCE_OPT = typer.Option(
    None, "--expert-imbalance", help="Busiest expert rank over the mean, 1 to 64. Default: the engine's (generic 1.18)."
)
MTP_OPT = typer.Option(None, "--mtp", help="Tokens accepted per decode step (multi-token prediction), 1 to 16.")
PASS_OPT = typer.Option(
    None,
    "--pass-tokens",
    help="Token budget per pass and attention group (prompt chunks; in an "
    "offline run the decode tokens too). Default: the engine's (8192 in every shipped profile).",
)
ENGINE_OPT = typer.Option(
    None,
    "--engine",
    help="Serving engine whose defaults and sourced kernel multipliers time the "
    "instance (timing/engines/<name>.yaml). Default: generic (the chip's own fractions).",
)
CHUNKED_OPT = typer.Option(
    None,
    "--chunked-prefill/--no-chunked-prefill",
    help="Split prompts to fill a pass "
    "or admit whole prompts only. Default: the engine's (trtllm: whole prompts; the others: split).",
)
DYNAMIC_CHUNKING_OPT = typer.Option(
    None,
    "--dynamic-chunking",
    help="SGLang's dynamic chunking of a prompt (--enable-dynamic-chunking) with this smooth factor, 0 to 1 "
    "(SGLANG_DYNAMIC_CHUNKING_SMOOTH_FACTOR; SGLang's default 0.75): later chunks shrink from --pass-tokens as "
    "the prefix grows. Default: fixed chunks.",
)


def _serving(
    parallel,
    kv_dtype=None,
    weights_dtype=None,
    experts_dtype=None,
    attention_dtype=None,
    overlap=None,
    imbalance=None,
    mtp=None,
    pass_tokens=None,
    chunked=None,
    engine_name=None,
    dynamic_chunking=None,
) -> dict:
    """The layout, precision and engine options as ``api`` keyword arguments (None: defaults);
    the layout parsed here (``api.layout_of``), the rest as the mappings of the spec."""
    from . import api

    precision = {
        k: v
        for k, v in (("kv", kv_dtype), ("weights", weights_dtype), ("experts", experts_dtype), ("attention", attention_dtype))
        if v is not None
    }
    engine = {
        k: v
        for k, v in (
            ("name", engine_name),
            ("overlap", overlap),
            ("expert_imbalance", imbalance),
            ("mtp_tokens_per_step", mtp),
            ("prefill_tokens_per_pass", pass_tokens),
            ("chunked_prefill", chunked),
            ("dynamic_chunking", dynamic_chunking),
        )
        if v is not None
    }
    layout = None if parallel is None else api.layout_of(parallel, field="--parallel")
    return {"parallel": layout, "precision": precision or None, "engine": engine or None}


@app.command()
def kv(
    model: str = typer.Argument(..., help="Model: shipped name or YAML file."),
    hardware: str = typer.Option("h200", "--hardware", "-H", help="Hardware: shipped name or YAML file."),
    gpus: int = GPUS_OPT,
    lengths: str | None = typer.Option(
        None,
        "--lengths",
        "-l",
        help="Comma-separated input lengths (32K, 32k or 32768). Default: 1K, 8K, 32K, 128K, "
        "those within the model's context, then the context itself where it is shorter.",
    ),
    source: CurveSource = SOURCE_OPT,
    parallel: str | None = PARALLEL_OPT,
    kv_dtype: Dtype | None = KV_DTYPE_OPT,
    weights_dtype: Dtype | None = WEIGHTS_DTYPE_OPT,
    experts_dtype: Dtype | None = EXPERTS_DTYPE_OPT,
    attention_dtype: ComputeDtype | None = ATTENTION_DTYPE_OPT,
    pass_tokens: int | None = PASS_OPT,
    engine: EngineName | None = ENGINE_OPT,
    fmt: OutputFormat = FORMAT_OPT,
    output: str | None = OUTPUT_OPT,
) -> None:
    """S_kv, T_prefill and the KV throughput Phi_kv = S_kv / T_prefill per input length."""
    from . import api
    from .units import parse_token_list
    from .views.timing import kv_view

    _check_outputs((output, "--output"), inputs=((model, "the model"), (hardware, "the hardware")))
    serving = _serving(
        parallel, kv_dtype, weights_dtype, experts_dtype, attention_dtype, pass_tokens=pass_tokens, engine_name=engine
    )
    result = api.kv_report(
        model, hardware, gpus, None if lengths is None else parse_token_list(lengths, field="--lengths"), source, **serving
    )
    _emit(kv_view(result), fmt, output)


@app.command()
def decode(
    model: str = typer.Argument(..., help="Model: shipped name or YAML file."),
    hardware: str = typer.Option("h20", "--hardware", "-H", help="Hardware: shipped name or YAML file."),
    gpus: int = GPUS_OPT,
    context: str = typer.Option("32K", "--context", "-c", help="Context length per request (input + output so far)."),
    tpot_ms: float | None = typer.Option(None, "--tpot-ms", help="Time-per-output-token limit in ms."),
    max_batch: int | None = typer.Option(None, "--max-batch", help="Engine cap on running requests (1 to 100,000)."),
    source: CurveSource = SOURCE_OPT,
    parallel: str | None = PARALLEL_OPT,
    kv_dtype: Dtype | None = KV_DTYPE_OPT,
    weights_dtype: Dtype | None = WEIGHTS_DTYPE_OPT,
    experts_dtype: Dtype | None = EXPERTS_DTYPE_OPT,
    attention_dtype: ComputeDtype | None = ATTENTION_DTYPE_OPT,
    mtp: float | None = MTP_OPT,
    imbalance: float | None = IMBALANCE_OPT,
    overlap: float | None = OVERLAP_OPT,
    engine: EngineName | None = ENGINE_OPT,
    fmt: OutputFormat = FORMAT_OPT,
    output: str | None = OUTPUT_OPT,
) -> None:
    """Decode batch size (memory- or TPOT-limited), step time and tokens/s of one instance."""
    from . import api
    from .units import parse_tokens
    from .views.timing import decode_view

    _check_outputs((output, "--output"), inputs=((model, "the model"), (hardware, "the hardware")))
    ctx = parse_tokens(context, field="--context")
    serving = _serving(
        parallel,
        kv_dtype,
        weights_dtype,
        experts_dtype,
        attention_dtype,
        overlap=overlap,
        imbalance=imbalance,
        mtp=mtp,
        engine_name=engine,
    )
    result = api.decode(model, hardware, gpus, ctx, tpot_ms=tpot_ms, max_batch=max_batch, source=source, **serving)
    _emit(decode_view(result, tpot_ms), fmt, output)


@app.command()
def estimate(
    model: str = typer.Argument(..., help="Model: shipped name or YAML file."),
    hardware: str = typer.Option("h200", "--hardware", "-H", help="Hardware: shipped name or YAML file."),
    gpus: int | None = typer.Option(
        None, "--gpus", "-g", help="Chips per instance (default: the fewest that hold the model, or the layout's)."
    ),
    input_len: str = typer.Option("1K", "--input", "-i", help="Input tokens per request."),
    output_len: str = typer.Option("1K", "--output-tokens", "-O", help="Output tokens per request."),
    concurrency: int | None = typer.Option(
        None, "--concurrency", "-C", help="Running requests in decode (default: as many as memory holds)."
    ),
    parallel: str | None = PARALLEL_OPT,
    kv_dtype: Dtype | None = KV_DTYPE_OPT,
    weights_dtype: Dtype | None = WEIGHTS_DTYPE_OPT,
    experts_dtype: Dtype | None = EXPERTS_DTYPE_OPT,
    attention_dtype: ComputeDtype | None = ATTENTION_DTYPE_OPT,
    overlap: float | None = OVERLAP_OPT,
    imbalance: float | None = IMBALANCE_OPT,
    mtp: float | None = MTP_OPT,
    pass_tokens: int | None = PASS_OPT,
    chunked: bool | None = CHUNKED_OPT,
    dynamic_chunking: float | None = DYNAMIC_CHUNKING_OPT,
    engine: EngineName | None = ENGINE_OPT,
    tpot_ms: float | None = typer.Option(None, "--tpot-ms", help="Time-per-output-token limit in ms."),
    max_batch: int | None = typer.Option(
        None,
        "--max-batch",
        help="The engine's limit on running requests per "
        "instance, 1 to 100,000 (default: the engine's limit, else as many as memory holds).",
    ),
    requests: int | None = typer.Option(
        None,
        "--requests",
        "-N",
        help="End-to-end figure of an offline run of this "
        "many requests queued at once, 1 to 1,000,000, ramp-up and drain included "
        "(default: the steady state).",
    ),
    fmt: OutputFormat = FORMAT_OPT,
    output: str | None = OUTPUT_OPT,
) -> None:
    """What a benchmark would publish for one instance: TTFT, TPOT, prefill, decode and end-to-end
    tokens/s (per instance and per GPU), and the time budget of a prefill pass and a decode step."""
    from . import api
    from .units import parse_tokens
    from .views.estimate import estimate_view

    if output is not None and re.fullmatch(r"\d+(\.\d+)?[kKmM]?", output.strip()):
        raise PlanInputError(
            f"names the file to write, got {show(output)}; for output tokens per request use --output-tokens/-O {show(output)}",
            field="--output",
        )
    _check_outputs((output, "--output"), inputs=((model, "the model"), (hardware, "the hardware")))
    serving = _serving(
        parallel,
        kv_dtype,
        weights_dtype,
        experts_dtype,
        attention_dtype,
        overlap,
        imbalance,
        mtp,
        pass_tokens,
        chunked,
        engine,
        dynamic_chunking,
    )
    result = api.estimate(
        model,
        hardware,
        gpus,
        input_tokens=parse_tokens(input_len, field="--input"),
        output_tokens=parse_tokens(output_len, field="--output-tokens"),
        concurrency=concurrency,
        tpot_ms=tpot_ms,
        max_batch=max_batch,
        requests=requests,
        **serving,
    )
    _emit(estimate_view(result), fmt, output)


@models_app.command("list")
def models_list(fmt: OutputFormat = FORMAT_OPT, output: str | None = OUTPUT_OPT) -> None:
    """All shipped model profiles with their KV footprint and parameter counts."""
    from . import api
    from .views.profiles import models_list_view

    _check_outputs((output, "--output"))
    _emit(models_list_view(api.models()), fmt, output)


@models_app.command("show")
def models_show(
    name: str = typer.Argument(..., help="Shipped name or YAML file."),
    fmt: OutputFormat = FORMAT_OPT,
    output: str | None = OUTPUT_OPT,
) -> None:
    """One model profile: derived figures, assumptions and sources (JSON adds the full profile)."""
    from . import api
    from .views.profiles import model_show_view

    _check_outputs((output, "--output"), inputs=((name, "the model"),))
    _emit(model_show_view(api.model_of(name)), fmt, output)


@hardware_app.command("list")
def hardware_list(fmt: OutputFormat = FORMAT_OPT, output: str | None = OUTPUT_OPT) -> None:
    """All shipped hardware profiles (per chip) with their efficiency factors."""
    from . import api
    from .views.profiles import hardware_list_view

    _check_outputs((output, "--output"))
    _emit(hardware_list_view(api.hardware_profiles()), fmt, output)


@hardware_app.command("show")
def hardware_show(
    name: str = typer.Argument(..., help="Shipped name or YAML file."),
    fmt: OutputFormat = FORMAT_OPT,
    output: str | None = OUTPUT_OPT,
) -> None:
    """One hardware profile: figures, assumptions, sources (JSON adds the full profile)."""
    from . import api
    from .views.profiles import hardware_show_view

    _check_outputs((output, "--output"), inputs=((name, "the hardware"),))
    _emit(hardware_show_view(api.hardware_of(name)), fmt, output)


@app.command()
def validate(path: str = typer.Argument(..., help="A model, hardware or scenario YAML file.")) -> None:
    """Check a model, hardware or scenario file; exit 0 if valid, 2 with the first problem if not."""
    from . import api

    kind, profile = api.validate_file(path)
    typer.echo(f"{path}: valid {kind} profile '{profile.name}'")


@model_app.command("import")
def model_import(
    config: str = typer.Argument(..., help="A Hugging Face config.json."),
    name: str | None = typer.Option(None, "--name", "-n", help="Profile name (default: from the config)."),
    output: str | None = typer.Option(None, "--output", "-o", help="Write the profile YAML here (default: stdout)."),
) -> None:
    """Convert a Hugging Face config.json into a model profile YAML."""
    from . import api
    from .yamlio import dump_yaml, write_text_atomic

    _check_outputs((output, "--output"), inputs=((config, "the config"),))
    data, profile = api.import_model(config, name=name)
    text = f"# Imported by prfaas-plan from {_one_line(config)}\n" + dump_yaml(data)
    if output:
        write_text_atomic(output, text, "--output")
        typer.echo(f"wrote {output} (model '{profile.name}')", err=True)
    else:
        sys.stdout.write(text)


@app.command()
def calibrate(
    model: str | None = typer.Option(
        None, "--model", "-m", help="Model the points were measured on (for points without a 'model' column)."
    ),
    hardware: str = typer.Option(..., "--hardware", "-H", help="Hardware profile to start from."),
    gpus: int = typer.Option(8, "--gpus", "-g", help="Chips per instance, for points without a 'gpus' column (1 to 65,536)."),
    points: str = typer.Option(
        ...,
        "--points",
        "-p",
        help="CSV with columns length,prefill_s[,kv_bytes][,model][,gpus]; several models or sizes are fitted jointly.",
    ),
    fit: str | None = typer.Option(
        None,
        "--fit",
        help="Parameters to fit, comma-separated: compute, matmul, "
        "attention, memory, prefill_overhead_s, or one attention kind's factor "
        "(attention_gqa, attention_swa, attention_mla, attention_sparse, "
        "attention_linear) (default matmul,attention,prefill_overhead_s); at most "
        "one per point.",
    ),
    output: str | None = typer.Option(None, "--output", "-o", help="Write the calibrated hardware profile YAML here."),
    name: str | None = typer.Option(None, "--name", help="Name of the calibrated profile (default: HW-calibrated)."),
    fmt: OutputFormat = FORMAT_OPT,
) -> None:
    """Fit the hardware's efficiency factors and prefill overhead to measured prefill latencies."""
    from . import api
    from .views.timing import calibration_view
    from .yamlio import write_text_atomic

    _check_outputs((output, "--output"), inputs=((model, "the model"), (hardware, "the hardware"), (points, "the points CSV")))
    params = [part.strip() for part in fit.split(",") if part.strip()] if fit is not None else None
    result = api.calibrate(model, hardware, gpus, points, name=name, fit=params)
    if output:
        command = " ".join(
            part
            for part in (
                f"--model {_one_line(model)}" if model else "",
                f"--hardware {_one_line(hardware)}",
                f"--gpus {gpus}",
                f"--points {_one_line(points)}",
                f"--fit {_one_line(fit)}" if fit else "",
            )
            if part
        )
        header = f"# Calibrated by `prfaas-plan calibrate {command}`\n"
        write_text_atomic(output, api.profile_yaml(result.hardware, header), "--output")
        typer.echo(f"wrote {output} (hardware '{result.hardware.name}')", err=True)
    _emit(calibration_view(result), fmt, None)


@app.command()
def plan(
    scenario: str = SCENARIO_ARG,
    mode: PlanMode = MODE_OPT,
    fmt: OutputFormat = FORMAT_OPT,
    output: str | None = OUTPUT_OPT,
) -> None:
    """Optimise threshold t and N_prfaas / N_p / N_d; compare with homogeneous and naive baselines."""
    from . import api
    from .views.plan import plan_view

    _check_outputs((output, "--output"), inputs=((scenario, "the scenario"),))
    _emit(plan_view(api.plan(scenario, mode)), fmt, output)


def _list(value: str | None, option: str, number: bool = False) -> list | None:
    """A comma-separated option as a list (numbers for ``number``); None when not given."""
    if value is None:
        return None
    items = [item.strip() for item in value.split(",")]
    if not all(items):
        raise PlanInputError(f"an empty item in {show(value)}; separate items with single commas", field=option)
    if not number:
        return items
    try:
        return [float(item) for item in items]
    except ValueError:
        raise PlanInputError(f"expected numbers separated by commas, got {show(value)}", field=option) from None


def _items(value: str | None, what: str) -> tuple[tuple[str, str], ...]:
    """Each item of a comma-separated option as (item, ``what``): the inputs it may name."""
    return tuple((item.strip(), what) for item in (value or "").split(",") if item.strip())


@app.command()
def compare(
    scenario: str = SCENARIO_ARG,
    prfaas: str | None = typer.Option(
        None, "--prfaas", help="PrfaaS hardware to compare, comma-separated (e.g. h200,b200,rubin-cpx)."
    ),
    pd: str | None = typer.Option(None, "--pd", help="PD (or PD-P) hardware to compare, comma-separated."),
    decode: str | None = typer.Option(
        None, "--decode", help="Decode-only pool hardware, comma-separated; 'none' plans without one."
    ),
    model: str | None = typer.Option(None, "--model", help="Models to compare, comma-separated."),
    link: str | None = typer.Option(None, "--link", help="Link bandwidths to compare, decimal Gbps, comma-separated."),
    jobs: int | None = typer.Option(
        None, "--jobs", "-j", help="Parallel processes, 1 to 64 (default: the CPU count, at most one per option)."
    ),
    ray: str | None = typer.Option(
        None,
        "--ray",
        help="Plan the options on a Ray cluster instead of local processes: 'local' (start one here for the run), "
        "'auto' (the one `ray start` runs here), HOST:PORT or ray://HOST:PORT. Needs the [ray] extra; not with --jobs.",
    ),
    plot_file: str | None = typer.Option(None, "--plot", help="Draw the options and their Pareto front (.png, .svg or .pdf)."),
    basis: Basis | None = typer.Option(
        None,
        "--basis",
        help="What every option is sized on: model (each pool on "
        "the instance model, calibrated where its hardware has measured points; the "
        "default, or the compare: section's) or as-given (the scenario's measured "
        "curves, as plan uses them).",
    ),
    mode: PlanMode = MODE_OPT,
    fmt: OutputFormat = FORMAT_OPT,
    output: str | None = OUTPUT_OPT,
) -> None:
    """Plan every combination of hardware, model and link options under one scenario; rank them, mark the
    Pareto front over $/hour, req/s and TTFT P90, and say why each infeasible option failed."""
    import os

    from . import api
    from .views.compare import compare_view

    inputs = (
        (scenario, "the scenario"),
        *_items(prfaas, "a --prfaas profile"),
        *_items(pd, "a --pd profile"),
        *_items(decode, "a --decode profile"),
        *_items(model, "a --model profile"),
    )
    _check_outputs((output, "--output"), (plot_file, "--plot"), inputs=inputs, figures=("--plot",))
    lists = dict(
        prfaas=_list(prfaas, "--prfaas"),
        pd=_list(pd, "--pd"),
        pd_decode=_list(decode, "--decode"),
        model=_list(model, "--model"),
        link_gbps=_list(link, "--link", number=True),
    )
    if ray is not None and jobs is not None:
        raise PlanInputError("give --jobs or --ray, not both (on Ray the cluster's CPUs set the parallelism)", field="--ray")
    workers = jobs if jobs is not None else 1 if ray is not None else max(1, min(os.cpu_count() or 1, 64))
    with _progress("planning options", minimum=2) as progress:
        result = api.compare(scenario, mode=mode, jobs=workers, progress=progress, basis=basis, ray_address=ray, **lists)
    figures: Figures = ()
    if plot_file:
        from .plot import compare_figure

        figures = ((compare_figure(result), plot_file, "--plot"),)
    _emit(compare_view(result), fmt, output, figures)


@app.command()
def sweep(
    scenario: str = SCENARIO_ARG,
    over: SweepOver = typer.Option(..., "--over", help="What to vary (see docs/planning.md)."),
    mode: PlanMode = MODE_OPT,
    start: float | None = typer.Option(
        None,
        "--from",
        help="bandwidth: first usable Gbps (default 1, or a hundredth of the last where that is below 1); "
        "instances: first N_prfaas (default 0). Refused by the other sweeps.",
    ),
    stop: float | None = typer.Option(
        None,
        "--to",
        help="bandwidth: last Gbps (default: the link's); instances: last N_prfaas (default twice the PrfaaS "
        "range's top). Refused by the other sweeps.",
    ),
    points: int | None = typer.Option(
        None,
        "--points",
        help="Number of points, 2 to 10,000 (bandwidth: default "
        "200; threshold and instances: every one; rate: 40, at most 1,000). Refused by np.",
    ),
    fmt: OutputFormat = typer.Option(OutputFormat.csv, "--format", "-f", help="Output format."),
    output: str | None = OUTPUT_OPT,
) -> None:
    """Curves around the plan as CSV: over threshold, N_p, link bandwidth, PrfaaS instances or arrival rate."""
    from . import api
    from .views.plan import sweep_view

    _check_outputs((output, "--output"), inputs=((scenario, "the scenario"),))
    with _progress(f"sweep over {over.value}") as progress:
        rows = api.sweep(scenario, over, mode, start, stop, points, progress)
    _emit(sweep_view(rows, over.value, api.inputs(scenario)), fmt, output)


@app.command()
def robust(
    scenario: str = SCENARIO_ARG,
    fmt: OutputFormat = FORMAT_OPT,
    output: str | None = OUTPUT_OPT,
) -> None:
    """One set of instance counts for the scenario's robust: cases (workload mixes, rates, bandwidths); a
    multi-site file's cases too."""
    from . import api
    from .views.plan import robust_view
    from .views.sites import robust_sites_view

    _check_outputs((output, "--output"), inputs=((scenario, "the scenario"),))
    if api.is_sites_file(scenario):
        _emit(robust_sites_view(*api.robust_sites(scenario)), fmt, output)
        return
    result = api.robust(scenario)
    _emit(robust_view(result, api.inputs(scenario)), fmt, output)


@app.command()
def schedule(
    scenario: str = SCENARIO_ARG,
    simulate_requests: int | None = typer.Option(
        None,
        "--simulate",
        help="Also simulate each window with this many "
        "requests (schedule and static plan) and report whether queues stay "
        f"bounded; at most {SIM_LIMIT} over all windows and both plans.",
    ),
    fmt: OutputFormat = FORMAT_OPT,
    output: str | None = OUTPUT_OPT,
) -> None:
    """Counts to buy for the scenario's day: windows, and the PD-P / PD-D split and threshold per window."""
    from . import api
    from .views.plan import schedule_view

    _check_outputs((output, "--output"), inputs=((scenario, "the scenario"),))
    if simulate_requests is not None:
        day, runs = api.simulate_day(scenario, simulate_requests)
        report = schedule_view(day, api.inputs(scenario), [(a.stable, b.stable) for _, a, b in runs])
    else:
        day, _ = api.schedule(scenario)
        report = schedule_view(day, api.inputs(scenario))
    _emit(report, fmt, output)


@app.command()
def sites(
    path: str = typer.Argument(..., help="A multi-site scenario YAML (pd_sites, prfaas_sites, links)."),
    simulate_requests: int | None = typer.Option(
        None,
        "--simulate",
        help="Also simulate every window with this many "
        "requests per site, at --load x the rate the plan serves; at most "
        f"{SIM_LIMIT} over all windows and sites.",
    ),
    load: float = typer.Option(0.8, "--load", help="With --simulate: the rate as a fraction of the planned one."),
    fmt: OutputFormat = FORMAT_OPT,
    output: str | None = OUTPUT_OPT,
) -> None:
    """Plan several PD sites sharing PrfaaS sites over their own links: counts per site, thresholds, traffic per link."""
    from . import api
    from .views.sites import sites_view

    _check_outputs((output, "--output"), inputs=((path, "the sites scenario"),))
    if simulate_requests is not None:
        result, si, sims = api.simulate_sites(path, simulate_requests, load)
        _emit(sites_view(result, si, sims, load), fmt, output)
        return
    result, si = api.sites(path)
    _emit(sites_view(result, si), fmt, output)


@app.command("route-table")
def route_table(
    scenario: str = SCENARIO_ARG,
    mode: PlanMode = MODE_OPT,
    start: float | None = typer.Option(None, "--from", help="First usable Gbps (default: 0, then 1% to 2x the link's)."),
    stop: float | None = typer.Option(None, "--to", help="Last usable Gbps (default: twice the link's usable)."),
    points: int | None = typer.Option(None, "--points", help="Bandwidths, 2 to 10,000 (default 33; 50 with --from/--to)."),
    fmt: OutputFormat = typer.Option(OutputFormat.table, "--format", "-f", help="Output format (csv or json for a router)."),
    output: str | None = OUTPUT_OPT,
) -> None:
    """The threshold a bandwidth-aware router should use at each available bandwidth, for the plan's counts."""
    from . import api
    from .views.plan import route_table_view

    _check_outputs((output, "--output"), inputs=((scenario, "the scenario"),))
    _emit(route_table_view(api.route_table(scenario, mode, start, stop, points)), fmt, output)


@app.command()
def plot(
    scenario: str = SCENARIO_ARG,
    output: str = typer.Option(..., "--output", "-o", help="Figure file: .png, .svg or .pdf."),
    mode: PlanMode = MODE_OPT,
) -> None:
    """Draw the paper's figure 5 for a scenario, with the optimum marked."""
    from . import api
    from .plot import figure5, save
    from .yamlio import OutputFiles

    _check_outputs((output, "--output"), inputs=((scenario, "the scenario"),), figures=("--output",))
    figure = figure5(api.figure5_data(scenario, mode))
    with OutputFiles() as out:
        save(figure, out, output, "--output")
        out.commit()
    typer.echo(f"wrote {output}", err=True)


def _sim_options(
    seed: int,
    arrivals: ArrivalProcess,
    cv: float,
    burst_factor: float,
    policy: RoutingPolicy,
    bandwidth_trace: str | None,
    drop_at: float | None,
    drop_for: float,
    drop_to: float,
    on_s: float,
    off_s: float,
    warmup: float,
) -> dict:
    from . import api

    options = dict(
        seed=seed,
        arrivals=arrivals,
        cv=cv,
        burst_factor=burst_factor,
        on_s=on_s,
        off_s=off_s,
        warmup_fraction=warmup,
        policy=policy,
        drop_at_s=drop_at,
        drop_for_s=drop_for,
        drop_to_fraction=drop_to,
    )
    if bandwidth_trace:
        options["bandwidth_trace"] = api.read_bandwidth_trace(bandwidth_trace)
    return options


SEED_OPT = typer.Option(0, "--seed", help="Random seed (runs are reproducible).")
ARRIVALS_OPT = typer.Option(ArrivalProcess.poisson, "--arrivals", help="poisson, gamma (--cv) or onoff (--burst-factor).")
CV_OPT = typer.Option(1.0, "--cv", help="Coefficient of variation of gamma inter-arrival times (0.01 to 100).")
BURST_OPT = typer.Option(2.0, "--burst-factor", help="onoff: rate during bursts / mean rate.")
ON_S_OPT = typer.Option(30.0, "--on-s", help="onoff: mean length of a burst (s, exponential).")
OFF_S_OPT = typer.Option(30.0, "--off-s", help="onoff: mean time between bursts (s, exponential).")
WARMUP_OPT = typer.Option(0.1, "--warmup", help="Share of the first completed requests left out of the statistics, 0 to below 1.")
POLICY_OPT = typer.Option(RoutingPolicy.static, "--policy", help="static threshold, or adaptive (raises t under link pressure).")
TRACE_OPT = typer.Option(None, "--bandwidth-trace", help="CSV time_s,gbps: the link's usable bandwidth over time.")
DROP_AT_OPT = typer.Option(None, "--drop-at", help="Time (s) when the link drops.")
DROP_FOR_OPT = typer.Option(0.0, "--drop-for", help="Length of the drop (s).")
DROP_TO_OPT = typer.Option(0.5, "--drop-to", help="Link bandwidth during the drop, as a fraction.")


@app.command()
def simulate(
    scenario: str = SCENARIO_ARG,
    rate: float | None = typer.Option(None, "--rate", help="Arrival rate, requests/s."),
    load: float | None = typer.Option(None, "--load", help="Arrival rate as a fraction of the closed-form Λ_max (default 0.8)."),
    requests: int | None = typer.Option(
        None, "--requests", "-n", help=f"Requests to simulate, 1 to {SIM_LIMIT} (default 20,000; required at or above Λ_max)."
    ),
    deployment: DeploymentName = typer.Option(
        DeploymentName.prfaas_pd, "--deployment", help="Which deployment of the plan to simulate."
    ),
    seed: int = SEED_OPT,
    arrivals: ArrivalProcess = ARRIVALS_OPT,
    cv: float = CV_OPT,
    burst_factor: float = BURST_OPT,
    on_s: float = ON_S_OPT,
    off_s: float = OFF_S_OPT,
    warmup: float = WARMUP_OPT,
    policy: RoutingPolicy = POLICY_OPT,
    bandwidth_trace: str | None = TRACE_OPT,
    drop_at: float | None = DROP_AT_OPT,
    drop_for: float = DROP_FOR_OPT,
    drop_to: float = DROP_TO_OPT,
    mode: PlanMode = MODE_OPT,
    fmt: OutputFormat = typer.Option(
        OutputFormat.table, "--format", "-f", help="table or json: the summary; csv: the time series."
    ),
    output: str | None = OUTPUT_OPT,
    plot_file: str | None = typer.Option(None, "--plot", help="Also draw the time series (.png, .svg, .pdf)."),
    rebalance: bool = typer.Option(
        False,
        "--rebalance",
        help="PD instances switch between PD-P and PD-D when "
        "one stage queues and the other has room (the paper's long-term scheduling).",
    ),
    conversion: float = typer.Option(300.0, "--conversion", help="Seconds a switching instance is idle (>= 0)."),
    replay: bool = typer.Option(
        False, "--replay", help="Replay the scenario's request trace: its arrivals and each request's lengths, in order."
    ),
    speedup: float = typer.Option(1.0, "--speedup", help="Replay the trace this many times as fast (1e-3 to 1e3)."),
    from_s: float | None = typer.Option(None, "--from", help="Replay the requests from this second of the trace on."),
    to_s: float | None = typer.Option(None, "--to", help="Replay the requests before this second of the trace."),
) -> None:
    """Discrete-event simulation of the planned deployment: TTFT/TPOT per path, queues, egress."""
    from . import api
    from .views.simulation import simulation_view, timeseries_report

    _check_outputs(
        (output, "--output"),
        (plot_file, "--plot"),
        figures=("--plot",),
        inputs=((scenario, "the scenario"), (bandwidth_trace, "the bandwidth trace")),
    )
    options = _sim_options(
        seed, arrivals, cv, burst_factor, policy, bandwidth_trace, drop_at, drop_for, drop_to, on_s, off_s, warmup
    )
    options.update(rebalance=rebalance, conversion_s=conversion)
    with _progress("simulating requests") as progress:
        run = api.simulate(
            scenario,
            rate_rps=rate,
            load=load,
            requests=requests,
            deployment=deployment,
            mode=mode,
            progress=progress,
            replay=replay,
            speedup=speedup,
            from_s=from_s,
            to_s=to_s,
            **options,
        )
    report = timeseries_report(run) if fmt == OutputFormat.csv else simulation_view(run)
    figures: Figures = ()
    if plot_file:
        from .plot import timeseries_figure

        figures = ((timeseries_figure(run.result), plot_file, "--plot"),)
    _emit(report, fmt, output, figures)


@app.command("validate-model")
def validate_model(
    scenario: str = SCENARIO_ARG,
    requests: int = typer.Option(
        20_000, "--requests", "-n", help=f"Requests simulated per load (at most {SIM_LIMIT} over the 4 loads)."
    ),
    seed: int = SEED_OPT,
    arrivals: ArrivalProcess = ARRIVALS_OPT,
    cv: float = CV_OPT,
    burst_factor: float = BURST_OPT,
    on_s: float = ON_S_OPT,
    off_s: float = OFF_S_OPT,
    warmup: float = WARMUP_OPT,
    mode: PlanMode = MODE_OPT,
    fmt: OutputFormat = FORMAT_OPT,
    output: str | None = OUTPUT_OPT,
) -> None:
    """Closed form beside simulation at 50%, 80%, 95% and 110% of the closed-form Λ_max."""
    from . import api
    from .views.simulation import validation_view

    _check_outputs((output, "--output"), inputs=((scenario, "the scenario"),))
    options = _sim_options(seed, arrivals, cv, burst_factor, RoutingPolicy.static, None, None, 0.0, 0.5, on_s, off_s, warmup)
    with _progress("simulating loads", minimum=1) as progress:
        runs = api.validate_model(scenario, requests=requests, mode=mode, progress=progress, **options)
    _emit(validation_view(runs), fmt, output)


class _progress:
    """A rich progress bar on stderr for long runs, when stderr is a terminal."""

    def __init__(self, label: str, minimum: int = 1000):
        self.label = label
        self.minimum = minimum  # totals below this show no bar

    def __enter__(self):
        from rich.console import Console

        from .report import color_disabled

        self._plain = color_disabled()  # NO_COLOR: a plain line redrawn with '\r', no ANSI codes
        self._console = Console(stderr=True, color_system=None if self._plain else "auto")
        self._bar = None
        self._shown = 0
        return self.update

    def update(self, done: int, total: int) -> None:
        if not self._console.is_terminal or total < self.minimum:
            return
        if self._plain:
            line = f"\r{self.label}: {done:,} / {total:,}"
            sys.stderr.write(line.ljust(self._shown))
            sys.stderr.flush()
            self._shown = len(line)
            return
        if self._bar is None:
            from rich.progress import Progress

            self._bar = Progress(console=self._console, transient=True)
            self._bar.start()
            self._task = self._bar.add_task(self.label, total=total)
        self._bar.update(self._task, completed=done)

    def __exit__(self, *exc):
        if self._bar is not None:
            self._bar.stop()
        if self._shown:
            sys.stderr.write("\r" + " " * self._shown + "\r")
        return False


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Warnings as one line each on stderr (PlanWarning: 'prfaas-plan: warning: ...')."""
    from .errors import PlanWarning, shorten

    prefix = "prfaas-plan: warning: " if issubclass(category, PlanWarning) else f"prfaas-plan: {category.__name__}: "
    sys.stderr.write(prefix + shorten(str(message), 280) + "\n")


def _click_exceptions():
    """The exception classes of the click that typer runs on (typer >= 0.2x vendors its own)."""
    try:
        from typer._click import exceptions
    except ImportError:  # pragma: no cover - older typer uses click itself
        from click import exceptions
    return exceptions


def _app_for(first: list[str]):
    """The app with only the top-level command ``first`` names (all of them for anything else):
    typer builds every registered command's click options on each run (about 9 ms of CPU for
    these twenty), while a run uses one. The root's options and the command's own help and errors
    are the same either way."""
    import copy

    from typer.main import get_command_name

    named = [
        c
        for c in app.registered_commands
        if first and (c.name or get_command_name(getattr(c.callback, "__name__", ""))) == first[0]
    ]
    if not named:
        return app
    only = copy.copy(app)
    only.registered_commands, only.registered_groups = named, []
    return only


def main() -> None:
    """Console-script entry point: one-line errors with exit code 2, never a traceback.

    While the command runs, what is loaded before it (typer, click) is left out of garbage
    collection (``gc.freeze``) and the youngest generation is collected every 20,000 allocations
    rather than 700: the imports, schema builds and plan of one command make few cycles, and
    walking them spares no memory (``plan``: about 0.02 s of CPU less, ``benchmarks/startup.py``).
    Both are undone on the way out, for a caller that runs commands in its own process."""
    import gc

    threshold = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(20_000, *threshold[1:])
    try:
        _main()
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)


def _main() -> None:
    import warnings

    from .errors import shorten
    from .yamlio import track_inputs

    global _command
    _command = None
    ex = _click_exceptions()
    warnings.showwarning = _show_warning
    try:
        with track_inputs():  # every file a command reads is one its outputs may not overwrite
            code = _app_for(sys.argv[1:2])(standalone_mode=False)
    except PlanInputError as exc:
        typer.echo(f"prfaas-plan: error: {_cli_error(exc).one_line()}", err=True)
        sys.exit(2)
    except ex.NoArgsIsHelpError as exc:
        typer.echo(exc.format_message())
        sys.exit(0)
    except ex.UsageError as exc:
        hint = f" (see: {shorten(exc.ctx.command_path, 40)} --help)" if exc.ctx is not None else ""
        typer.echo(f"prfaas-plan: error: {shorten(exc.format_message().replace('Value error, ', ''), 230)}{hint}", err=True)
        sys.exit(2)
    except ex.ClickException as exc:
        typer.echo(f"prfaas-plan: error: {shorten(exc.format_message(), 230)}", err=True)
        sys.exit(exc.exit_code)
    except (KeyboardInterrupt, typer.Abort):
        typer.echo("prfaas-plan: interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    except Exception as exc:  # a bug: one line, not a traceback, unless asked for
        import os

        if os.environ.get("PRFAAS_PLAN_DEBUG"):
            raise
        typer.echo(
            f"prfaas-plan: internal error: {type(exc).__name__}: {shorten(str(exc), 160)} (a bug; please "
            "report it; PRFAAS_PLAN_DEBUG=1 shows the traceback)",
            err=True,
        )
        sys.exit(70)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
