"""Every table and CSV column shows the JSON field it claims to show.

Each command that prints a table and offers ``-f json`` and ``-f csv`` renders one
:class:`prfaas_plan.report.Report`. Here each such command is run three times and:

- every CSV column key is a JSON field of the same row, and every cell equals that field;
- every table header is looked up in a mapping written below (header label -> JSON key),
  and every cell equals that JSON value as displayed (rounded to the digits shown); a header
  missing from the mapping, or a mapped header missing from the table, fails.

So two swapped columns (a header over the wrong values, or a CSV key over the wrong field) make
a test fail. No figure printed by the code is copied here: values are read from the JSON of the
same run, from the inputs, or computed from their definitions.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

import pytest
from conftest import DATA, case_study_doc

from prfaas_plan import api

# --------------------------------------------------------------------------------------------
# What each table column shows


@dataclass(frozen=True)
class Col:
    """A table column: the JSON key it shows (dotted for nested fields), the factor the table
    applies (100 for percentages), the text shown for None, and for text columns the label
    shown for each JSON value."""

    key: str
    scale: float = 1.0
    none: str = "-"
    labels: dict | None = None


DEPLOYMENT_LABELS = {
    "prfaas_pd": "PrfaaS-PD",
    "homogeneous": "homogeneous",
    "homogeneous_equal_cost": "homog. equal-$",
    "naive_heterogeneous": "naive heterog.",
    "colocated": "co-located",
    "operating": "PrfaaS-PD @ op.",
}
# the four bounds, and what sets the co-located baseline's rate (its batch, or the TPOT limit)
BOUND_LABELS = {"prfaas_compute": "PrfaaS", "link": "link", "pd_prefill": "PD-P", "pd_decode": "PD-D"}
BOUND_LABELS |= {"decode_batch": "batch", "tpot_limit": "TPOT"}
STABILITY_LABELS = {True: "stable", False: "growing", None: "unknown (too few samples)"}
WHAT_IF_LABELS = {True: "what-if", False: "-"}

PLAN_TABLE = {
    "deployment": Col("deployment", labels=DEPLOYMENT_LABELS),
    "N_prfaas": "n_prfaas",
    "N_p": "n_p",
    "N_d": "n_d",
    "Θ_prfaas": "theta_prfaas_rps",
    "Θ_pdp": "theta_pdp_rps",
    "Θ_pdd": "theta_pdd_rps",
    "Λ_max": "lambda_max_rps",
    "bound by": Col("binding", labels=BOUND_LABELS),
    "$/h": "usd_per_hour",
    "vs homog": "ratio_vs_homogeneous",
}
# The CSV of a plan: every deployment row with the operating-point fields, in this order.
IDENTITY_CSV = [
    "scenario",
    "model",
    "prfaas_hardware",
    "prfaas_gpus_per_instance",
    "pd_hardware",
    "pd_gpus_per_instance",
    "pd_decode_hardware",
    "pd_decode_gpus_per_instance",
    "link_gbps",
]
OPERATING_CSV = [
    "operating_rate_rps",
    "ttft_p90_s",
    "link_utilisation_at_operating_rate",
    "usd_per_hour_operating",
    "usd_per_mtok_output",
    "usd_per_mtok_blended",
    "power_kw",
    "joules_per_output_token",
    "link_operating_usd_per_hour",
]
# which curve and rate sized each pool (the JSON's "sources"), the same on every deployment row
SOURCES_CSV = [
    "basis",
    "prfaas_prefill_source",
    "prfaas_prefill_capacity",
    "prfaas_layout",
    "pd_prefill_source",
    "pd_prefill_capacity",
    "pd_layout",
    "decode_source",
    "decode_layout",
]
PLAN_CSV = [
    *IDENTITY_CSV,
    "deployment",
    "threshold_tokens",
    "p",
    "n_prfaas",
    "n_p",
    "n_d",
    "instances",
    "theta_prfaas_rps",
    "theta_pdp_rps",
    "theta_pdd_rps",
    "lambda_max_rps",
    "goodput_rps",
    "binding",
    "egress_gbps",
    "link_utilisation_at_capacity",
    "usd_per_hour",
    "usd_per_hour_is_lower_bound",
    "ratio_vs_homogeneous",
    *OPERATING_CSV,
    *SOURCES_CSV,
]
LATENCY_TABLE = {
    "deployment": Col("deployment", labels=DEPLOYMENT_LABELS),
    "rate req/s": "rate_rps",
    "TTFT mean s": "ttft_mean_s",
    "P90 s": "ttft_p90_s",
    "P99 s": "ttft_p99_s",
    "local s": "local_mean_s",
    "remote s": "remote_mean_s",
    "TPOT ms": "tpot_ms",
}
KV_TABLE = {
    "length (tokens)": "length_tokens",
    "S_kv (bytes)": "kv_bytes",
    "S_kv (MiB)": "kv_mib",
    "T_prefill (s)": "prefill_s",
    "Phi_kv (Gbps)": "phi_kv_gbps",
}
DECODE_TABLE = {
    "context (tokens)": "context_tokens",
    "layout": "layout",
    "batch": "batch_requests",
    "BS_max (memory)": "bs_max_memory_requests",
    "limited by": "limited_by",
    "T_decode (ms)": "step_ms",
    "TPOT (ms)": "tpot_ms",
    "tokens/s": "tokens_per_s",
    "tok/s/user": "per_user_tokens_per_s",
    "weights/chip (GB)": "weight_gb_per_chip",
    "KV/request/chip (MiB)": "kv_per_request_mib_per_chip",
}
MODELS_TABLE = {
    "model": "model",
    "layers": "layers",
    "mixers (kind:layers)": "mixers",
    "KV B/token": "kv_bytes_per_token",
    "SWA cap MiB": "window_cap_mib",
    "state MiB": "fixed_state_mib",
    "params B": "params_total_billions",
    "active B": "params_active_billions",
    "weights GB": "weight_gb",
    "context": "max_context_tokens",
}
HARDWARE_TABLE = {
    "hardware": "hardware",
    "bf16 TFLOPS": "bf16_tflops",
    "fp8 TFLOPS": "fp8_tflops",
    "fp4 TFLOPS": "fp4_tflops",
    "memory GiB": "memory_gib",
    "TB/s": "bandwidth_tb_per_s",
    "scale-up GB/s": "scale_up_gb_per_s",
    "eff mm": "eff_matmul",
    "eff attn": "eff_attention",
    "eff attn fp8": "eff_attention_fp8",
    "eff mem": "eff_memory",
    "overhead s": "prefill_overhead_s",
    "$/GPU-h (example)": "usd_per_gpu_hour",
}
CALIBRATION_TABLE = {
    "length (tokens)": "length_tokens",
    "measured (s)": "measured_s",
    "fitted (s)": "predicted_s",
    "error %": "error_pct",
    "measured KV (B)": "measured_kv_bytes",
    "model KV (B)": "model_kv_bytes",
}
# Each Δ column names the pair it compares: (closed - simulated) / simulated, in percent.
VALIDATION_TABLE = {
    "load": "load",
    "rate req/s": "rate_rps",
    "closed tput req/s": "closed_throughput_rps",
    "sim tput req/s": "sim_throughput_rps",
    "Δ tput": Col("throughput_diff_fraction", scale=100),
    "closed TTFT mean s": Col("closed_ttft_mean_s", none="overload"),
    "sim TTFT mean s": Col("sim_ttft_mean_s", none="overload"),
    "Δ TTFT mean": Col("ttft_mean_diff_fraction", scale=100),
    "closed TTFT P90 s": Col("closed_ttft_p90_s", none="overload"),
    "sim TTFT P90 s": Col("sim_ttft_p90_s", none="overload"),
    "Δ TTFT P90": Col("ttft_p90_diff_fraction", scale=100),
    "Δ local mean": Col("local_ttft_mean_diff_fraction", scale=100),
    "Δ remote mean": Col("remote_ttft_mean_diff_fraction", scale=100),
    "Δ remote P90": Col("remote_ttft_p90_diff_fraction", scale=100),
    "sim queues": Col("sim_stable", labels=STABILITY_LABELS),
}
# simulate: one row per path; the JSON row of a path is {path, ttft: ttft[path], tpot: tpot[path], closed_form: ...}.
SIMULATION_TABLE = {
    "path": "path",
    "measured requests": "ttft.count",
    "TTFT mean s": "ttft.mean_s",
    "P50 s": "ttft.p50_s",
    "P90 s": "ttft.p90_s",
    "P99 s": "ttft.p99_s",
    "closed-form mean s": "closed_form.mean_s",
    "closed-form P90 s": "closed_form.p90_s",
    "TPOT mean ms": "tpot.mean_ms",
}
# Sweeps label each column with its key (the keys carry the units).
SWEEP_KEYS = {
    "threshold": [
        "threshold_tokens",
        "p",
        "l_long_tokens",
        "l_short_tokens",
        "prfaas_bound_rps",
        "link_bound_rps",
        "pd_prefill_bound_rps",
        "pd_decode_bound_rps",
        "lambda_max_rps",
    ],
    "np": ["n_p", "n_d", "prefill_bound_rps", "decode_bound_rps", "lambda_max_rps"],
    "bandwidth": ["usable_gbps", "threshold_tokens", "p", "lambda_max_rps", "egress_gbps", "beyond_link"],
    "rate": ["deployment", "rate_rps", "load", "ttft_mean_s", "ttft_p90_s", "ttft_p99_s", "tpot_ms"],
    "instances": ["n_prfaas", "threshold_tokens", "p", "n_p", "n_d", "lambda_max_rps", "usd_per_hour"],
}

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

# --------------------------------------------------------------------------------------------
# Running a command in the three formats and reading what it wrote


def three_formats(run_cli, *args: str) -> tuple[dict, list[str], list[dict[str, str]], str]:
    """JSON document, CSV header and rows, and the table text of one command."""
    outs = {}
    for fmt in ("json", "csv", "table"):
        res = run_cli(*args, "-f", fmt)
        assert res.code == 0, (fmt, res.err)
        outs[fmt] = res.out
    reader = csv.reader(io.StringIO(outs["csv"]))
    header, *cells = list(reader)
    assert all(len(row) == len(header) for row in cells)
    return json.loads(outs["json"]), header, [dict(zip(header, row)) for row in cells], outs["table"]


@dataclass
class Table:
    title: str
    headers: list[str]
    rows: list[list[str]]


def cells_of(line: str) -> list[str]:
    """Cells of a rich table line: separated by two or more spaces (a cell may hold single spaces)."""
    return re.split(r"\s{2,}", line.strip())


def parse_tables(text: str) -> list[Table]:
    """Every table in the text: the title above the header, the header line above the rule of
    '─', and the rows below it up to the first blank line."""
    lines = text.splitlines()
    tables = []
    for i, line in enumerate(lines):
        if not line.strip() or set(line.strip()) != {"─"}:
            continue
        above = [s for s in lines[: i - 1] if s.strip()]
        headers = cells_of(lines[i - 1])
        rows = []
        for row in lines[i + 1 :]:
            if not row.strip():
                break
            cells = cells_of(row)
            assert len(cells) == len(headers), f"row {row!r} has {len(cells)} cells for {len(headers)} headers"
            rows.append(cells)
        tables.append(Table(above[-1].strip() if above else "", headers, rows))
    assert tables, f"no table in:\n{text}"
    return tables


def table_titled(tables: list[Table], title: str) -> Table:
    found = [t for t in tables if t.title.startswith(title)]
    assert len(found) == 1, [t.title for t in tables]
    return found[0]


def lookup(row: dict, key: str) -> Any:
    """A (possibly dotted) key of a JSON row; the key must be there."""
    value = row
    for part in key.split("."):
        assert isinstance(value, dict) and part in value, f"no JSON field {key!r} in {row!r}"
        value = value[part]
    return value


def missing(value: Any) -> bool:
    return value is None or value == "" or (isinstance(value, float) and not math.isfinite(value))


def assert_cell_shows(cell: str, value: Any, col: Col, where: str) -> None:
    """The table cell is the JSON value as displayed: a label, the None text, or the number
    rounded to the digits shown (within half the last digit)."""
    if col.labels is not None:
        assert value in col.labels, f"{where}: no label for JSON value {value!r}"
        assert cell == col.labels[value], f"{where}: shows {cell!r}, JSON {value!r} is {col.labels[value]!r}"
    elif missing(value):
        assert cell == col.none, f"{where}: shows {cell!r} for a missing JSON value"
    elif isinstance(value, bool) or not isinstance(value, int | float):
        assert cell == str(value), f"{where}: shows {cell!r}, JSON has {value!r}"
    else:
        text = cell.removesuffix("x").removesuffix("%").replace(",", "")
        try:
            shown = Decimal(text)
        except InvalidOperation:
            raise AssertionError(f"{where}: {cell!r} is not a number (JSON {value!r})") from None
        half_digit = 0.5 * 10.0 ** shown.as_tuple().exponent
        expected = value * col.scale
        assert abs(float(shown) - expected) <= half_digit * (1 + 1e-9) + 1e-12, (
            f"{where}: shows {cell!r}, JSON {col.key} = {value!r} (x{col.scale:g}) would show {expected!r}"
        )


def expand_mapping(mapping: dict) -> dict[str, list[Col]]:
    return {
        label: [Col(s) if isinstance(s, str) else s for s in (spec if isinstance(spec, list) else [spec])]
        for label, spec in mapping.items()
    }


def check_table(table: Table, mapping: dict, json_rows: list[dict]) -> None:
    """Every header is in the mapping (and every mapped header in the table, as many times as
    mapped), and every cell shows its JSON field of the row in the same place."""
    cols = expand_mapping(mapping)
    unmapped = sorted(set(table.headers) - set(cols))
    assert not unmapped, f"{table.title}: headers {unmapped} are not in the test's mapping"
    for label, specs in cols.items():
        assert table.headers.count(label) == len(specs), (
            f"{table.title}: header {label!r} appears {table.headers.count(label)} times, mapped {len(specs)}"
        )
    seen: dict[str, int] = {}
    order = []
    for label in table.headers:
        order.append(cols[label][seen.get(label, 0)])
        seen[label] = seen.get(label, 0) + 1
    assert len(table.rows) == len(json_rows), f"{table.title}: {len(table.rows)} rows, JSON has {len(json_rows)}"
    for i, (cells, row) in enumerate(zip(table.rows, json_rows)):
        for label, col, cell in zip(table.headers, order, cells):
            assert_cell_shows(cell, lookup(row, col.key), col, f"{table.title} row {i} column {label!r}")


def assert_csv_cell(cell: str, value: Any, where: str) -> None:
    if value is None:
        assert cell == "", f"{where}: {cell!r} for a JSON null"
    elif isinstance(value, bool) or not isinstance(value, int | float):
        assert cell == str(value), f"{where}: {cell!r}, JSON has {value!r}"
    else:
        assert cell != "" and float(cell) == float(value), f"{where}: {cell!r}, JSON has {value!r}"


def check_csv(header: list[str], csv_rows: list[dict], json_rows: list[dict], derived: dict | None = None) -> None:
    """Every CSV key is a JSON field of the same row and every cell equals it. ``derived``
    gives, per row index, the values of keys the row's JSON does not hold."""
    assert len(csv_rows) == len(json_rows), f"{len(csv_rows)} CSV rows, JSON has {len(json_rows)}"
    for i, (row, doc) in enumerate(zip(csv_rows, json_rows)):
        extra = (derived or {}).get(i, {})
        for key in header:
            assert key in doc or key in extra, f"CSV key {key!r} is no JSON field of row {i} ({sorted(doc)})"
            assert_csv_cell(row[key], doc[key] if key in doc else extra[key], f"CSV row {i} key {key!r}")


def check_meta(text: str, doc: dict, keys: list[str]) -> None:
    """The line above the table states top-level JSON fields as ``key: value``."""
    first = text.splitlines()[0]
    shown = dict(pair.split(": ", 1) for pair in cells_of(first))
    assert list(shown) == keys, first
    for key in keys:
        assert shown[key] == str(doc[key]), f"meta {key!r}: {shown[key]!r}, JSON {doc[key]!r}"


def check_rows_report(run_cli, args: tuple[str, ...], mapping: dict) -> tuple[dict, Table, str]:
    """A report whose JSON has ``rows``: the CSV has exactly the JSON row fields, in order, and
    the table's columns show the fields their mapping names."""
    doc, header, csv_rows, text = three_formats(run_cli, *args)
    rows = doc["rows"]
    assert rows
    assert all(list(r) == header for r in rows), f"CSV header {header} is not the JSON row fields {list(rows[0])}"
    check_csv(header, csv_rows, rows)
    tables = parse_tables(text)
    assert len(tables) == 1
    check_table(tables[0], mapping, rows)
    return doc, tables[0], text


# --------------------------------------------------------------------------------------------
# plan


# where each operating-point CSV column lives in a plan's JSON document
OPERATING_JSON = {
    "operating_rate_rps": ("rate_rps",),
    "ttft_p90_s": ("ttft_p90_s",),
    "link_utilisation_at_operating_rate": ("link_utilisation_at_operating_rate",),
    "usd_per_hour_operating": ("cost", "usd_per_hour"),
    "usd_per_mtok_output": ("cost", "usd_per_mtok_output"),
    "usd_per_mtok_blended": ("cost", "usd_per_mtok_blended"),
    "power_kw": ("cost", "power_kw"),
    "joules_per_output_token": ("cost", "joules_per_output_token"),
    "link_operating_usd_per_hour": ("cost", "link_usd_per_hour"),
}


def _at(doc: dict, path: tuple[str, ...]):
    for key in path:
        doc = doc[key]
    return doc


def plan_rows(doc: dict) -> list[dict]:
    """The deployment rows of a plan's JSON: the plan itself (with its identity and operating
    point), then the baselines (identity only)."""
    ident = {**doc["identity"], **doc["sources"]}
    operating = {k: _at(doc["operating"], path) for k, path in OPERATING_JSON.items()}
    return [
        {**ident, "deployment": "prfaas_pd", **doc["prfaas_pd"], **operating},
        *({**ident, "deployment": name, **b} for name, b in doc["baselines"].items()),
    ]


def baseline_extras(doc: dict) -> dict[int, dict]:
    """CSV fields a baseline's JSON does not hold: no baseline has the plan's per-stage throughputs.
    Its threshold and offloaded share are JSON fields, checked here against the baselines'
    definitions: homogeneous deployments offload nothing (p = 0, no threshold), naive
    heterogeneous offloads everything (p = 1 at threshold 0)."""
    extras = {}
    for i, (name, b) in enumerate(doc["baselines"].items(), start=1):
        offloaded = name == "naive_heterogeneous"
        assert (b["threshold_tokens"], b["p"]) == ((0.0, 1.0) if offloaded else (None, 0.0)), name
        extras[i] = {"theta_prfaas_rps": None, "theta_pdp_rps": None, "theta_pdd_rps": None, **dict.fromkeys(OPERATING_CSV)}
    return extras


@pytest.mark.parametrize("mode", ["exact", "paper"])
def test_plan_columns_show_their_json_fields(run_cli, mode):
    """plan: CSV keys (in their documented order) and table headers of the deployment rows and
    of the latency section show the JSON fields they name."""
    doc, header, csv_rows, text = three_formats(run_cli, "plan", "--mode", mode)
    assert doc["mode"] == mode
    rows = plan_rows(doc)
    assert header == PLAN_CSV
    extras = baseline_extras(doc)
    check_csv(header, csv_rows, rows, extras)
    tables = parse_tables(text)
    check_meta(text, doc, ["scenario", "model", "mode"])
    check_table(table_titled(tables, "PrfaaS plan:"), PLAN_TABLE, [{**extras.get(i, {}), **r} for i, r in enumerate(rows)])
    latency = doc["latency"]
    latency_rows = [{**latency["operating"], "deployment": "operating"}, *latency["at_common_rate"].values()]
    check_table(table_titled(tables, "Latency (closed form)"), LATENCY_TABLE, latency_rows)
    assert [t.title for t in tables][1] == "Operating point"


def test_plan_link_utilisation_against_usable_bandwidth(run_cli, case_study_file, tmp_path):
    """With half of the link usable, link_utilisation = egress / (bandwidth x usable fraction),
    and the operating point states the usable and the raw bandwidth."""
    bandwidth = case_study_doc()["link"]["bandwidth_gbps"]
    scenario = case_study_file(tmp_path, link__usable_fraction=0.5)
    res = run_cli("plan", scenario, "-f", "json")
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    pd = doc["prfaas_pd"]
    assert pd["egress_gbps"] > 0
    assert pd["link_utilisation_at_capacity"] == pytest.approx(pd["egress_gbps"] / (bandwidth * 0.5), rel=1e-3)
    assert doc["link"]["bandwidth_gbps"] == pytest.approx(bandwidth)
    assert doc["link"]["usable_gbps"] == pytest.approx(bandwidth * 0.5)
    assert doc["link"]["usable_fraction"] == 0.5

    res = run_cli("plan", scenario)
    assert res.code == 0, res.err
    point = table_titled(parse_tables(res.out), "Operating point")
    items = {item: value for item, value in point.rows}
    egress = items["egress"]
    m = re.fullmatch(r"(\S+) Gbps = (\S+)% of the usable (\S+) Gbps \(link (\S+) Gbps x usable fraction (\S+)\)", egress)
    assert m, egress
    assert_cell_shows(m[1], pd["egress_gbps"], Col("egress_gbps"), "operating point egress")
    assert_cell_shows(
        m[2], pd["link_utilisation_at_capacity"], Col("link_utilisation_at_capacity", scale=100), "operating point utilisation"
    )
    assert float(m[3]) == pytest.approx(bandwidth * 0.5)
    assert float(m[4]) == pytest.approx(bandwidth)
    assert float(m[5]) == 0.5


# --------------------------------------------------------------------------------------------
# kv, decode


@pytest.mark.parametrize("lengths", [None, "2K,100000,64k"])
def test_kv_columns_show_their_json_fields(run_cli, lengths):
    """kv: every column shows its field; the fields hold what their names say (MiB = 2^20 B,
    Phi_kv = S_kv / T_prefill in decimal Gbps); the rows are the lengths asked for."""
    args = ("kv", "minimax-m2.5", "--hardware", "h200", *(("--lengths", lengths) if lengths else ()))
    doc, _, text = check_rows_report(run_cli, args, KV_TABLE)
    check_meta(text, doc, ["model", "hardware", "gpus", "source"])
    from prfaas_plan.units import parse_token_list

    assert [r["length_tokens"] for r in doc["rows"]] == parse_token_list(lengths or "1K,8K,32K,128K", field="--lengths")
    for r in doc["rows"]:
        assert r["kv_mib"] == pytest.approx(r["kv_bytes"] / 2**20, abs=1e-3)
        assert r["phi_kv_gbps"] == pytest.approx(r["kv_bytes"] * 8 / r["prefill_s"] / 1e9, rel=1e-5)


@pytest.mark.parametrize("limit", [(), ("--tpot-ms", "30")])
def test_decode_columns_show_their_json_fields(run_cli, limit):
    """decode: every column shows its field; weights are in decimal GB and KV per request in
    MiB, as the model list states them for the same model; tokens/s = batch / T_decode. With a
    TPOT limit the batch is below the memory bound, so those two columns differ."""
    args = ("decode", "kimi-k2", "--hardware", "h20", "--gpus", "16", *limit)
    doc, _, text = check_rows_report(run_cli, args, DECODE_TABLE)
    check_meta(text, doc, ["model", "instance", "source"])
    (row,) = doc["rows"]
    assert row["context_tokens"] == 32 * 1024  # the default --context 32K
    parallel = doc["parallel"]  # the layout's parts: tp, dp_attention, ep, pp, replicas
    assert parallel["tp"] * parallel["dp_attention"] * parallel["pp"] * parallel["replicas"] == 16
    models = {m["model"]: m for m in json.loads(run_cli("models", "list", "-f", "json").out)["rows"]}
    model = models["kimi-k2"]
    # 16 chips share the weights (the attention copies of DP attention on top): at least 1/16 of them each
    assert model["weight_gb"] / 16 - 0.05 <= row["weight_gb_per_chip"] <= model["weight_gb"] / 16 * 1.5
    kv_mib = model["kv_bytes_per_token"] * row["context_tokens"] / 2**20 + model["window_cap_mib"] + model["fixed_state_mib"]
    # MLA's latent is held whole by each chip of an attention group; the fullest pipeline stage holds
    # ceil(61 / pp) of Kimi K2's 61 layers (all MLA, so all with the same KV)
    assert row["kv_per_request_mib_per_chip"] == pytest.approx(kv_mib * math.ceil(61 / parallel["pp"]) / 61, abs=2e-3)
    assert row["tpot_ms"] == pytest.approx(row["step_ms"], rel=1e-9)  # one token per step
    assert row["per_user_tokens_per_s"] == pytest.approx(1e3 / row["tpot_ms"], rel=1e-4)
    assert row["batch_requests"] <= row["bs_max_memory_requests"]
    if limit:
        assert row["step_ms"] <= float(limit[1])
        assert row["batch_requests"] < row["bs_max_memory_requests"]
    if doc["source"] == "roofline":
        assert row["tokens_per_s"] == pytest.approx(row["batch_requests"] / (row["step_ms"] / 1e3), rel=1e-4)


ESTIMATE_TABLE = {
    "input": "input_tokens",
    "output": "output_tokens",
    "concurrency": "concurrency_requests",
    "TTFT (s)": "ttft_s",
    "TPOT (ms)": "tpot_ms",
    "prefill tok/s/GPU": "prefill_tokens_per_s_per_gpu",
    "decode tok/s/GPU": "decode_tokens_per_s_per_gpu",
    "tok/s/user": "per_user_tokens_per_s",
    "e2e tok/s/GPU": "e2e_output_tokens_per_s_per_gpu",
    "e2e latency (s)": "e2e_latency_s",
}
RANGE_TABLE = {
    "figure": "figure",
    "low": "low",
    "model": "value",
    "high": "high",
    "group": "group",
    "residuals": "pool",
    "rows": "rows",
}
BUDGET_TABLE = {
    "pass": "job",
    "layout": "layout",
    "tokens": "tokens",
    "time (ms)": "ms",
    "compute": "compute_ms",
    "memory": "memory_ms",
    "communication": "communication_ms",
    "overhead": "overhead_ms",
    "binds": "binding",
    "scale-up GB/chip": "scale_up_gb_per_chip",
    "NIC GB/chip": "nic_gb_per_chip",
}


def test_estimate_columns_show_their_json_fields(run_cli):
    """estimate: the headline table and CSV show the JSON row; the budget table shows the JSON
    budget; per-GPU figures are the instance's over its chips; a budget's parts add up to its time."""
    args = ("estimate", "deepseek-v3", "-H", "h200", "-g", "8", "-i", "2K", "-O", "512", "-P", "ep=8,dp_attention=8")
    doc, header, csv_rows, text = three_formats(run_cli, *args)
    check_meta(text, doc, ["model", "instance", "gpus"])
    rows = doc["rows"]
    assert len(rows) == 1 and list(rows[0]) == header
    check_csv(header, csv_rows, rows)
    headline, ranges, budget = parse_tables(text)
    check_table(headline, ESTIMATE_TABLE, rows)
    check_table(ranges, RANGE_TABLE, doc["ranges"])
    check_table(budget, BUDGET_TABLE, doc["budget"])
    (row,) = rows
    assert (row["input_tokens"], row["output_tokens"]) == (2048, 512)
    for key in ("prefill_tokens_per_s", "decode_tokens_per_s", "e2e_output_tokens_per_s"):
        assert row[f"{key}_per_gpu"] == pytest.approx(row[key] / 8, rel=1e-6)
    assert row["per_user_tokens_per_s"] == pytest.approx(1e3 / row["tpot_ms"], rel=1e-4)
    for b in doc["budget"]:
        # each part and the total are rounded to 1e-4 ms
        assert b["compute_ms"] + b["memory_ms"] + b["communication_ms"] + b["overhead_ms"] == pytest.approx(b["ms"], abs=3e-4)
        parts = {
            "compute": b["compute_ms"],
            "memory": b["memory_ms"],
            "communication": b["communication_ms"],
            "overhead": b["overhead_ms"],
        }
        assert b["binding"] == max(parts, key=parts.get)
    jobs = {b["job"]: b for b in doc["budget"]}
    assert jobs["decode step"]["ms"] == pytest.approx(row["tpot_ms"], rel=1e-4)  # one token per step
    assert jobs["first token"]["ms"] == pytest.approx(row["ttft_s"] * 1e3, rel=1e-4)


def test_decode_weights_in_decimal_gb(run_cli):
    """decode: weight_gb_per_chip is a chip's weight bytes / 1e9 (not GiB); on one chip, all of them."""
    from prfaas_plan.accounting.params import weight_bytes

    res = run_cli("decode", "qwen3-8b", "--hardware", "h200", "--gpus", "1", "-f", "json")
    assert res.code == 0, res.err
    (row,) = json.loads(res.out)["rows"]
    assert row["weight_gb_per_chip"] == pytest.approx(weight_bytes(api.model_of("qwen3-8b")) / 1e9, abs=1e-3)


# --------------------------------------------------------------------------------------------
# models list, hardware list


def test_models_list_columns_show_their_json_fields(run_cli):
    """models list: every column shows its field; one row per shipped model; weights in decimal GB."""
    from prfaas_plan.accounting.params import count_params, weight_bytes

    doc, _, _ = check_rows_report(run_cli, ("models", "list"), MODELS_TABLE)
    profiles = {m.name: m for m in api.models()}
    assert [r["model"] for r in doc["rows"]] == list(profiles)
    for r in doc["rows"]:
        m = profiles[r["model"]]
        assert r["weight_gb"] == pytest.approx(weight_bytes(m) / 1e9, abs=0.05 + 1e-9)
        assert r["params_total_billions"] == pytest.approx(count_params(m).total / 1e9, abs=0.005 + 1e-9)
        assert r["params_active_billions"] == pytest.approx(count_params(m).active / 1e9, abs=0.005 + 1e-9)
        assert r["max_context_tokens"] == m.max_context_tokens


def test_hardware_list_columns_show_their_json_fields(run_cli):
    """hardware list: every column shows its field, and every field is the profile's own figure
    (null where a precision or a price is not given)."""

    doc, _, _ = check_rows_report(run_cli, ("hardware", "list"), HARDWARE_TABLE)
    profiles = {h.name: h for h in api.hardware_profiles()}
    assert [r["hardware"] for r in doc["rows"]] == list(profiles)
    for r in doc["rows"]:
        h = profiles[r["hardware"]]
        e = h.efficiency
        assert (r["bf16_tflops"], r["fp8_tflops"], r["fp4_tflops"]) == (h.peak_tflops.bf16, h.peak_tflops.fp8, h.peak_tflops.fp4)
        assert (r["memory_gib"], r["bandwidth_tb_per_s"], r["scale_up_gb_per_s"]) == (
            h.memory_gib,
            h.memory_bandwidth_tb_per_s,
            h.scale_up_gb_per_s,
        )
        assert (r["eff_matmul"], r["eff_attention"], r["eff_memory"], r["prefill_overhead_s"]) == (
            e.matmul,
            e.attention,
            e.memory,
            e.prefill_overhead_s,
        )
        assert r["usd_per_gpu_hour"] == h.price_usd_per_gpu_hour


# --------------------------------------------------------------------------------------------
# sweep


@pytest.mark.parametrize(
    "over, extra",
    [
        ("threshold", ("--points", "20")),
        ("np", ()),
        ("bandwidth", ("--points", "5")),
        ("rate", ("--points", "5")),
        ("instances", ()),
    ],
)
def test_sweep_columns_show_their_json_fields(run_cli, over, extra):
    """sweep: the table rounds, CSV and JSON keep the values; each column is labelled with its
    key; the default format is CSV."""
    args = ("sweep", "--over", over, *extra)
    mapping = {key: Col(key, labels=WHAT_IF_LABELS) if key == "beyond_link" else key for key in SWEEP_KEYS[over]}
    _, table, _ = check_rows_report(run_cli, args, mapping)
    assert table.title == "Sweep over " + over + ": paper-case-study"
    default = run_cli(*args)
    assert default.code == 0, default.err
    assert default.out == run_cli(*args, "-f", "csv").out


# --------------------------------------------------------------------------------------------
# calibrate


def test_calibrate_columns_show_their_json_fields(run_cli):
    """calibrate: every column shows its field; measured times and KV bytes are the points file's;
    error % = 100 x (fitted / measured - 1)."""
    from prfaas_plan.units import parse_tokens

    doc, _, text = check_rows_report(run_cli, CALIBRATE, CALIBRATION_TABLE)
    check_meta(text, doc, ["model", "hardware", "instance"])
    with open(DATA / "table5_h200_prfaas_1t.csv", newline="") as fh:
        points = list(csv.DictReader(fh))
    assert [r["length_tokens"] for r in doc["rows"]] == [parse_tokens(p["length"], field="length") for p in points]
    for r, p in zip(doc["rows"], points):
        assert r["measured_s"] == pytest.approx(float(p["prefill_s"]))
        assert r["measured_kv_bytes"] == pytest.approx(float(p["kv_bytes"]))
        assert r["error_pct"] == pytest.approx(100 * (r["predicted_s"] / r["measured_s"] - 1), abs=2e-3)


# --------------------------------------------------------------------------------------------
# validate-model, simulate


@pytest.mark.slow
def test_validate_model_columns_show_their_json_fields(run_cli):
    """validate-model: every column shows its field, the three Δ columns each their own
    difference, (closed - simulated) / simulated."""
    doc, _, _ = check_rows_report(run_cli, ("validate-model", "-n", "300"), VALIDATION_TABLE)
    for r in doc["rows"]:
        assert r["closed_throughput_rps"] <= r["rate_rps"]
        pairs = [
            ("throughput_diff_fraction", "closed_throughput_rps", "sim_throughput_rps"),
            ("ttft_mean_diff_fraction", "closed_ttft_mean_s", "sim_ttft_mean_s"),
            ("ttft_p90_diff_fraction", "closed_ttft_p90_s", "sim_ttft_p90_s"),
        ]
        for diff, closed, sim in pairs:
            if r[diff] is not None:
                assert r[diff] == pytest.approx((r[closed] - r[sim]) / r[sim], abs=1e-3), diff


@pytest.mark.slow
def test_simulate_columns_show_their_json_fields(run_cli):
    """simulate: each table column shows the JSON's TTFT / TPOT / closed-form field of its path;
    the CSV is the time series, one column per ``timeseries.COLUMNS`` name, equal to the run's."""
    from prfaas_plan.simulate.timeseries import COLUMNS

    res = run_cli("simulate", "-n", "300", "-f", "json")
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    res = run_cli("simulate", "-n", "300")
    assert res.code == 0, res.err
    tables = parse_tables(res.out)
    assert len(tables) == 1
    paths = ["local", "remote", "overall"]
    assert set(doc["ttft"]) == set(doc["tpot"]) == set(doc["closed_form"]) == set(paths)
    rows = [{"path": p, "ttft": doc["ttft"][p], "tpot": doc["tpot"][p], "closed_form": doc["closed_form"][p]} for p in paths]
    check_table(tables[0], SIMULATION_TABLE, rows)

    res = run_cli("simulate", "-n", "300", "-f", "csv")
    assert res.code == 0, res.err
    header, *cells = list(csv.reader(io.StringIO(res.out)))
    ident = [*IDENTITY_CSV, "deployment"]
    assert tuple(header) == (*ident, *COLUMNS)  # the JSON's series names, queues in waiting requests
    assert all(
        row[: len(ident)] == ["paper-case-study", "prfaas-1t-hybrid", "h200", "8", "h20", "8", "", "", "100.0", "prfaas_pd"]
        for row in cells
    )
    series = api.simulate("paper-case-study", requests=300).result.to_json_dict()["timeseries"]
    assert cells and all(len(series[k]) == len(cells) for k in COLUMNS)
    check_csv(
        list(COLUMNS),
        [dict(zip(COLUMNS, row[len(ident) :])) for row in cells],
        [{k: series[k][i] for k in COLUMNS} for i in range(len(cells))],
    )


# --------------------------------------------------------------------------------------------
# compare

COMPARE_TABLE = {
    "#": "rank",
    "front": "front",
    "PrfaaS / PD / decode": "pools",
    "model": "model",
    "Gbps": "link_gbps",
    "chips": "chips",
    "N_f/N_p/N_d": "counts",
    "Λ_max req/s": "capacity_rps",
    "req/s range": "capacity_range",
    "$/Mtok range": "usd_mtok_range",
    "vs best": "versus_best",
    "colo": "ratio_vs_colocated",
    "$/h": "usd_per_hour",
    "$/Mtok out": "usd_per_mtok_output",
    "TTFT P90 s": "ttft_p90_s",
    "kW": "power_kw",
    "status": "status",
}


def test_compare_columns_show_their_json_fields(run_cli):
    """compare: every CSV cell and every table cell is the JSON field of its option row."""
    doc, header, csv_rows, text = three_formats(run_cli, "compare", "--prfaas", "h200,b200", "--jobs", "1")
    rows = doc["options"]
    assert [r["rank"] for r in rows] == [1, 2]
    check_csv(header, csv_rows, rows)
    check_meta(text, doc, ["scenario", "objective", "basis"])
    check_table(table_titled(parse_tables(text), "Compare:"), COMPARE_TABLE, rows)


def test_piped_tables_are_not_cut(run_cli):
    """Piped output (not a terminal) is rendered at full width: no '...' in a name, every column."""
    out = run_cli("hardware", "list").out
    for name in ("groq-lpu", "rubin-cpx", "mi355x"):
        assert re.search(rf"^\s+{re.escape(name)}\s", out, re.M), name
    assert "…" not in out and "$/GPU-h (example)" in out
    assert "…" not in run_cli("plan").out


def test_sweep_table_rounds_its_numbers(run_cli):
    """The sweep's table shows rounded figures; its CSV keeps the values."""
    table = run_cli("sweep", "--over", "bandwidth", "--points", "3", "-f", "table").out
    assert not re.search(r"\.\d{6,}", table), table  # at most 4 significant digits
    assert re.search(r"19,\d{3}", table)  # thresholds as token counts with separators
    csv_out = run_cli("sweep", "--over", "bandwidth", "--points", "3", "-f", "csv").out
    assert csv_out.splitlines()[0].endswith(",link_gbps,usable_gbps,threshold_tokens,p,lambda_max_rps,egress_gbps,beyond_link")


def test_a_bandwidth_sweep_beyond_the_link_marks_its_rows_what_if(run_cli):
    """sweep --over bandwidth past the case study's usable 100 Gbps: those rows are beyond_link (the
    table says what-if, with route-table's note), the rest are not."""
    args = ("sweep", "--over", "bandwidth", "--from", "50", "--to", "200", "--points", "4")
    rows = json.loads(run_cli(*args, "-f", "json").out)["rows"]
    assert [(r["usable_gbps"], r["beyond_link"]) for r in rows] == [(50.0, False), (100.0, False), (150.0, True), (200.0, True)]
    table = run_cli(*args, "-f", "table").out
    assert table.count("what-if") == 3 and "above the link's usable 100 Gbps" in table  # two rows and the note
    assert "what-if" not in run_cli("sweep", "--over", "bandwidth", "--to", "100", "--points", "3", "-f", "table").out


def test_each_deployment_row_counts_the_instances_it_buys(run_cli):
    """instances = n_prfaas + n_p + n_d for the split deployments; the co-located baseline's N_p =
    N_d = N are the same N instances, so its row says N, not 2N (a spreadsheet summing n_p and n_d
    would double them)."""
    rows = {r["deployment"]: r for r in csv.DictReader(io.StringIO(run_cli("plan", "-f", "csv").out))}
    for name, r in rows.items():
        n_f, n_p, n_d = (int(r[k]) for k in ("n_prfaas", "n_p", "n_d"))
        assert int(r["instances"]) == (n_p if name == "colocated" else n_f + n_p + n_d), name
    assert rows["colocated"]["n_p"] == rows["colocated"]["n_d"] == rows["colocated"]["instances"]
