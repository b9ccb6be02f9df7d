"""Command-line interface: a thin typer layer over ``prfaas_plan.api``.

Heavy modules (numpy, scipy, pydantic, the profiles) are imported inside the commands so
that ``prfaas-plan --help`` starts fast. Bad input exits with code 2 and one line on stderr;
output files are written atomically, and never on failure.
"""

from __future__ import annotations

import sys
from enum import Enum
from typing import Optional

import typer

from .errors import PlanInputError

app = typer.Typer(
    name="prfaas-plan",
    help="Capacity planner for Prefill-as-a-Service: KV throughput, prefill and decode timing, the "
    "PrfaaS/PD plan (threshold and instance counts), latency, SLOs and simulation. "
    "Start with `prfaas-plan plan`. Units: K = 1024 tokens, Gbps = 1e9 bit/s, MiB/GiB binary.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
models_app = typer.Typer(help="List or show the shipped model profiles.", no_args_is_help=True)
hardware_app = typer.Typer(help="List or show the shipped hardware profiles.", no_args_is_help=True)
model_app = typer.Typer(help="Create model profiles (import from a Hugging Face config.json).", no_args_is_help=True)
app.add_typer(models_app, name="models")
app.add_typer(hardware_app, name="hardware")
app.add_typer(model_app, name="model")


class Format(str, Enum):
    table = "table"
    json = "json"
    csv = "csv"


class Source(str, Enum):
    auto = "auto"
    roofline = "roofline"
    measured = "measured"


FORMAT_OPT = typer.Option(Format.table, "--format", "-f", help="Output format.")
OUTPUT_OPT = typer.Option(None, "--output", "-o", help="Write to this file (atomically) instead of stdout.")
GPUS_OPT = typer.Option(8, "--gpus", "-g", help="Chips per instance.")
SOURCE_OPT = typer.Option(Source.auto, "--source",
                          help="auto: the model's measured points for this hardware and GPU count if any, else roofline.")


def _emit(report, fmt: Format, output: Optional[str], preface: str = "") -> None:
    """Render a report and print it or write it atomically to ``output``."""
    from .report import render
    from .yamlio import write_text_atomic

    if output:
        write_text_atomic(output, (preface if fmt == Format.table else "") + render(report, fmt.value))
        typer.echo(f"wrote {output}", err=True)
        return
    if fmt == Format.table:
        from rich.console import Console

        console = Console()
        if preface:
            console.print(preface, highlight=False, markup=False, end="")
        width = console.width if console.is_terminal else 120
        sys.stdout.write(render(report, "table", width=width, color=console.is_terminal))
    else:
        sys.stdout.write(render(report, fmt.value))


def _lengths(text: str) -> list[int]:
    from .units import parse_token_list

    return parse_token_list(text, field="--lengths")


@app.command()
def kv(
    model: str = typer.Argument(..., help="Model: shipped name or YAML file."),
    hardware: str = typer.Option("h200", "--hardware", "-H", help="Hardware: shipped name or YAML file."),
    gpus: int = GPUS_OPT,
    lengths: str = typer.Option("1K,8K,32K,128K", "--lengths", "-l", help="Comma-separated input lengths (32K, 32k or 32768)."),
    source: Source = SOURCE_OPT,
    fmt: Format = FORMAT_OPT,
    output: Optional[str] = OUTPUT_OPT,
) -> None:
    """S_kv, T_prefill and the KV throughput Phi_kv = S_kv / T_prefill per input length."""
    from . import api
    from .views import kv_view

    _check_gpus(gpus)
    result = api.kv_report(model, hardware, gpus, _lengths(lengths), source.value)
    _emit(kv_view(result), fmt, output)


@app.command()
def decode(
    model: str = typer.Argument(..., help="Model: shipped name or YAML file."),
    hardware: str = typer.Option("h20", "--hardware", "-H", help="Hardware: shipped name or YAML file."),
    gpus: int = GPUS_OPT,
    context: str = typer.Option("32K", "--context", "-c", help="Context length per request (input + output so far)."),
    tpot_ms: Optional[float] = typer.Option(None, "--tpot-ms", help="Time-per-output-token limit in ms."),
    max_batch: Optional[int] = typer.Option(None, "--max-batch", help="Engine cap on running requests."),
    source: Source = SOURCE_OPT,
    fmt: Format = FORMAT_OPT,
    output: Optional[str] = OUTPUT_OPT,
) -> None:
    """Decode batch size (memory- or TPOT-limited), step time and tokens/s of one instance."""
    from . import api
    from .units import parse_tokens
    from .views import decode_view

    _check_gpus(gpus)
    if max_batch is not None and max_batch < 1:
        raise PlanInputError(f"must be at least 1, got {max_batch}", field="--max-batch")
    ctx = parse_tokens(context, field="--context")
    result = api.decode(model, hardware, gpus, ctx, tpot_ms=tpot_ms, max_batch=max_batch, source=source.value)
    _emit(decode_view(result, tpot_ms), fmt, output)


def _check_gpus(gpus: int) -> None:
    if gpus < 1:
        raise PlanInputError(f"must be at least 1, got {gpus}", field="--gpus")


@models_app.command("list")
def models_list(fmt: Format = FORMAT_OPT, output: Optional[str] = OUTPUT_OPT) -> None:
    """All shipped model profiles with their KV footprint and parameter counts."""
    from .profiles.registry import resolve_model, shipped_names
    from .views import models_list_view

    _emit(models_list_view([resolve_model(n) for n in shipped_names("model_profiles")]), fmt, output)


@models_app.command("show")
def models_show(name: str = typer.Argument(..., help="Shipped name or YAML file."),
                fmt: Format = FORMAT_OPT, output: Optional[str] = OUTPUT_OPT) -> None:
    """One model profile: derived figures, assumptions and sources (JSON adds the full profile)."""
    from .profiles.registry import resolve_model
    from .views import model_show_view

    _emit(model_show_view(resolve_model(name)), fmt, output)


@hardware_app.command("list")
def hardware_list(fmt: Format = FORMAT_OPT, output: Optional[str] = OUTPUT_OPT) -> None:
    """All shipped hardware profiles (per chip) with their efficiency factors."""
    from .profiles.registry import resolve_hardware, shipped_names
    from .views import hardware_list_view

    _emit(hardware_list_view([resolve_hardware(n) for n in shipped_names("hardware_profiles")]), fmt, output)


@hardware_app.command("show")
def hardware_show(name: str = typer.Argument(..., help="Shipped name or YAML file."),
                  fmt: Format = FORMAT_OPT, output: Optional[str] = OUTPUT_OPT) -> None:
    """One hardware profile: figures, assumptions, sources (JSON adds the full profile)."""
    from .profiles.registry import resolve_hardware
    from .views import hardware_show_view

    _emit(hardware_show_view(resolve_hardware(name)), fmt, output)


@app.command()
def validate(path: str = typer.Argument(..., help="A model, hardware or scenario YAML file.")) -> None:
    """Check a model, hardware or scenario file; exit 0 if valid, 2 with the first problem if not."""
    from .profiles.registry import validate_file

    kind, profile = validate_file(path)
    typer.echo(f"{path}: valid {kind} profile '{profile.name}'")


@model_app.command("import")
def model_import(
    config: str = typer.Argument(..., help="A Hugging Face config.json."),
    name: Optional[str] = typer.Option(None, "--name", "-n", help="Profile name (default: from the config)."),
    output: Optional[str] = typer.Option(None, "--output", "-o", help="Write the profile YAML here (default: stdout)."),
) -> None:
    """Convert a Hugging Face config.json into a model profile YAML."""
    from .profiles.hf_import import import_hf_config_file
    from .yamlio import dump_yaml, write_text_atomic

    data, profile = import_hf_config_file(config, name=name)
    text = f"# Imported by prfaas-plan from {config}\n" + dump_yaml(data)
    if output:
        write_text_atomic(output, text)
        typer.echo(f"wrote {output} (model '{profile.name}')", err=True)
    else:
        sys.stdout.write(text)


@app.command()
def calibrate(
    model: str = typer.Option(..., "--model", "-m", help="Model the points were measured on."),
    hardware: str = typer.Option(..., "--hardware", "-H", help="Hardware profile to start from."),
    gpus: int = GPUS_OPT,
    points: str = typer.Option(..., "--points", "-p", help="CSV with columns length,prefill_s[,kv_bytes]."),
    output: Optional[str] = typer.Option(None, "--output", "-o", help="Write the calibrated hardware profile YAML here."),
    name: Optional[str] = typer.Option(None, "--name", help="Name of the calibrated profile (default: HW-calibrated)."),
    fmt: Format = FORMAT_OPT,
) -> None:
    """Fit the hardware's efficiency factors and prefill overhead to measured prefill latencies."""
    from . import api
    from .calibrate import calibrate as run_calibration
    from .calibrate import hardware_to_yaml_dict, read_points_csv
    from .views import calibration_view
    from .yamlio import dump_yaml, write_text_atomic

    _check_gpus(gpus)
    result = run_calibration(api.model_of(model), api.hardware_of(hardware), gpus, read_points_csv(points), name=name)
    _emit(calibration_view(result), fmt, None)
    if output:
        header = (f"# Calibrated by `prfaas-plan calibrate --model {model} --hardware {hardware} --gpus {gpus} "
                  f"--points {points}`\n")
        write_text_atomic(output, header + dump_yaml(hardware_to_yaml_dict(result.hardware)))
        typer.echo(f"wrote {output} (hardware '{result.hardware.name}')", err=True)


class Mode(str, Enum):
    exact = "exact"
    paper = "paper"


@app.command()
def plan(
    scenario: str = typer.Argument("paper-case-study", help="Scenario: shipped name or YAML file."),
    mode: Mode = typer.Option(Mode.exact, "--mode", help="exact: class means of T(L); paper: T at class mean lengths."),
    fmt: Format = FORMAT_OPT,
    output: Optional[str] = OUTPUT_OPT,
) -> None:
    """Optimise threshold t and N_prfaas / N_p / N_d; compare with homogeneous and naive baselines."""
    from . import api
    from .views import plan_view

    _emit(plan_view(api.plan(scenario, mode.value)), fmt, output)


class Over(str, Enum):
    threshold = "threshold"
    np = "np"
    bandwidth = "bandwidth"
    instances = "instances"
    rate = "rate"


@app.command()
def sweep(
    scenario: str = typer.Argument("paper-case-study", help="Scenario: shipped name or YAML file."),
    over: Over = typer.Option(..., "--over", help="What to vary (see the README)."),
    mode: Mode = typer.Option(Mode.exact, "--mode"),
    start: float = typer.Option(1.0, "--from", help="bandwidth: first usable Gbps."),
    stop: Optional[float] = typer.Option(None, "--to", help="bandwidth: last Gbps (default: the link's); instances: last N_prfaas."),
    points: Optional[int] = typer.Option(None, "--points", help="Number of points (bandwidth: default 200; threshold: default every distinct t)."),
    fmt: Format = typer.Option(Format.csv, "--format", "-f", help="Output format."),
    output: Optional[str] = OUTPUT_OPT,
) -> None:
    """Curves around the plan as CSV: over threshold, N_p, link bandwidth, PrfaaS instances or arrival rate."""
    from . import api
    from .report import Column, Report

    if points is not None and points < 2:
        raise PlanInputError(f"must be at least 2, got {points}", field="--points")
    with _progress() as progress:
        rows = api.sweep(scenario, over.value, mode.value, start, stop, points, progress)
    columns = [Column(k, k, str) for k in rows[0]] if rows else []
    _emit(Report(title=f"Sweep over {over.value}: {scenario}", columns=columns, rows=rows), fmt, output)


@app.command()
def plot(
    scenario: str = typer.Argument("paper-case-study", help="Scenario: shipped name or YAML file."),
    output: str = typer.Option(..., "--output", "-o", help="Figure file: .png, .svg or .pdf."),
    mode: Mode = typer.Option(Mode.exact, "--mode"),
) -> None:
    """Draw the paper's figure 5 for a scenario, with the optimum marked."""
    from . import api

    api.plot(scenario, output, mode.value)
    typer.echo(f"wrote {output}", err=True)


class Arrivals(str, Enum):
    poisson = "poisson"
    gamma = "gamma"
    onoff = "onoff"


class Policy(str, Enum):
    static = "static"
    adaptive = "adaptive"


def _sim_options(seed: int, arrivals: Arrivals, cv: float, burst_factor: float, policy: Policy,
                 bandwidth_trace: Optional[str], drop_at: Optional[float], drop_for: float, drop_to: float) -> dict:
    from .simulate import read_bandwidth_trace

    options = dict(seed=seed, arrivals=arrivals.value, cv=cv, burst_factor=burst_factor, policy=policy.value,
                   drop_at_s=drop_at, drop_for_s=drop_for, drop_to_fraction=drop_to)
    if bandwidth_trace:
        options["bandwidth_trace"] = read_bandwidth_trace(bandwidth_trace)
    return options


SEED_OPT = typer.Option(0, "--seed", help="Random seed (runs are reproducible).")
ARRIVALS_OPT = typer.Option(Arrivals.poisson, "--arrivals", help="poisson, gamma (--cv) or onoff (--burst-factor).")
CV_OPT = typer.Option(1.0, "--cv", help="Coefficient of variation of gamma inter-arrival times.")
BURST_OPT = typer.Option(2.0, "--burst-factor", help="onoff: rate during bursts / mean rate.")
POLICY_OPT = typer.Option(Policy.static, "--policy", help="static threshold, or adaptive (raises t under link pressure).")
TRACE_OPT = typer.Option(None, "--bandwidth-trace", help="CSV time_s,gbps: the link's usable bandwidth over time.")
DROP_AT_OPT = typer.Option(None, "--drop-at", help="Time (s) when the link drops.")
DROP_FOR_OPT = typer.Option(0.0, "--drop-for", help="Length of the drop (s).")
DROP_TO_OPT = typer.Option(0.5, "--drop-to", help="Link bandwidth during the drop, as a fraction.")


@app.command()
def simulate(
    scenario: str = typer.Argument("paper-case-study", help="Scenario: shipped name or YAML file."),
    rate: Optional[float] = typer.Option(None, "--rate", help="Arrival rate, requests/s."),
    load: Optional[float] = typer.Option(None, "--load", help="Arrival rate as a fraction of the closed-form Λ_max (default 0.8)."),
    requests: Optional[int] = typer.Option(None, "--requests", "-n", help="Requests to simulate (default 20,000; required at or above Λ_max)."),
    deployment: str = typer.Option("prfaas_pd", "--deployment", help="prfaas_pd, homogeneous, homogeneous_equal_cost or naive_heterogeneous."),
    seed: int = SEED_OPT, arrivals: Arrivals = ARRIVALS_OPT, cv: float = CV_OPT, burst_factor: float = BURST_OPT,
    policy: Policy = POLICY_OPT, bandwidth_trace: Optional[str] = TRACE_OPT, drop_at: Optional[float] = DROP_AT_OPT,
    drop_for: float = DROP_FOR_OPT, drop_to: float = DROP_TO_OPT,
    mode: Mode = typer.Option(Mode.exact, "--mode"),
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="table or json: the summary; csv: the time series."),
    output: Optional[str] = OUTPUT_OPT,
    plot_file: Optional[str] = typer.Option(None, "--plot", help="Also draw the time series (.png, .svg, .pdf)."),
) -> None:
    """Discrete-event simulation (SimPy) of the planned deployment: TTFT/TPOT per path, queues, egress."""
    from . import api
    from .views import simulation_view, timeseries_report

    if plot_file:
        from .plot import check_format

        check_format(plot_file, "--plot")
    options = _sim_options(seed, arrivals, cv, burst_factor, policy, bandwidth_trace, drop_at, drop_for, drop_to)
    with _progress() as progress:
        run = api.simulate(scenario, rate_rps=rate, load=load, requests=requests, deployment=deployment,
                           mode=mode.value, progress=progress, **options)
    report = timeseries_report(run) if fmt == Format.csv else simulation_view(run)
    _emit(report, fmt, output)
    if plot_file:
        from .plot import timeseries_figure

        timeseries_figure(run.result, plot_file)
        typer.echo(f"wrote {plot_file}", err=True)


@app.command("validate-model")
def validate_model(
    scenario: str = typer.Argument("paper-case-study", help="Scenario: shipped name or YAML file."),
    requests: int = typer.Option(20_000, "--requests", "-n", help="Requests simulated per load."),
    seed: int = SEED_OPT, arrivals: Arrivals = ARRIVALS_OPT, cv: float = CV_OPT, burst_factor: float = BURST_OPT,
    mode: Mode = typer.Option(Mode.exact, "--mode"),
    fmt: Format = FORMAT_OPT,
    output: Optional[str] = OUTPUT_OPT,
) -> None:
    """Closed form beside simulation at 50%, 80%, 95% and 110% of the closed-form Λ_max."""
    from . import api
    from .views import validation_view

    options = _sim_options(seed, arrivals, cv, burst_factor, Policy.static, None, None, 0.0, 0.5)
    with _progress(minimum=1) as progress:
        runs = api.validate_model(scenario, requests=requests, mode=mode.value, progress=progress, **options)
    _emit(validation_view(runs), fmt, output)


class _progress:
    """A rich progress bar on stderr for long runs, when stderr is a terminal."""

    def __init__(self, minimum: int = 1000):
        self.minimum = minimum  # totals below this show no bar

    def __enter__(self):
        from rich.console import Console

        self._console = Console(stderr=True)
        self._bar = None
        return self.update

    def update(self, done: int, total: int) -> None:
        if not self._console.is_terminal or total < self.minimum:
            return
        if self._bar is None:
            from rich.progress import Progress

            self._bar = Progress(console=self._console, transient=True)
            self._bar.start()
            self._task = self._bar.add_task("sweeping", total=total)
        self._bar.update(self._task, completed=done)

    def __exit__(self, *exc):
        if self._bar is not None:
            self._bar.stop()
        return False


def main() -> None:
    """Console-script entry point: one-line errors with exit code 2, never a traceback."""
    try:
        app()
    except PlanInputError as exc:
        typer.echo(f"prfaas-plan: error: {exc.one_line()}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        typer.echo("prfaas-plan: interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)


if __name__ == "__main__":
    main()
