"""The package's layers hold: no module imports a higher layer, no import cycle inside a layer,
the CLI goes through the API, and only the scenario resolver reads scenario fields.

The data flow, lowest first: core utilities -> profiles -> accounting -> timing -> workload ->
study -> planner -> simulate -> api -> views (and report, plot) -> cli. Imports inside functions count
too. ``check_layers`` is tested on a small synthetic tree, so this test is known to fail
when an upward import is added.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "prfaas_plan"

LAYERS = ["core", "profiles", "accounting", "timing", "workload", "study", "planner", "simulate", "api", "views", "cli"]
CORE = {"__init__", "errors", "units", "choices", "ranges", "yamlio", "pchip"}
VIEWS = {"report", "plot"}
TOP = {"cli", "__main__"}
API = {"api", "published"}  # the library's entry points (published: the benchmark test set, through api)


def layer_of(module: str) -> str:
    """'prfaas_plan.planner.optimizer' -> 'planner'."""
    parts = module.split(".")[1:] or ["__init__"]
    head = parts[0]
    if head in CORE:
        return "core"
    if head in VIEWS:
        return "views"
    if head in TOP:
        return "cli"
    if head in API:
        return "api"
    return head


def module_name(path: Path, root: Path) -> str:
    rel = path.relative_to(root.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports_of(path: Path, root: Path) -> set[str]:
    """Every prfaas_plan module a file imports (module level or inside functions)."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == root.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != root.name:
                continue
            for alias in node.names:  # `from . import api` imports a module
                sub = f"{target}.{alias.name}"
                found.add(
                    sub
                    if (root.parent / (sub.replace(".", "/") + ".py")).exists() or (root.parent / sub.replace(".", "/")).is_dir()
                    else target
                )
    return found


def graph(root: Path) -> dict[str, set[str]]:
    return {module_name(p, root): imports_of(p, root) for p in sorted(root.rglob("*.py"))}


def check_layers(root: Path) -> list[str]:
    """Every upward import and every cycle inside a layer, as messages (empty: the layers hold)."""
    edges = graph(root)
    problems = []
    for module, targets in edges.items():
        for target in targets:
            if LAYERS.index(layer_of(target)) > LAYERS.index(layer_of(module)):
                problems.append(f"{module} ({layer_of(module)}) imports {target} ({layer_of(target)})")
    # cycles: depth-first search over edges that stay inside one layer
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(edges.get(node, ())):
            if nxt not in edges or nxt == node or layer_of(nxt) != layer_of(node):
                continue
            if state.get(nxt) == 1:
                problems.append("cycle: " + " -> ".join(stack[stack.index(nxt) :] + [nxt]))
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = 2

    for node in edges:
        if node not in state:
            visit(node, [node])
    return problems


def test_package_layers_hold():
    assert check_layers(PACKAGE) == []


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "prfaas_plan"
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_checker_fails_on_an_upward_import(tmp_path):
    root = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "timing/__init__.py": "",
            "planner/__init__.py": "",
            "timing/prefill.py": "def f():\n    from ..planner import plan\n",
            "planner/plan.py": "from ..timing import prefill\n",
        },
    )
    problems = check_layers(root)
    assert problems == ["prfaas_plan.timing.prefill (timing) imports prfaas_plan.planner.plan (planner)"]


def test_checker_fails_on_a_cycle_inside_a_layer(tmp_path):
    root = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "planner/__init__.py": "",
            "planner/a.py": "from .b import x\n",
            "planner/b.py": "from . import a\nx = 1\n",
        },
    )
    assert any(p.startswith("cycle: ") for p in check_layers(root))


def test_checker_accepts_downward_imports(tmp_path):
    root = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "errors.py": "",
            "planner/__init__.py": "",
            "planner/a.py": "from ..errors import x\nimport prfaas_plan.errors\n",
        },
    )
    assert check_layers(root) == []


def test_cli_goes_through_the_api():
    """The CLI imports the API, views, reports, plots and core utilities: nothing of the layers below."""
    below = {"profiles", "accounting", "timing", "workload", "study", "planner", "simulate"}
    cli_imports = imports_of(PACKAGE / "cli.py", PACKAGE)
    assert not {m for m in cli_imports if layer_of(m) in below}, cli_imports


def _reads(path: Path) -> list[str]:
    """`x.scenario` attribute reads and imports of profiles.scenario in a file."""
    found = []
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        enum_member = (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in ("ProfileKind", "DecodeSource")
        )
        if isinstance(node, ast.Attribute) and node.attr == "scenario" and not enum_member:
            found.append(f"{path.name}:{node.lineno} reads .scenario")
        if isinstance(node, ast.ImportFrom) and node.module and node.module.endswith("profiles.scenario"):
            found.append(f"{path.name}:{node.lineno} imports profiles.scenario")
        if isinstance(node, ast.ImportFrom) and node.module == "scenario" and node.level:
            found.append(f"{path.name}:{node.lineno} imports .scenario")
    return found


def test_only_the_resolver_reads_scenario_fields():
    allowed = set((PACKAGE / "study" / "resolve").glob("*.py")) | set((PACKAGE / "profiles").glob("*.py"))
    offenders = [r for p in sorted(PACKAGE.rglob("*.py")) if p not in allowed for r in _reads(p)]
    assert offenders == []


def test_resolved_inputs_carry_no_scenario():
    from dataclasses import fields

    from prfaas_plan.study.model import PlanInputs

    assert "scenario" not in {f.name for f in fields(PlanInputs)}


@pytest.mark.parametrize(
    "module",
    ["prfaas_plan.accounting.kv", "prfaas_plan.accounting.params", "prfaas_plan.accounting.work", "prfaas_plan.views.profiles"],
)
def test_no_isinstance_dispatch_on_block_kinds(module):
    """Physics per kind lives in its class; nothing else asks which kind a block is."""
    import importlib

    path = Path(importlib.import_module(module).__file__)
    text = path.read_text()
    for kind in ("GqaAttention", "SwaAttention", "MlaAttention", "SparseAttention", "LinearAttention", "DenseFfn", "MoeFfn"):
        assert kind not in text, f"{path.name} names {kind}"


def test_every_kind_has_a_schema_and_a_physics_class():
    """Each attention and FFN kind of the enums has one schema class in the profile's union and one
    registered physics class, so a kind cannot be half added."""
    import typing

    from prfaas_plan.accounting.kinds import FFNS, MIXERS
    from prfaas_plan.choices import FfnType, MixerType
    from prfaas_plan.profiles.model import FfnBlock, MixerBlock

    for enum, union, registry in ((MixerType, MixerBlock, MIXERS), (FfnType, FfnBlock, FFNS)):
        schema_tags = {typing.get_args(cls.model_fields["type"].annotation)[0] for cls in typing.get_args(union)}
        assert schema_tags == set(enum)
        assert set(registry) == set(enum)
        assert all(registry[tag].tag == tag for tag in enum)


def test_the_decode_models_old_import_path_still_resolves():
    """docs/simulation.md once imported the decode model from ``planner.decode_model``: notebooks
    written so keep running (the names are the Study's own)."""
    from prfaas_plan.planner import decode_model as moved
    from prfaas_plan.study import model

    assert moved.decode_model is model.decode_model and moved.DecodeModel is model.DecodeModel
