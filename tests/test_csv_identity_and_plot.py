"""Issue 16, item 8 (a part): every CSV starts with identity columns and names the unit of every
number; ``route-table`` prints a table by default; the ``compare --plot`` labels never overprint.

The CSV check is a spec written here, independent of the code: the identity columns each
command's rows must start with, the unit suffixes a numeric column may end with, and a short
explicit list of unitless or text columns. Every cell of a numeric column parses as a number.
"""

from __future__ import annotations

import csv
import io
import math
import re

import numpy as np
import pytest
import yaml
from conftest import DATA, REPO

from prfaas_plan import api
from prfaas_plan.study.basis import SOURCE_KEYS
from prfaas_plan.units import TOKENS_PER_K

SCENARIO_IDENTITY = (
    "scenario",
    "model",
    "prfaas_hardware",
    "prfaas_gpus_per_instance",
    "pd_hardware",
    "pd_gpus_per_instance",
    "pd_decode_hardware",
    "pd_decode_gpus_per_instance",
    "link_gbps",
)
INSTANCE_IDENTITY = ("model", "hardware", "gpus_per_instance")
SITES_IDENTITY = (
    "scenario",
    "model",
    "window",
    "part",
    "prfaas_site",
    "prfaas_hardware",
    "prfaas_gpus_per_instance",
    "pd_site",
    "pd_hardware",
    "pd_gpus_per_instance",
    "link_gbps",
)

# what a row is about (text, or a count of chips that names its unit)
IDENTITY_NAMES = {
    *SCENARIO_IDENTITY,
    *INSTANCE_IDENTITY,
    *SITES_IDENTITY,
    "layout",
    "prefill_layout",
    "decode_layout",
    "deployment",
    "option",
    "case",
    "path",
    "hardware",
    *SOURCE_KEYS,
}  # each pool's source (basis)
# text and yes/no columns
TEXT_NAMES = {
    "kv_dtype",
    "status",
    "reason",
    "objective",
    "binding",
    "limited_by",
    "notes",
    "pareto",
    "planned",
    "beyond_link",
    "cache_regime",
    "sim_stable",
    "sim_queues",
    "static_sim_queues",
    "mixers",
    "versus_best",
    "distinguishable_from_best",
    "shares_error_with_best",  # compare: an option against the best
    "usd_per_hour_is_lower_bound",
}  # yes/no: a pool's billed power of unknown TDP is counted as $0
# numbers without a unit: shares and ratios, instance counts in the paper's notation, ranks
UNITLESS_NAMES = {
    "p",
    "load",
    "weight",
    "rank",
    "layers",
    "ratio_vs_homogeneous",
    "ratio_vs_colocated",
    "n_prfaas",
    "n_p",
    "n_d",
    "instances",  # a count of instances, as n_p
    "n_pd",
    "own_n_prfaas",
    "own_n_p",
    "own_n_d",
    "static_n_p",
    "static_n_d",
    "switched",
    "eff_matmul",
    "eff_attention_fp8",
    "eff_attention",
    "eff_memory",
    "link_utilisation_at_capacity",
    "link_utilisation_at_operating_rate",
    "link_utilisation_at_planned_rate",
}
UNIT_SUFFIXES = (
    "_s",
    "_ms",
    "hours",
    "_tokens",
    "_bytes",
    "_mib",
    "_gib",
    "_gb",
    "_gbps",
    "_tflops",
    "_tb_per_s",
    "_gb_per_s",
    "_rps",
    "_per_s",
    "_per_gpu",
    "_per_chip",
    "_per_token",
    "_per_output_token",
    "_usd_per_hour",
    "usd_per_hour",
    "usd_per_gpu_hour",
    "_kw",
    "_requests",
    "_billions",
    "_pct",
    "_utilisation",
    "_diff",
    "_fraction",
)  # the last three: a share of capacity, a relative
# difference, a share of 1 (loss_fraction 0.25 is 25%)
UNIT_FIRST = ("usd_per_", "gpus_")  # usd_per_mtok_output, usd_per_hour_operating, gpus_total

CALIBRATE = (
    "calibrate",
    "--model",
    "prfaas-1t-hybrid",
    "--hardware",
    "h200",
    "--gpus",
    "8",
    "--points",
    str(DATA / "table5_h200_prfaas_1t.csv"),
)
SLOW = pytest.mark.slow

COMMANDS = [
    pytest.param(("kv", "kimi-linear-48b", "-l", "1K,8K"), (*INSTANCE_IDENTITY, "layout"), id="kv"),
    pytest.param(("decode", "kimi-linear-48b"), (*INSTANCE_IDENTITY, "layout"), id="decode"),
    pytest.param(("estimate", "kimi-linear-48b"), (*INSTANCE_IDENTITY, "prefill_layout", "decode_layout"), id="estimate"),
    pytest.param(CALIBRATE, INSTANCE_IDENTITY, id="calibrate"),
    pytest.param(("models", "list"), ("model",), id="models-list"),
    pytest.param(("models", "show", "kimi-linear-48b"), ("model",), id="models-show"),
    pytest.param(("hardware", "list"), ("hardware",), id="hardware-list"),
    pytest.param(("hardware", "show", "h200"), ("hardware",), id="hardware-show"),
    pytest.param(("plan",), (*SCENARIO_IDENTITY, "deployment"), id="plan"),
    pytest.param(("compare", "--prfaas", "h200", "--jobs", "1"), (*SCENARIO_IDENTITY, "option"), id="compare"),
    *[
        pytest.param(("sweep", "--over", over, "--points", "3"), SCENARIO_IDENTITY, id=f"sweep-{over}")
        for over in ("threshold", "bandwidth", "rate")
    ],
    pytest.param(("sweep", "--over", "np"), SCENARIO_IDENTITY, id="sweep-np"),
    pytest.param(("sweep", "--over", "instances", "--to", "3"), SCENARIO_IDENTITY, id="sweep-instances"),
    pytest.param(("route-table", "--points", "3"), SCENARIO_IDENTITY, id="route-table"),
    pytest.param(("simulate", "-n", "200"), (*SCENARIO_IDENTITY, "deployment"), id="simulate"),
    pytest.param(("validate-model", "-n", "150"), (*SCENARIO_IDENTITY, "deployment"), id="validate-model"),
    pytest.param(("robust", DATA / "robust_three_mixes.yaml"), (*SCENARIO_IDENTITY, "case"), id="robust"),
    pytest.param(("schedule", DATA / "day_profile.yaml"), (*SCENARIO_IDENTITY, "window"), id="schedule"),
    pytest.param(("sites", REPO / "prfaas_plan" / "scenarios" / "two-edges-day.yaml"), SITES_IDENTITY, id="sites"),
]


def header_problem(name: str) -> str | None:
    """Why a CSV header breaks the rule, or None: snake_case, and an identity, text or unitless
    name of the lists above, or a unit suffix (or a unit-first name)."""
    if not re.fullmatch(r"[a-z][a-z0-9]*(_[a-z0-9]+)*", name):
        return "not snake_case"
    if name in IDENTITY_NAMES | TEXT_NAMES | UNITLESS_NAMES:
        return None
    if name.endswith(UNIT_SUFFIXES) or name.startswith(UNIT_FIRST):
        return None
    return "no unit suffix and not a known unitless or identity name"


def is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def check_csv(text: str, identity: tuple[str, ...]) -> list[dict]:
    rows = list(csv.DictReader(io.StringIO(text)))
    assert rows, text
    header = list(rows[0])
    assert tuple(header[: len(identity)]) == identity, header
    for name in header:
        assert header_problem(name) is None, f"{name}: {header_problem(name)}"
    for i, row in enumerate(rows):
        for name, cell in row.items():
            if name in TEXT_NAMES or cell == "":
                continue
            if name in IDENTITY_NAMES and not name.endswith(("_gpus_per_instance", "gpus_per_instance", "_gbps")):
                assert not is_number(cell) or name in ("window", "case"), f"row {i} {name}: {cell!r} is a number"
                continue
            assert is_number(cell), f"row {i} {name}: {cell!r} does not parse as a number"
    return rows


@pytest.mark.parametrize("args, identity", COMMANDS)
def test_every_csv_starts_with_identity_and_names_its_units(run_cli, args, identity):
    res = run_cli(*args, "-f", "csv")
    assert res.code == 0, res.err
    check_csv(res.out, identity)


def test_the_header_rule_refuses_what_it_should():
    """The spec itself: a number without a unit, a camelCase or a bare count fails."""
    assert header_problem("input") is not None and header_problem("concurrency") is not None
    assert header_problem("bandwidth") is not None and header_problem("ttftP90") is not None
    assert header_problem("links") is not None and header_problem("max_context") is not None
    assert header_problem("input_tokens") is None and header_problem("link_usd_per_hour") is None


def test_identity_values_are_the_inputs(run_cli):
    """The identity cells say what was asked: estimate's model, hardware and chips, and every
    scenario row's pools, from the case study (h200 x 8 PrfaaS, h20 x 8 PD, 100 Gbps)."""
    rows = check_csv(run_cli("estimate", "qwen3-8b", "-H", "h100", "-g", "2", "-P", "tp=2", "-f", "csv").out, INSTANCE_IDENTITY)
    assert (rows[0]["model"], rows[0]["hardware"], rows[0]["gpus_per_instance"]) == ("qwen3-8b", "h100", "2")
    assert rows[0]["prefill_layout"] == rows[0]["decode_layout"] == "tp2"
    assert (rows[0]["input_tokens"], rows[0]["output_tokens"]) == ("1024", "1024")
    case = ["paper-case-study", "prfaas-1t-hybrid", "h200", "8", "h20", "8", "", "", "100.0"]
    for args in (("route-table", "--points", "3"), ("sweep", "--over", "np")):
        rows = check_csv(run_cli(*args, "-f", "csv").out, SCENARIO_IDENTITY)
        assert all([r[k] for k in SCENARIO_IDENTITY] == case for r in rows)


def test_schedule_csv_floats_are_plain_numbers():
    """A numpy float in a row is written as a number, not as ``np.float64(...)`` (the schedule's
    capacities were)."""
    import numpy as np

    from prfaas_plan.report import Column, Report, to_csv

    text = to_csv(Report("t", [Column("capacity_rps", "c")], [{"capacity_rps": np.float64(3.895399)}]))
    assert text.splitlines() == ["capacity_rps", "3.895399"]


def test_sites_csv_has_a_column_per_link_figure_and_prices_add_up(run_cli, tmp_path):
    """sites: a row per link with its bandwidth, usable bandwidth, RTT, traffic and utilisation
    (the file's figures), a row per PD and PrfaaS site, and a total; each with its provisioned
    $/hour: instances x $/hour per instance (the hardware profiles' example rentals, 8 chips each),
    links' committed price; per window the parts add up to the plan's $/hour."""

    from prfaas_plan import api

    doc = {
        "name": "two-edges",
        "model": "prfaas-1t-hybrid",
        "prfaas_sites": [{"name": "factory", "hardware": "h200", "gpus_per_instance": 8, "instances": {"min": 0, "max": 4}}],
        "pd_sites": [
            {"name": n, "hardware": "h20", "gpus_per_instance": 8, "instances": 4, "rate_rps": 2.0} for n in ("east", "west")
        ],
        "links": [
            {"prfaas": "factory", "pd": "east", "bandwidth_gbps": 10, "rtt_ms": 20, "usd_per_gbps_month": 73},
            {"prfaas": "factory", "pd": "west", "bandwidth_gbps": 100, "rtt_ms": 35, "usable_fraction": 0.5},
        ],
        "workload": {"input": {"type": "fixed", "tokens": 30000}, "output": {"type": "fixed", "tokens": 1024}},
        "decode": {"max_batch": 64, "tokens_per_s_per_instance": 800},
    }
    path = tmp_path / "sites.yaml"
    path.write_text(yaml.safe_dump(doc))
    res = run_cli("sites", path, "-f", "csv")
    assert res.code == 0, res.err
    rows = check_csv(res.out, SITES_IDENTITY)
    assert [r["part"] for r in rows] == ["pd_site", "pd_site", "link", "link", "prfaas_site", "total"]
    links = {r["pd_site"]: r for r in rows if r["part"] == "link"}
    assert {k: (float(r["link_gbps"]), float(r["usable_gbps"]), float(r["rtt_ms"])) for k, r in links.items()} == {
        "east": (10.0, 10.0, 20.0),
        "west": (100.0, 50.0, 35.0),
    }
    result, si = api.sites(str(path))
    for site in result.pd:
        row = links[site.name]
        assert float(row["egress_gbps"]) == pytest.approx(site.egress_gbps["factory"], abs=1e-4)
        assert float(row["link_utilisation_at_planned_rate"]) == pytest.approx(
            site.egress_gbps["factory"] / float(row["usable_gbps"]), abs=1e-5
        )
        assert float(row["offload_rps"]) == pytest.approx(site.offload_rps["factory"], abs=1e-6)
    hw = {h: api.hardware_of(h).price_usd_per_gpu_hour for h in ("h200", "h20")}
    by_part = {(r["part"], r["pd_site"] or r["prfaas_site"] or r["part"]): r for r in rows}
    assert float(by_part["prfaas_site", "factory"]["usd_per_hour"]) == pytest.approx(
        result.n_prfaas["factory"] * 8 * hw["h200"], rel=1e-9
    )
    for name in ("east", "west"):
        assert float(by_part["pd_site", name]["usd_per_hour"]) == pytest.approx(4 * 8 * hw["h20"], rel=1e-9)
    # east's committed link: 10 Gbps x $73 per Gbps-month over 730 hours a month = $1/hour, when used
    east_used = result.pd[0].offload_rps["factory"] > 0
    assert float(links["east"]["usd_per_hour"]) == pytest.approx(1.0 if east_used else 0.0, abs=1e-4)
    assert float(links["west"]["usd_per_hour"]) == 0.0  # no price given
    parts = sum(float(r["usd_per_hour"]) for r in rows if r["part"] != "total")
    assert parts == pytest.approx(float(by_part["total", "total"]["usd_per_hour"]), abs=1e-3)
    assert float(by_part["total", "total"]["usd_per_hour"]) == pytest.approx(result.usd_per_hour, abs=1e-4)


def test_a_link_is_paid_when_it_carries_traffic_in_any_window():
    """The worked example's US-East link (40 Gbps at $60 per Gbps-month, 730 hours a month) is
    paid in full whether it carries traffic in every window or only the last, and not at all
    when it carries none (the programme's binary: one price for the day)."""
    from dataclasses import replace

    from prfaas_plan import api
    from prfaas_plan.planner.sites import cost_parts

    result, si = api.sites(str(REPO / "prfaas_plan" / "scenarios" / "two-edges-day.yaml"))

    def offloading(flags):
        windows = tuple(
            replace(
                w,
                pd=tuple(
                    replace(s, offload_rps={f: v if on or s.name != "us-east" else 0.0 for f, v in s.offload_rps.items()})
                    for s in w.pd
                ),
            )
            for w, on in zip(result.windows, flags)
        )
        return replace(result, windows=windows)

    price = 40 * 60 / 730
    for flags, paid in (((True, True, True), price), ((False, False, True), price), ((False, False, False), 0.0)):
        assert cost_parts(si, offloading(flags))["link", "us-east", "factory"] == pytest.approx(paid, rel=1e-12)


def test_route_table_prints_a_table_by_default(run_cli):
    """route-table's default is a table, like every other command; -f csv is the router's file."""
    default = run_cli("route-table", "--points", "3")
    table = run_cli("route-table", "--points", "3", "-f", "table")
    assert default.code == 0 and default.out == table.out
    assert "Routing table" in default.out and "usable Gbps" in default.out and "scenario," not in default.out
    rows = check_csv(run_cli("route-table", "--points", "3", "-f", "csv").out, SCENARIO_IDENTITY)
    (planned,) = [r for r in rows if r["planned"] == "True"]
    line = next(ln for ln in default.out.splitlines() if "True" in ln)
    assert f"{float(planned['threshold_tokens']):,.0f}" in line and float(planned["usable_gbps"]) == 100.0


# --------------------------------------------------------------------------------------------
# compare --plot: labels that do not overprint


def _boxes(fig):
    from matplotlib.text import Text

    from prfaas_plan.plot import LABEL_GID

    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    texts = [t for t in ax.texts if t.get_gid() == LABEL_GID]
    # the text's own box (an annotation's extent would include its leader line)
    return texts, [Text.get_window_extent(t, renderer) for t in texts], ax.get_window_extent(renderer)


def _overlapping(boxes) -> list[tuple[int, int]]:
    return [
        (i, j)
        for i in range(len(boxes))
        for j in range(i + 1, len(boxes))
        if min(boxes[i].x1, boxes[j].x1) > max(boxes[i].x0, boxes[j].x0)
        and min(boxes[i].y1, boxes[j].y1) > max(boxes[i].y0, boxes[j].y0)
    ]


def test_place_labels_keeps_a_crowd_apart():
    """Thirty points, most within a few pixels of each other, some long labels: no two label
    boxes share a pixel, none leaves the axes, and each label names its own point."""
    import numpy as np

    from prfaas_plan.plot import _pyplot, place_labels

    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 5.5))
    rng = np.random.default_rng(3)
    xy = np.vstack([rng.normal([300, 10], [8, 0.3], size=(20, 2)), rng.uniform([100, 2], [900, 20], size=(10, 2))])
    ax.scatter(xy[:, 0], xy[:, 1])
    ax.margins(0.12)
    fig.tight_layout()
    labels = [(x, y, str(k + 1) if k % 7 else f"{k + 1},{k + 2},{k + 3}") for k, (x, y) in enumerate(xy)]
    texts = place_labels(ax, labels)
    fig.canvas.draw()
    placed, boxes, frame = _boxes(fig)
    assert len(placed) == len(texts) == 30
    assert _overlapping(boxes) == []
    assert all(frame.x0 <= b.x0 and b.x1 <= frame.x1 and frame.y0 <= b.y0 and b.y1 <= frame.y1 for b in boxes)
    assert sorted(t.get_text() for t in placed) == sorted(text for _, _, text in labels)
    for t in placed:  # each annotation points at the coordinates of its own label
        x, y, _ = next(item for item in labels if item[2] == t.get_text())
        assert t.xy == (x, y)
    plt.close(fig)


def test_place_labels_overlap_check_is_live():
    """Labels all at one offset (what the plot did before) do overlap for coincident points: the
    check above would catch a plot that stacks them."""
    from prfaas_plan.plot import LABEL_GID, _pyplot

    plt = _pyplot()
    fig, ax = plt.subplots()
    for k in range(3):
        ax.annotate(f"prfaas=option-{k}", (100 + k, 5), xytext=(4, 4), textcoords="offset points", gid=LABEL_GID)
    fig.canvas.draw()
    assert _overlapping(_boxes(fig)[1])
    plt.close(fig)


@SLOW
def test_compare_plot_of_phase_split_has_no_overlapping_labels(tmp_path):
    """The shipped phase-split scenario's compare plot: every feasible, priced option is labelled
    by its rank (coincident options in one label), no two labels overlap, and the key names each
    option by its rank in the table."""
    from prfaas_plan import api
    from prfaas_plan.plot import _pyplot, compare_figure

    comparison = api.compare("phase-split", jobs=1)
    fig = compare_figure(comparison)
    fig.canvas.draw()
    texts, boxes, frame = _boxes(fig)
    assert _overlapping(boxes) == []
    plotted = [i for i, r in enumerate(comparison.results) if r.feasible and r.usd_per_hour is not None]
    shown = sorted(int(n) for t in texts for n in t.get_text().split(","))
    assert shown == [i + 1 for i in plotted]  # feasible options come first, ranked 1, 2, ...
    key = "\n".join(t.get_text() for t in fig.axes[1].texts)
    for i in plotted:
        assert re.search(rf"^\s*{i + 1}[* ] {re.escape(comparison.results[i].option.label)}$", key, re.M), key
    fig.savefig(tmp_path / "front.png", dpi=130)
    assert (tmp_path / "front.png").stat().st_size > 10_000
    _pyplot().close(fig)
    assert math.isfinite(sum(b.width for b in boxes))


def test_figure5_threshold_axis_is_in_k_of_1024():
    """The threshold axis is t / 1024 and says so; the optimum is marked at t / 1024."""
    from prfaas_plan.plot import figure5

    data = api.figure5_data("paper-case-study")
    fig = figure5(data)
    right = fig.axes[1]
    assert "1,024" in right.get_xlabel()
    line = right.get_lines()[0]
    thresholds = data.table.thresholds_tokens
    shown = thresholds[thresholds <= max(60 * 1024, 2 * data.solution.threshold_tokens)]
    np.testing.assert_allclose(line.get_xdata(), shown / 1024)
    star = [ln for ln in right.get_lines() if ln.get_marker() == "*"][0]
    assert star.get_xdata()[0] == pytest.approx(data.solution.threshold_tokens / 1024)
    assert f"{data.solution.threshold_tokens / 1024:.1f}K" in star.get_label()


@pytest.mark.slow
def test_timeseries_threshold_axis_is_in_k_of_1024():
    from prfaas_plan.plot import timeseries_figure

    run = api.simulate("paper-case-study", load=0.5, requests=200, seed=1)
    fig = timeseries_figure(run.result)
    axis = fig.axes[2]
    assert "1,024" in axis.get_ylabel()
    np.testing.assert_allclose(axis.get_lines()[0].get_ydata(), run.result.timeseries["threshold_tokens"] / TOKENS_PER_K)
