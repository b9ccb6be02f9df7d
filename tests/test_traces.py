"""Request traces in the public formats (``workload.traces``): each reads to the rows written
in the file (checked by hand or by ``json``), a bad line is named by its line, the format is
told from the first line, and a trace plans jointly (``workload.joint``)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from conftest import DATA, write_case_study

from prfaas_plan.choices import TraceFormat
from prfaas_plan.errors import PlanInputError
from prfaas_plan.workload.joint import joint_lengths
from prfaas_plan.workload.traces import detect_format, read_trace
from prfaas_plan.workload.traces.record import Trace

TRACES = DATA / "traces"
MOONCAKE = TRACES / "mooncake-conversation-5min.jsonl"
AZURE = TRACES / "azure-2023-synthetic.csv"
BURSTGPT = TRACES / "burstgpt-synthetic.csv"


def test_mooncake_slice_reads_every_field_as_json_does():
    rows = [json.loads(line) for line in MOONCAKE.read_text().splitlines()]
    trace = read_trace(MOONCAKE)
    assert trace.format == TraceFormat.mooncake and len(trace) == len(rows) == 918
    assert trace.input_tokens.tolist() == [r["input_length"] for r in rows]
    assert trace.output_tokens.tolist() == [r["output_length"] for r in rows]
    assert trace.arrival_s.tolist() == [r["timestamp"] / 1000 for r in rows]
    assert all(trace.blocks_of(i).tolist() == r["hash_ids"] for i, r in enumerate(rows))
    assert trace.block_tokens == 512
    assert trace.rate_rps() == len(rows) / (rows[-1]["timestamp"] / 1000 - rows[0]["timestamp"] / 1000)


def test_mooncake_blocks_of_any_size_read_the_same(monkeypatch):
    """A block boundary inside the file (here every ~4 KiB) changes nothing."""
    from prfaas_plan.workload.traces import blocks

    whole = read_trace(MOONCAKE)
    monkeypatch.setattr(blocks, "BLOCK_BYTES", 4096)
    monkeypatch.setattr(blocks.blocks, "__defaults__", (4096,))
    pieces = read_trace(MOONCAKE)
    for name in ("arrival_s", "input_tokens", "output_tokens", "hash_ids", "hash_offsets"):
        assert np.array_equal(getattr(whole, name), getattr(pieces, name)), name


def test_azure_rows_by_hand():
    trace = read_trace(AZURE)
    assert trace.format == TraceFormat.azure and len(trace) == 40
    # 2023-11-16 18:15:46.6805900, 1912, 371 / 18:15:47.2599144, 7632, 52 / 18:15:47.5347350, 313, 464
    assert trace.input_tokens[:3].tolist() == [1912, 7632, 313]
    assert trace.output_tokens[:3].tolist() == [371, 52, 464]
    assert trace.arrival_s[:3] == pytest.approx([0.0, 0.5793244, 0.854145], abs=1e-9)
    assert trace.cached_tokens is None and trace.hash_ids is None


def test_azure_2024_offsets_are_applied(tmp_path):
    path = tmp_path / "azure2024.csv"
    path.write_text(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
        "2024-05-10 00:00:00.009930+00:00,100,10\n"
        "2024-05-10 02:00:01.009930+02:00,200,20\n"  # 00:00:01 UTC
    )
    assert read_trace(path).arrival_s.tolist() == pytest.approx([0.0, 1.0])


def test_burstgpt_rows_by_hand_keep_failed_requests():
    trace = read_trace(BURSTGPT)
    assert trace.format == TraceFormat.burstgpt and len(trace) == 40
    # 0,GPT-4,1206,274,... / 1,GPT-4,424,314,... / 4,ChatGPT,522,77,...
    assert trace.arrival_s[:3].tolist() == [0.0, 1.0, 4.0]
    assert trace.input_tokens[:3].tolist() == [1206, 424, 522]
    assert trace.output_tokens[:3].tolist() == [274, 314, 77]
    assert (trace.output_tokens == 0).sum() == 2  # the two failed requests (Response tokens 0)


def test_splitwise_distserve_and_coding_agent_by_hand(tmp_path):
    split = tmp_path / "rr_code_50.csv"
    split.write_text(
        "request_id,request_type,application_id,arrival_timestamp,batch_size,prompt_size,token_size\n"
        "0,2,0,0.5,1,1024,20\n1,2,0,0.75,1,2048,7\n"
    )
    t = read_trace(split)
    assert (t.format, t.arrival_s.tolist(), t.input_tokens.tolist(), t.output_tokens.tolist()) == (
        TraceFormat.splitwise,
        [0.0, 0.25],
        [1024, 2048],
        [20, 7],
    )
    dist = tmp_path / "distserve-100-1.exp"
    dist.write_text(
        '[{"prompt_len": 55, "output_len": 4, "start_time": 0.0}, {"prompt_len": 829, "output_len": 170, "start_time": 1.5}]'
    )
    t = read_trace(dist)
    assert (t.format, t.arrival_s.tolist(), t.input_tokens.tolist(), t.output_tokens.tolist()) == (
        TraceFormat.distserve,
        [0.0, 1.5],
        [55, 829],
        [4, 170],
    )
    agent = tmp_path / "shard-0000.jsonl"
    call = lambda ts, p, c, k: {"timestamp": ts, "tokens": {"prompt": p, "completion": c, "cached": k, "total": p + c}}  # noqa: E731
    sessions = [
        {"session_id": "a", "turns": [{"llm_calls": [call("2026-06-01T10:00:02Z", 5000, 100, 4000)], "tool_batches": []}]},
        {"session_id": "b", "turns": [{"llm_calls": [call("2026-06-01T10:00:00Z", 3000, 50, 0)]}, {"llm_calls": []}]},
    ]
    agent.write_text("\n".join(json.dumps(s) for s in sessions) + "\n")
    t = read_trace(agent)
    assert t.format == TraceFormat.coding_agent
    assert t.arrival_s.tolist() == [0.0, 2.0]  # the sessions interleave: sorted by arrival
    assert (t.input_tokens.tolist(), t.output_tokens.tolist(), t.cached_tokens.tolist()) == ([3000, 5000], [50, 100], [0, 4000])


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        (
            "m.jsonl",
            '{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [0]}\n'
            '{"timestamp": 5, "input_length": "ten", "output_length": 1, "hash_ids": [0]}\n',
            "line 2: input_length: 'ten' is not a number",
        ),
        (
            "m.jsonl",
            '{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [0]}\n\n'
            '{"timestamp": 5, "input_length": 0, "output_length": 1, "hash_ids": [0]}\n',
            "line 3: input_length: 0 is below 1",
        ),
        (
            "m.jsonl",
            '{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [0]}\n{"timestamp": 1,\n',
            "line 2: not a JSON",
        ),
        (
            "a.csv",
            "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,10,2\n2023-11-16 18:15:47.1,10.5,2\n",
            "line 3: ContextTokens: 10.5 is not a whole number of tokens",
        ),
        (
            "a.csv",
            "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,10,2\nyesterday,10,2\n",
            "line 3: TIMESTAMP: 'yesterday' is not a date and time",
        ),
        (
            "b.csv",
            "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n0,ChatGPT,5,1,6,API log\n1,ChatGPT,5\n",
            "line 3: expected 6 columns, found 3",
        ),
        (
            "b.csv",
            "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n0,ChatGPT,5,-1,4,API log\n",
            "line 2: Response tokens: -1 is below 0",
        ),
    ],
)
def test_a_bad_line_is_named_with_its_field(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(PlanInputError) as err:
        read_trace(path)
    assert str(err.value).startswith(f"{path}: {message}")


def test_format_is_detected_and_an_override_wins(tmp_path):
    assert [detect_format(p) for p in (MOONCAKE, AZURE, BURSTGPT)] == [
        TraceFormat.mooncake,
        TraceFormat.azure,
        TraceFormat.burstgpt,
    ]
    odd = tmp_path / "odd.csv"
    odd.write_text("when,prompt,reply\n1,2,3\n")
    with pytest.raises(PlanInputError, match="cannot tell the trace's format"):
        read_trace(odd)
    with pytest.raises(PlanInputError, match="column 'TIMESTAMP' not found"):  # the override is used, not detection
        read_trace(BURSTGPT, "azure")


def test_window_and_take_keep_rows_and_blocks():
    trace = read_trace(MOONCAKE)
    part = trace.window(60.0, 120.0)
    inside = (trace.arrival_s >= 60.0) & (trace.arrival_s < 120.0)
    assert len(part) == int(inside.sum()) > 0
    assert part.input_tokens.tolist() == trace.input_tokens[inside].tolist()
    first = int(np.argmax(inside))
    assert part.blocks_of(0).tolist() == trace.blocks_of(first).tolist()


def test_joint_lengths_by_hand():
    """Two requests: (x 100, y 10, cached 40) and (x 1000, y 30, cached 0): routing lengths 60
    and 1000; decode context (10 x (100 + 5) + 30 x (1000 + 15)) / 40 = 787.5 tokens."""
    trace = Trace(
        "t",
        TraceFormat.coding_agent,
        np.array([0.0, 1.0]),
        np.array([100, 1000], dtype=np.int32),
        np.array([10, 30], dtype=np.int32),
        np.array([40, 0], dtype=np.int32),
    )
    j = joint_lengths(trace)
    assert j.input_dist.lengths_tokens.tolist() == [60.0, 1000.0]
    assert j.full_input_dist.lengths_tokens.tolist() == [100.0, 1000.0]
    assert j.output_by_input.tolist() == [10.0, 30.0]
    assert j.decode_context_tokens == 787.5


def _scenario(tmp_path, trace_path, fmt):
    return write_case_study(tmp_path, workload={"input": {"type": "trace", "path": str(trace_path), "format": fmt}})


@pytest.mark.parametrize(("path", "fmt"), [(MOONCAKE, "mooncake"), (AZURE, "azure"), (BURSTGPT, "auto")])
def test_each_trace_plans_jointly(tmp_path, path, fmt):
    """Λ_max's decode bound is N_d x 800 tokens/s over the trace's mean output (at least 1 token
    a request, by count); the class output means are those of the requests on each side of t."""
    from prfaas_plan import api

    trace = read_trace(path)
    result = api.plan(str(_scenario(tmp_path, path, fmt)))
    point = result.point
    out = np.maximum(trace.output_tokens, 1).astype(float)
    assert point.stages.theta_pdd == pytest.approx(point.n_d * 800 / out.mean(), rel=1e-12)
    long_out, short_out = result.inputs.workload.output_class_means(point.threshold_tokens)
    long = trace.input_tokens > point.threshold_tokens
    assert float(long_out) == pytest.approx(out[long].mean(), rel=1e-12)
    assert float(short_out) == pytest.approx(out[~long].mean(), rel=1e-12)
    assert point.p == pytest.approx(long.mean(), rel=1e-12)


def test_plan_prints_class_outputs_and_a_bad_trace_exits_2(tmp_path, run_cli):
    ok = run_cli("plan", _scenario(tmp_path, MOONCAKE, "mooncake"))
    assert ok.code == 0 and "output long / short" in ok.out
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        MOONCAKE.read_text().splitlines()[0] + '\n{"timestamp": 1, "input_length": -3, "output_length": 2, "hash_ids": []}\n'
    )
    (tmp_path / "b").mkdir()
    res = run_cli("plan", _scenario(tmp_path / "b", bad, "mooncake"))
    assert res.code == 2 and "Traceback" not in res.err
    assert f"{bad}: line 2: input_length: -3 is below 1" in res.err


def test_column_and_format_together_are_refused(tmp_path, run_cli):
    path = write_case_study(tmp_path, workload={"input": {"type": "trace", "path": str(AZURE), "format": "azure", "column": "x"}})
    res = run_cli("plan", path)
    assert res.code == 2 and "give column" in res.err


def test_without_format_a_trace_is_still_a_column_of_lengths(tmp_path):
    """The old reader, unchanged: a CSV column of lengths, output from workload.output."""
    from prfaas_plan import api

    path = write_case_study(
        tmp_path,
        workload={
            "input": {"type": "trace", "path": str(AZURE), "column": "ContextTokens"},
            "output": {"type": "fixed", "tokens": 1024},
        },
    )
    result = api.plan(str(path))
    assert result.inputs.workload.output_by_input is None and result.inputs.workload.output_mean_tokens == 1024
    assert not math.isnan(result.point.lambda_max)


# --- simulate --replay: the trace's arrivals and lengths, in order ---------------------------------


@pytest.fixture(scope="module")
def mooncake_scenario(tmp_path_factory):
    return str(_scenario(tmp_path_factory.mktemp("replay"), MOONCAKE, "mooncake"))


def _replayed(scenario, **options):
    from prfaas_plan import api

    return api.simulate(scenario, replay=True, **options).result.per_request


def test_replay_reproduces_the_mooncake_slice_by_count(mooncake_scenario):
    rows = [json.loads(line) for line in MOONCAKE.read_text().splitlines()]
    got = _replayed(mooncake_scenario)
    stamps_s = np.array([r["timestamp"] for r in rows]) / 1000
    assert got["arrival_s"].size == len(rows)
    span = stamps_s[-1] - stamps_s[0]
    assert got["arrival_s"].size / (got["arrival_s"][-1] - got["arrival_s"][0]) == pytest.approx(len(rows) / span, rel=1e-12)
    assert got["input_tokens"].mean() == pytest.approx(np.mean([r["input_length"] for r in rows]), rel=1e-12)
    assert got["output_tokens"].mean() == pytest.approx(np.mean([max(r["output_length"], 1) for r in rows]), rel=1e-12)
    assert got["input_tokens"].tolist() == [r["input_length"] for r in rows]  # in the file's order


def test_replay_speedup_scales_the_rate_and_a_window_selects_by_count(mooncake_scenario):
    rows = [json.loads(line) for line in MOONCAKE.read_text().splitlines()]
    fast = _replayed(mooncake_scenario, speedup=4.0)["arrival_s"]
    stamps_s = np.array([r["timestamp"] for r in rows]) / 1000
    assert fast.tolist() == pytest.approx(((stamps_s - stamps_s[0]) / 4.0).tolist())
    part = _replayed(mooncake_scenario, from_s=60.0, to_s=120.0)
    inside = [r for r in rows if 60_000 <= r["timestamp"] < 120_000]
    assert part["input_tokens"].tolist() == [r["input_length"] for r in inside]


@pytest.mark.parametrize(("path", "fmt"), [(AZURE, "azure"), (BURSTGPT, "burstgpt")])
def test_azure_and_burstgpt_replay(tmp_path, run_cli, path, fmt):
    scenario = _scenario(tmp_path, path, fmt)
    res = run_cli("simulate", scenario, "--replay", "--speedup", "2")
    assert res.code == 0, res.err
    trace = read_trace(path)
    got = _replayed(str(scenario), speedup=2.0)
    assert got["input_tokens"].tolist() == trace.input_tokens.tolist()
    assert got["output_tokens"].tolist() == np.maximum(trace.output_tokens, 1).tolist()


def test_replay_options_are_checked(tmp_path, run_cli, mooncake_scenario):
    res = run_cli("simulate", mooncake_scenario, "--replay", "--from", "400")
    assert res.code == 2 and "--from: no request of the trace arrives in [400, end)" in res.err
    res = run_cli("simulate", mooncake_scenario, "--replay", "--to", "0")
    assert res.code == 2 and "--to: no request of the trace arrives in [0, 0)" in res.err
    res = run_cli("simulate", mooncake_scenario, "--replay", "--rate", "2")
    assert res.code == 2 and "--rate" in res.err
    for option in (("--arrivals", "gamma"), ("--cv", "4"), ("--burst-factor", "3")):  # the trace's arrivals, not drawn ones
        res = run_cli("simulate", mooncake_scenario, "--replay", *option)
        assert res.code == 2 and f"do not give {option[0]}" in res.err, res.err
    res = run_cli("simulate", mooncake_scenario, "--replay", "--speedup", "0")
    assert res.code == 2 and "speedup" in res.err
    res = run_cli("simulate", mooncake_scenario, "--speedup", "2", "-n", "10")
    assert res.code == 2 and "give --replay too" in res.err
    lognormal = str(write_case_study(tmp_path))
    res = run_cli("simulate", lognormal, "--replay")
    assert res.code == 2 and "replay needs" in res.err


def test_a_json_trace_given_as_a_length_csv_asks_for_its_format():
    """A trace without ``format`` is a CSV of lengths; a JSON trace there is told to give its format
    (not to name a column of a 'CSV' split at the commas of its first JSON line)."""
    from prfaas_plan.workload.trace import read_length_trace

    with pytest.raises(PlanInputError, match=r"a JSON trace, not a CSV of lengths: give the trace's format \(mooncake"):
        read_length_trace(MOONCAKE)


def test_a_replay_writes_its_json_with_the_replayed_requests_in_figures(run_cli, mooncake_scenario):
    """``simulate --replay -f json`` (it crashed on the Replay's arrays): the config names the
    replayed requests by their count, span, rate and mean lengths, the file's by count."""
    rows = [json.loads(line) for line in MOONCAKE.read_text().splitlines()]
    res = run_cli("simulate", mooncake_scenario, "--replay", "-f", "json")
    assert res.code == 0, res.err
    replay = json.loads(res.out)["config"]["replay"]
    assert replay["requests"] == len(rows) == 918 and replay["span_s"] == pytest.approx(297.0)
    assert replay["rate_rps"] == pytest.approx(918 / 297.0, rel=1e-12)
    assert replay["mean_input_tokens"] == pytest.approx(np.mean([r["input_length"] for r in rows]), rel=1e-12)


# --- bad input the fast paths must not take, nor crash on (issue 19 review) ----------------------

_ROW = '{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [0, 1]}\n'
_AZURE_HEAD = "TIMESTAMP,ContextTokens,GeneratedTokens\n"


@pytest.mark.parametrize(
    ("name", "fmt", "text", "message"),
    [
        (  # a list without commas: the fast path's int parse fails, the slow path names the line
            "m.jsonl",
            "mooncake",
            _ROW + '{"timestamp": 5, "input_length": 10, "output_length": 1, "hash_ids": [1 2]}\n',
            "line 2: not a JSON object (Expecting ',' delimiter)",
        ),
        (  # a line cut short (its closing brace lost): every field is there, but it is not JSON
            "m.jsonl",
            "mooncake",
            _ROW + '{"timestamp": 5, "input_length": 10, "output_length": 1, "hash_ids": [0, 1]\n' + _ROW,
            "line 2: not a JSON object",
        ),
        ("m.jsonl", "mooncake", _ROW + '{"hash_ids": ' + "[" * 100_000 + "\n", "line 2: not a JSON object (nested too deeply"),
        (
            "m.jsonl",
            "mooncake",
            _ROW + '{"timestamp": 5, "input_length": 10, "output_length": 1, "hash_ids": [1' + "0" * 30 + "]}\n",
            "line 2: hash_ids: [1000",
        ),
        ("d.exp", "distserve", "[" * 100_000, "not JSON (nested too deeply to read)"),
        ("d.exp", "distserve", '[{"prompt_len": 1' + "0" * 400 + ', "output_len": 4, "start_time": 0}]', "[0]: prompt_len: 1000"),
        ("c.jsonl", "coding_agent", '{"turns": ' + "[" * 100_000 + "\n", "line 1: not a JSON object (nested too deeply"),
        (  # epoch seconds are not a date (numpy would read them as the year 1,700,000,000)
            "a.csv",
            "azure",
            _AZURE_HEAD + "1700000000,10,2\n1700000001,10,2\n",
            "line 2: TIMESTAMP: '1700000000' is not a date and time",
        ),
        (
            "a.csv",
            "azure",
            _AZURE_HEAD + "2024-05-10 00:00:00+00:00,10,2\n2024-05-10 00:00:01+25:99,10,2\n",
            "line 3: TIMESTAMP: '2024-05-10 00:00:01+25:99' is not a date and time (offset +25:99",
        ),
        (
            "a.csv",
            "azure",
            _AZURE_HEAD + "2024-05-10 00:00:00,10,2\n2024-05-10 00:00:01+14:01,10,2\n",
            "line 3: TIMESTAMP: '2024-05-10 00:00:01+14:01' is not a date and time (offset +14:01",
        ),
        ("a.csv", "azure", _AZURE_HEAD + "2024-05-10,10,2\n", "line 2: TIMESTAMP: '2024-05-10' is not a date and time"),
        (  # a time that is not finite: the number as written, not numpy's repr (np.float64(inf))
            "b.csv",
            "burstgpt",
            "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
            "0,ChatGPT,5,1,6,API log\ninf,ChatGPT,5,1,6,API log\n",
            "line 3: Timestamp: inf is not a finite time",
        ),
    ],
)
def test_bad_input_is_one_line_naming_file_line_and_field(tmp_path, run_cli, name, fmt, text, message):
    """Library: a PlanInputError naming the line; CLI: exit 2, that one line, no traceback, no
    internal error, no numpy warning."""
    import warnings

    path = tmp_path / name
    path.write_text(text)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(PlanInputError) as err:
            read_trace(path, fmt)
    assert str(err.value).startswith(f"{path}: {message}"), str(err.value)
    res = run_cli("plan", _scenario(tmp_path, path, fmt))
    lines = res.err.strip().splitlines()
    assert res.code == 2 and len(lines) == 1, res.err
    assert f"{path}: {message}" in lines[0] and "internal error" not in res.err and "np.float64" not in res.err


def test_azure_rows_with_and_without_an_offset_each_get_their_own(tmp_path):
    """A file mixing rows with and without an offset: each row's own offset (none: UTC), read
    without a numpy warning; by hand, 02:00:01+02:00 = 00:00:01 UTC, 23:30:02-01:30 = 01:00:02."""
    import warnings

    cells = [
        "2024-05-10 00:00:00",
        "2024-05-10 02:00:01+02:00",
        "2024-05-10T00:00:01.5Z",
        "2024-05-09 23:30:02-0130",
        "2024-05-10 14:00:03+14:00",
    ]
    from prfaas_plan.workload.traces.timestamps import utc_ns

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = (utc_ns(np.array(cells)) - utc_ns(np.array(cells[:1]))[0]) / 1e9
    assert got.tolist() == [0.0, 1.0, 1.5, 3602.0, 3.0]
    path = tmp_path / "mixed.csv"
    path.write_text(_AZURE_HEAD + "2024-05-10 00:00:00.25,10,2\n2024-05-10 02:00:01.25+02:00,10,2\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy warns on a time-zone it parses itself
        assert read_trace(path, "azure").arrival_s.tolist() == [0.0, 1.0]


def test_a_one_instant_replay_window_is_refused_and_a_replay_report_says_so(run_cli, mooncake_scenario):
    from prfaas_plan import api
    from prfaas_plan.simulate.replay import replay_of

    trace = read_trace(MOONCAKE)
    rows = [json.loads(line) for line in MOONCAKE.read_text().splitlines()]
    stamp_s = rows[100]["timestamp"] / 1000
    at_once = sum(r["timestamp"] == rows[100]["timestamp"] for r in rows)  # requests of that millisecond
    with pytest.raises(PlanInputError, match=rf"{at_once} request\(s\) of the trace arrive in .*all at one instant") as err:
        replay_of(trace, from_s=stamp_s, to_s=stamp_s + 1e-4)
    assert err.value.field == "to_s"
    one = trace.take(np.arange(1))
    assert one.rate_rps() == math.inf  # a single request: no span, no rate
    with pytest.raises(PlanInputError, match="1 request"):
        replay_of(one)
    res = run_cli("simulate", mooncake_scenario, "--replay", "--from", str(stamp_s), "--to", str(stamp_s + 1e-4))
    assert res.code == 2 and "--to:" in res.err and "nan" not in res.err and len(res.err.strip().splitlines()) == 1
    # a replay's report: what was replayed, not a drawn process; its rate is requests / span x speedup
    res = run_cli("simulate", mooncake_scenario, "--replay", "--speedup", "2", "--from", "60", "--to", "120")
    assert res.code == 0, res.err
    inside = [r["timestamp"] / 1000 for r in rows if 60_000 <= r["timestamp"] < 120_000]
    rate = 2 * len(inside) / (inside[-1] - inside[0])
    assert f"arrivals: the trace {MOONCAKE} replayed, 2x, window [60, 120) s" in res.out
    assert f"rates: replayed {rate:.3f} req/s (the trace's requests / span x speedup 2" in res.out
    assert "poisson" not in res.out and "arrival process's mean" not in res.out
    doc = api.simulate(mooncake_scenario, replay=True, speedup=2.0, from_s=60.0, to_s=120.0).result.to_json_dict()
    assert doc["config"]["replay"] == {
        "source": str(MOONCAKE),
        "speedup": 2.0,
        "from_s": 60.0,
        "to_s": 120.0,
        "requests": len(inside),
        "span_s": pytest.approx((inside[-1] - inside[0]) / 2, rel=1e-12),
        "rate_rps": pytest.approx(rate, rel=1e-12),
        "mean_input_tokens": pytest.approx(np.mean([r["input_length"] for r in rows if 60_000 <= r["timestamp"] < 120_000])),
        "mean_output_tokens": pytest.approx(
            np.mean([max(r["output_length"], 1) for r in rows if 60_000 <= r["timestamp"] < 120_000])
        ),
    }


def test_a_missing_trace_file_is_named_from_the_scenario(tmp_path, run_cli):
    """A trace path that does not exist: one line naming the scenario file and workload.input.path."""
    scenario = _scenario(tmp_path, tmp_path / "nope.jsonl", "mooncake")
    res = run_cli("plan", scenario)
    assert res.code == 2 and len(res.err.strip().splitlines()) == 1
    assert f"{scenario}: workload.input.path: no trace file" in res.err and "nope.jsonl" in res.err
