"""The package's layers: no import cycle anywhere (imports inside functions included), the notebook machinery kept
in its own subpackage, and the math never importing the rig or the notebooks."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "gspo_lab"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PKG.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in PKG.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):  # every import, at module level or inside a function
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                assert node.level == 0, f"{name}: use absolute imports (found a relative one)"
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            deps |= {t for t in targets if t in modules and t != name}
        graph[name] = deps
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for dep in sorted(graph[node]):
            if state.get(dep) == 1:
                return stack[stack.index(dep) :] + [dep]
            if dep not in state and (found := visit(dep)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_import_cycle_lazy_imports_included():
    graph = _import_graph()
    graph.pop("gspo_lab", None)  # the package's __init__ re-exports; no module imports it (checked below)
    assert not any("gspo_lab" in deps for deps in graph.values()), "a submodule imports the package __init__"
    assert _cycle(graph) is None, " -> ".join(_cycle(graph))


def test_detects_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_layers():
    graph = _import_graph()
    math_modules = ("ratios", "reductions", "objectives", "advantages", "metrics", "validate")
    rig = {"gspo_lab." + m for m in ("step", "train", "rollout", "policy", "model", "routing", "checkpoints", "cli")}
    math_names = [f"gspo_lab.{m}" for m in math_modules] + [n for n in graph if n.startswith("gspo_lab.objectives.")]
    assert len(math_names) >= len(math_modules) + 4, "objectives is a package: clipped_token, sequence, soft, core"
    for name in math_names:
        m, deps = name, graph[name]
        assert not deps & rig, f"math module {m} imports the rig: {deps & rig}"
        assert not any(d.startswith("gspo_lab.nb") for d in deps), f"math module {m} imports the notebook machinery"
    flat = sorted(p.stem for p in PKG.glob("*.py"))
    assert not {"nbrun", "nbparams", "report", "book", "results"} & set(flat), flat
    assert {"run", "params", "book", "frames", "results", "engine"} <= {p.stem for p in (PKG / "nb").glob("*.py")}
    assert not (PKG / "nb" / "report.py").exists(), "the book (nb/book.py) replaced the hand-written HTML report"
    assert not (PKG / "nb" / "findings.py").exists(), "the findings page is its own package, not notebook machinery"
    assert not {"sweep", "experiments", "probes"} & set(flat), "the research rig lives in gspo_lab/experiments/"
    assert "objectives" not in flat, "the objectives are a package, one room per family (gspo_lab/objectives/)"


def test_rig_findings_and_notebook_modules_stay_small():
    """The one-purpose packages keep files of about 300 lines at most (STYLE 21)."""
    sizes = {str(p.relative_to(PKG)): len(p.read_text().splitlines()) for d in ("experiments", "findings", "nb",
             "objectives", "widgets")
             for p in (PKG / d).rglob("*.py")}  # fmt: skip
    assert {k: v for k, v in sizes.items() if v > 300} == {}


def test_docs_and_help_cite_only_files_inside_the_repository():
    """Help texts and docstrings name files a reader of this repository has: nothing under ../shared/."""
    root = PKG.parent
    files = [*PKG.rglob("*.py"), *(root / "scripts").glob("*"), *(root / "tests").glob("*.py"), root / "README.md"]
    files = [p for p in files if p.is_file() and p.name != "test_layout.py"]
    offenders = [str(p.relative_to(root)) for p in files if "shared/" in p.read_text(errors="ignore")]
    assert offenders == []
