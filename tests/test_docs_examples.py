"""Every example of a command's output in README.md and docs/*.md is that command's real output.

An example is a plain ``` block or a Markdown table. Its command is named either on the block's
first line (``$ prfaas-plan ...``, the rest of the block is the output) or in the paragraph just
before it, as the last `prfaas-plan ...` (or `python benchmarks/published.py`) span there or the
last command of a ```bash block just before. Each
such example is run (in-process, each command once per session) and compared:

- a block, line by line: each shown line (blank lines, table rules and ``...`` excepted) is an
  output line, in the output's order, whose numbers include the shown line's numbers in order
  (exactly as printed) and whose words include its words in order;
- a table, row by row: the row's numbers are in the output's row of the same name, in order, to
  the digits the page shows (tables round); two tables whose columns are runs of their own
  (compare's ``--basis`` columns, simulate's arrivals and policy) build each cell's command.

Every command of a ```bash block (``prfaas-plan ...``, ``python -m prfaas_plan ...`` or
``python benchmarks/published.py ...``) is run too and must exit 0. The commands run in a scratch
folder that sees the repository's ``tests/``, ``prfaas_plan/`` and ``benchmarks/``, so a command
that writes a file (``calibrate -o h200-mystack.yaml``) writes it there.

A block that cannot run in a test (its output depends on timing, it installs a package or runs
the suite) opts out with the comment ``<!-- docs-example: not run (REASON) -->`` on the line
before it; the opted-out blocks are listed here (``OPTED_OUT``), so an opt-out cannot hide
unnoticed. A plain block that names no command must hold only error lines of hypothetical inputs
(``prfaas-plan: error: ...``). The README stays at most 250 lines, and it and docs/README.md link
every page.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO, write_case_study

OPT_OUT = re.compile(r"<!-- docs-example: not run \(([^)]+)\) -->")
# (page, first command of the block) -> reason; the README's set-up commands run in test_setup's
# fresh virtual environment, and the suite's own commands would run the suite inside itself
OPTED_OUT: dict[tuple[str, str], str] = {
    ("README.md", "python -m pip install . && prfaas-plan plan"): "set-up: tests/test_setup.py runs it in a fresh venv",
    ("README.md", 'python -m pytest -m "not slow"'): "the test suite itself",
    ("docs/procurement.md", "pip install 'prfaas-plan[ray]'"): "installs a package",
}
DOCS = REPO / "docs"
README_MAX_LINES = 250


def pages() -> list[Path]:
    """README.md and every page of docs/."""
    return [REPO / "README.md", *sorted(DOCS.glob("*.md"))]


def page_name(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


_NUMBER = re.compile(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?")
_RULE = re.compile(r"^[\s─\-|:]*$")
_NAMED = re.compile(r"`(prfaas-plan\s[^`]+|python benchmarks/published\.py)`")


@dataclass(frozen=True)
class Example:
    kind: str  # "block", "table" or "bash" (commands to run, no output shown)
    command: str | None  # as the page names it, whitespace collapsed
    text: str  # the shown output (a block without its "$" line) or the table
    line: int  # 1-based line of the page where it starts
    opted_out: str | None = None
    page: str = "README.md"


def examples(readme: str, page: str = "README.md") -> list[Example]:
    """A page's plain ``` blocks and its Markdown tables, each with the command it names, and its
    ```bash blocks (kind "bash": ``text`` is the commands, one a line)."""
    lines = readme.splitlines()
    found: list[Example] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            if line.strip() == "```":
                body = lines[i + 1 : end]
                command, opted = _context(lines, i)
                if body and body[0].startswith("$ prfaas-plan "):
                    command, body = body[0][2:].strip(), body[1:]
                found.append(Example("block", command, "\n".join(body), i + 1, opted, page))
            elif line.strip() == "```bash":
                commands = bash_commands(lines[i + 1 : end])
                opted = m[1] if i and (m := OPT_OUT.fullmatch(lines[i - 1].strip())) else None
                found.append(Example("bash", commands[0] if commands else None, "\n".join(commands), i + 1, opted, page))
            i = end + 1
            continue
        if line.startswith("|") and (i == 0 or not lines[i - 1].startswith("|")):
            end = i
            while end < len(lines) and lines[end].startswith("|"):
                end += 1
            command, opted = _context(lines, i)
            found.append(Example("table", command, "\n".join(lines[i:end]), i + 1, opted, page))
            i = end
            continue
        i += 1
    return found


def bash_commands(block: list[str]) -> list[str]:
    """The commands of a ```bash block: comments dropped, ``\\`` continuations joined."""
    commands, current = [], ""
    for line in block:
        line = line.split(" #")[0].rstrip() if not line.lstrip().startswith("#") else ""
        current = f"{current} {line.strip()}".strip()
        if current.endswith("\\"):
            current = current[:-1].rstrip()
            continue
        if current:
            commands.append(" ".join(current.split()))
        current = ""
    return commands


def _context(lines: list[str], start: int) -> tuple[str | None, str | None]:
    """The command named by the paragraph before line ``start`` and the opt-out reason, if any."""
    j, opted = start - 1, None
    if j >= 0 and (m := OPT_OUT.fullmatch(lines[j].strip())):
        opted, j = m[1], j - 1
    while j >= 0 and not lines[j].strip():
        j -= 1
    para: list[str] = []
    while j >= 0 and lines[j].strip():
        para.insert(0, lines[j])
        j -= 1
    if para and para[0].startswith("```"):  # a command block just before: its last command
        para = [f"`{command}`" for command in bash_commands(para[1:-1])]
    named = _NAMED.findall("\n".join(para))
    return (" ".join(named[-1].split()) if named else None), opted


def _numbers(text: str) -> list[str]:
    return _NUMBER.findall(text.replace("−", "-"))


def _words(text: str) -> list[str]:
    return _NUMBER.sub(" ", text.replace("−", "-")).split()


def _subsequence(wanted, have, same) -> bool:
    it = iter(have)
    return all(any(same(w, h) for h in it) for w in wanted)


def _rounds_to(shown: str, value: str) -> bool:
    """``value`` printed to ``shown``'s digits is ``shown`` (a table rounds: 23.4 for 23.41)."""
    s, v = float(shown.replace(",", "")), float(value.replace(",", ""))
    digits = len(shown.split(".")[1]) if "." in shown else 0
    return abs(s - v) <= 0.5 * 10**-digits * (1 + 1e-9) + 1e-12


def block_mismatches(shown: str, output: str) -> list[str]:
    """Shown lines that are not output lines in order (numbers exact, words in order)."""
    out = output.splitlines()
    at, missing = 0, []
    for line in shown.splitlines():
        if not line.strip() or _RULE.match(line) or line.strip() == "...":
            continue
        nums, words = _numbers(line), _words(line)
        for k in range(at, len(out)):
            if _subsequence(nums, _numbers(out[k]), str.__eq__) and _subsequence(words, _words(out[k]), str.__eq__):
                at = k + 1
                break
        else:
            missing.append(line.strip())
    return missing


def _cells(row: str) -> list[str]:
    return [c.strip() for c in row.strip().strip("|").split("|")]


def _table_rows(table: str) -> list[list[str]]:
    return [_cells(r) for r in table.splitlines()[2:]]


def table_mismatches(table: str, output: str) -> list[str]:
    """Rows whose numbers are not, rounded as shown, in an output line that has the row's name."""
    missing = []
    for cells in _table_rows(table):
        label = cells[0].strip("`*")
        wanted = [n for c in cells[1:] for n in _numbers(c)]
        if not any(
            label in line and _subsequence(wanted, _numbers(line[line.index(label) + len(label) :]), _rounds_to)
            for line in output.splitlines()
        ):
            missing.append(" | ".join(cells))
    return missing


def _columns(output: str, header_has: str) -> list[dict[str, str]]:
    """The rows of the first plain-text table whose header has ``header_has``, by column name."""
    lines = output.splitlines()
    h = next(k for k, line in enumerate(lines) if header_has in line)
    names = re.split(r"\s{2,}", lines[h].strip())
    rows = []
    for line in lines[h + 2 :]:
        if not line.strip():
            break
        rows.append(dict(zip(names, re.split(r"\s{2,}", line.strip()))))
    return rows


# --------------------------------------------------------------------------------------------
# running the commands (each once per session)

_CACHE: dict[tuple[str, ...], tuple[int, str]] = {}


def _run(run_cli, args: list[str]) -> tuple[int, str]:
    key = tuple(args)
    if key not in _CACHE:
        if args[:2] == ["python", "benchmarks/published.py"]:
            import subprocess
            import sys

            done = subprocess.run([sys.executable, *args[1:]], cwd=REPO, capture_output=True, text=True, timeout=60)
            _CACHE[key] = (done.returncode, done.stdout + done.stderr)
        else:
            res = run_cli(*args)
            _CACHE[key] = (res.code, res.out + res.err)
    return _CACHE[key]


def _args(command: str) -> list[str]:
    words = shlex.split(command)
    if words[:3] == ["python", "-m", "prfaas_plan"]:
        return words[3:]
    return words[1:] if words[0] == "prfaas-plan" else words


def runnable(command: str) -> bool:
    """A command the test can run: the CLI, or the published-measurements script."""
    words = shlex.split(command)
    return (
        words[:1] == ["prfaas-plan"]
        or words[:3] == ["python", "-m", "prfaas_plan"]
        or words[:2]
        == [
            "python",
            "benchmarks/published.py",
        ]
    )


def _compare_basis(run_cli, ex: Example) -> list[str]:
    """Columns `--basis X`: each is the compare with that basis; a cell is its row's Λ_max."""
    header = _cells(ex.text.splitlines()[0])
    wrong = []
    for col, name in enumerate(header[1:], 1):
        basis = re.fullmatch(r"`--basis ([\w-]+)`", name)[1]
        code, out = _run(run_cli, [*_args(ex.command), "--basis", basis])
        assert code == 0, out
        lam = {r["PrfaaS / PD / decode"]: r["Λ_max req/s"] for r in _columns(out, "Λ_max req/s")}
        for cells in _table_rows(ex.text):
            shown = _numbers(cells[col])[0]
            if not _rounds_to(shown, lam[cells[0]]):
                wrong.append(f"{cells[0]} {name}: page {shown}, output {lam[cells[0]]}")
    return wrong


def _simulate_rows(run_cli, ex: Example, tmp_path: Path) -> list[str]:
    """Rows (arrivals, policy): the named simulate with that policy (and --arrivals onoff), on
    thin.yaml = the case study with bandwidth_gbps 15, as docs/simulation.md says."""
    assert "thin.yaml" in ex.command and "static|adaptive" in ex.command and "[--arrivals onoff]" in ex.command
    thin = write_case_study(tmp_path, link__bandwidth_gbps=15)
    header = _cells(ex.text.splitlines()[0])
    wrong = []
    for cells in _table_rows(ex.text):
        arrivals, policy = cells[0], cells[1]
        command = ex.command.replace("static|adaptive", policy).replace(
            "[--arrivals onoff]", "--arrivals onoff" if arrivals == "onoff" else ""
        )
        code, out = _run(run_cli, [str(thin) if a == "thin.yaml" else a for a in _args(command)])
        assert code == 0, out
        paths = {r["path"]: r for r in _columns(out, "P90 s")}
        have = {
            "max link backlog": re.search(r"max link backlog ([\d.]+) GB", out)[1],
            "remote P90": paths["remote"]["P90 s"],
            "local P90": paths["local"]["P90 s"],
            "overall P90 TTFT": paths["overall"]["P90 s"],
        }
        for name, cell in zip(header[2:], cells[2:]):
            if not _rounds_to(_numbers(cell)[0], have[name]):
                wrong.append(f"{arrivals} {policy} {name}: page {cell}, output {have[name]}")
    return wrong


def _published_rows(run_cli, ex: Example) -> list[str]:
    """Rows of ids (B01, B02 or B09-B11): their ratios, in order, are the script's (``a, b`` with
    the engine each row names, ``a, b; c, d`` when the generic engine's differ); and the page's
    table of each set's summary is the script's summary lines."""
    code, out = _run(run_cli, _args(ex.command))
    assert code == 0, out
    ratio, generic = {}, {}
    for line in out.splitlines():
        m = re.match(r"([BNK]\d\d)\s.*\s(\d+\.\d+)\s+(\d+\.\d+)\s{2}", line)
        if m:
            ratio[m[1]], generic[m[1]] = m[2], m[3]
    wrong = []
    if _cells(ex.text.splitlines()[0])[0] == "set":
        return _published_summary(out)
    for cells in _table_rows(ex.text):
        ids = []
        for part in re.findall(r"B\d\d(?:-B\d\d)?", cells[0]):
            a, _, b = part.partition("-")
            ids += [f"B{k:02d}" for k in range(int(a[1:]), int((b or a)[1:]) + 1)]
        own, _, neutral = cells[-1].partition(";")
        for shown, of in ((_numbers(own), ratio), (_numbers(neutral) if neutral else _numbers(own), generic)):
            if len(shown) != len(ids) or not all(_rounds_to(x, of[i]) for x, i in zip(shown, ids)):
                wrong.append(f"{cells[0]}: page {cells[-1]}, output {[(ratio.get(i), generic.get(i)) for i in ids]}")
    return wrong


def _published_summary(out: str) -> list[str]:
    """docs/validation.md's table of each set's summary (| set | rows | median | worst (id) | geometric
    mean | generic: median, worst, geomean |) against the script's summary lines."""
    wrong = []
    lines = out.splitlines()
    summaries = {}
    for k, line in enumerate(lines):
        m = re.match(r"(\S+): (\d+) rows: median \|error\| (\S+), worst (\S+) \((\w+)\), geometric mean speed ratio (\S+)", line)
        if m:
            g = re.search(
                r"engine generic: median \|error\| (\S+), worst (\S+) \(\w+\), geometric mean speed ratio (\S+)", lines[k + 1]
            )
            summaries[m[2]] = (m[3], f"{m[4]} ({m[5]})", m[6], f"{g[1]}, {g[2]}, {g[3]}")
    page = (DOCS / "validation.md").read_text()
    table = page[page.index("| set | rows | median") :].split("\n\n", 1)[0].splitlines()[2:]
    for row in table:
        cells = [c.strip().replace("**", "") for c in row.strip("|").split("|")]
        have = summaries.get(cells[1])
        if have is None or tuple(cells[2:6]) != have:
            wrong.append(f"summary {cells[0]}: docs/validation.md {cells[2:6]}, output {have}")
    return wrong


def check(run_cli, ex: Example, tmp_path: Path) -> list[str]:
    """What of the example the command's output contradicts (empty: it is the real output)."""
    if ex.kind == "bash":
        failed = []
        for command in ex.text.splitlines():
            code, out = _run(run_cli, _args(command))
            if code != 0:
                failed.append(f"{command}: exit {code}: {out[-300:]}")
        return failed
    if ex.kind == "table" and "`--basis" in ex.text.splitlines()[0]:
        return _compare_basis(run_cli, ex)
    if ex.kind == "table" and ex.command.startswith("prfaas-plan simulate"):
        return _simulate_rows(run_cli, ex, tmp_path)
    if ex.kind == "table" and "published.py" in ex.command:
        return _published_rows(run_cli, ex)
    code, out = _run(run_cli, _args(ex.command))
    assert code == 0 or "error:" in ex.text, f"{ex.command}: exit {code}: {out[-500:]}"
    return (block_mismatches if ex.kind == "block" else table_mismatches)(ex.text, out)


# --------------------------------------------------------------------------------------------
# the checker itself (fast)

_SAMPLE = """Some text (`prfaas-plan kv m --gpus 8`):

```
  length   S_kv
 ──────────────
   1,024   190.8
...
```

<!-- docs-example: not run (benchmark timings) -->
```
$ prfaas-plan bench
took 1.2 s
```

```
prfaas-plan: error: x.yaml: a: must be >= 1 (got 0)
```

```bash
prfaas-plan calibrate --hardware h200 \\
    --points p.csv -o out.yaml   # writes out.yaml
prfaas-plan kv m --hardware out.yaml
```

On it (`prfaas-plan
plan`):

| deployment | TTFT (s) |
|---|---|
| PrfaaS-PD | 2.3 |
"""


def test_the_checker_finds_each_example_and_its_command():
    found = examples(_SAMPLE)
    assert [(e.kind, e.command, e.opted_out) for e in found] == [
        ("block", "prfaas-plan kv m --gpus 8", None),
        ("block", "prfaas-plan bench", "benchmark timings"),
        ("block", None, None),
        ("bash", "prfaas-plan calibrate --hardware h200 --points p.csv -o out.yaml", None),
        ("table", "prfaas-plan plan", None),
    ]
    assert found[1].text == "took 1.2 s"
    assert found[3].text.splitlines()[1] == "prfaas-plan kv m --hardware out.yaml"
    assert runnable(found[3].command) and not runnable("python -m pip install .")


def test_the_checker_compares_numbers_in_order_per_line():
    shown = examples(_SAMPLE)[0].text
    assert block_mismatches(shown, "  length   S_kv\n -----\n   1,024   190.8   (MiB)\n") == []
    assert block_mismatches(shown, "   1,024   190.9\n") == ["length   S_kv", "1,024   190.8"]
    assert block_mismatches("a 1\nb 2", "b 2\na 1") == ["b 2"]  # out of order
    assert block_mismatches("x 12.1", "x 12.15") == ["x 12.1"]  # a block shows numbers exactly
    table = examples(_SAMPLE)[-1].text
    assert table_mismatches(table, "  PrfaaS-PD   1.61   2.32   3.76\n") == []  # a table rounds
    assert table_mismatches(table, "  PrfaaS-PD   1.61   2.36\n") == ["PrfaaS-PD | 2.3"]
    assert table_mismatches(table, "  homogeneous   2.30\n") == ["PrfaaS-PD | 2.3"]


# --------------------------------------------------------------------------------------------
# the pages


def _docs_examples() -> list[Example]:
    return [ex for path in pages() for ex in examples(path.read_text(), page_name(path))]


def test_opted_out_examples_are_the_listed_ones():
    """An opt-out names its reason, and only the listed ones opt out."""
    assert {(e.page, e.command): e.opted_out for e in _docs_examples() if e.opted_out} == OPTED_OUT


def test_unnamed_blocks_are_only_error_lines():
    """A plain block with no command is error lines of hypothetical files, nothing else."""
    for ex in _docs_examples():
        if ex.kind == "block" and ex.command is None:
            assert all(line.startswith("prfaas-plan: error: ") for line in ex.text.splitlines()), (ex.page, ex.line)


def test_every_bash_command_can_run():
    """A ```bash block that is not opted out holds only commands the test runs."""
    for ex in _docs_examples():
        if ex.kind == "bash" and not ex.opted_out:
            assert ex.text and all(runnable(c) for c in ex.text.splitlines()), (ex.page, ex.line, ex.text)


def test_readme_is_short():
    lines = len((REPO / "README.md").read_text().splitlines())
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines, at most {README_MAX_LINES}: move a section into docs/"


_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_every_page_is_linked_from_both_indexes():
    """README.md and docs/README.md each link every page of docs/ (docs/README.md from README.md)."""
    readme_links = {(REPO / link).resolve() for link in _LINK.findall((REPO / "README.md").read_text())}
    index_links = {(DOCS / link).resolve() for link in _LINK.findall((DOCS / "README.md").read_text())}
    for path in sorted(DOCS.glob("*.md")):
        assert path.resolve() in readme_links, f"README.md does not link {page_name(path)}"
        if path.name != "README.md":
            assert path.resolve() in index_links, f"docs/README.md does not link {page_name(path)}"


def test_every_relative_link_names_a_file_that_exists():
    for path in pages():
        for link in _LINK.findall(path.read_text()):
            if "://" not in link:
                assert (path.parent / link).exists(), f"{page_name(path)}: {link} does not exist"


def test_the_engine_profile_shown_is_the_shipped_one():
    """docs/yaml-reference.md shows generic.yaml as it ships (its two comment lines left out)."""
    text = (DOCS / "yaml-reference.md").read_text()
    shown = text.split("The engine-neutral profile, `generic.yaml`:", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    shipped = (REPO / "prfaas_plan" / "timing" / "engines" / "generic.yaml").read_text()
    assert shown == "".join(shipped.splitlines(keepends=True)[2:])


@pytest.fixture
def scratch(tmp_path, monkeypatch) -> Path:
    """A folder to run the examples in: the repository's inputs at hand, its tree untouched."""
    for name in ("tests", "prfaas_plan", "benchmarks", "model_profiles", "hardware_profiles"):
        (tmp_path / name).symlink_to(REPO / name, target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def python_blocks(text: str) -> list[str]:
    """A page's ```python blocks."""
    return re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)


def _flat_numbers(value) -> list[float]:
    if isinstance(value, bool):
        return []
    if isinstance(value, (int, float)):
        return [float(value)]
    if isinstance(value, (tuple, list)):
        return [x for item in value for x in _flat_numbers(item)]
    return []


def python_mismatches(code: str, namespace: dict) -> list[str]:
    """Run a ```python block statement by statement in ``namespace``; an expression whose comment
    starts with a number (``x.ttft_s, x.range_of("ttft_s")  # 0.061 s, (0.039, 0.113): ...``)
    must evaluate to those numbers (the comment's before its first ``:``), rounded as shown."""
    import ast

    wrong = []
    lines = code.splitlines()
    for node in ast.parse(code).body:
        last = lines[node.end_lineno - 1]
        comment = last.split("  # ", 1)[1] if "  # " in last else ""
        if isinstance(node, ast.Expr):
            value = eval(compile(ast.Expression(node.value), "<docs>", "eval"), namespace)
            shown = _numbers(comment.split(":", 1)[0]) if comment[:1].isdigit() else []
            have = _flat_numbers(value)
            if shown and (len(shown) != len(have) or not all(_rounds_to(x, str(v)) for x, v in zip(shown, have))):
                wrong.append(f"{ast.get_source_segment(code, node)}: the page says {comment}, it is {value!r}")
        else:
            exec(compile(ast.Module([node], []), "<docs>", "exec"), namespace)
    return wrong


def test_the_python_checker_compares_the_numbers_a_comment_gives():
    assert python_mismatches("x = (0.0612, (0.0391, 0.1127))\nx  # 0.061 s, (0.039, 0.113): a band", {}) == []
    assert python_mismatches("y = 71.26\ny  # 71.3", {}) == []
    assert python_mismatches("y = 161.57\ny  # 71.3", {}) == ["y: the page says 71.3, it is 161.57"]
    assert python_mismatches("z = [1]\nz  # list of one", {}) == []  # words only: nothing to compare


@pytest.mark.slow
def test_docs_python_examples_run_and_print_what_they_say(scratch):
    """Every ```python block of the pages runs (the blocks of a page in one namespace, in order),
    and each figure a comment gives is the expression's value."""
    wrong, ran = {}, 0
    for path in pages():
        namespace: dict = {}
        for code in python_blocks(path.read_text()):
            ran += 1
            bad = python_mismatches(code, namespace)
            if bad:
                wrong[page_name(path)] = wrong.get(page_name(path), []) + bad
    assert not wrong, "\n".join(f"{where}: {bad}" for where, bad in wrong.items())
    assert ran >= 4


@pytest.mark.slow
def test_docs_examples_are_the_real_output(run_cli, scratch):
    """Every named, not opted-out example block and table of README.md and docs/*.md is its
    command's output, and every command of a ```bash block runs."""
    checked, wrong = [], {}
    for ex in _docs_examples():
        if ex.command is None or ex.opted_out:
            continue
        checked.append(ex.command)
        bad = check(run_cli, ex, scratch)
        if bad:
            wrong[f"{ex.page} line {ex.line}: {ex.command}"] = bad
    assert not wrong, "\n".join(f"{where}: {bad}" for where, bad in wrong.items())
    assert len(checked) >= 16  # every command's example, not a parser that finds none
