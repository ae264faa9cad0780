"""The packages' layers: no import cycle anywhere (imports inside functions included), the notebook machinery kept
in its own subpackage, the math never importing the rig or the notebooks, and one direction between the library
(``gspo_lab``) and the research record (``gspo_record``): the record imports the library, never the reverse."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "gspo_lab"
RECORD = PKG.parent / "gspo_record"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PKG.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every module name ``path`` imports, at module level or inside a function (``from a import b``: a and a.b)."""
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            assert node.level == 0, f"{path}: use absolute imports (found a relative one)"
            targets |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return targets


def _import_graph(packages: tuple[Path, ...] = (PKG,)) -> dict[str, set[str]]:
    modules = {_module_name(p): p for pkg in packages for p in pkg.rglob("*.py")}
    return {name: {t for t in _imports(path) if t in modules and t != name} for name, path in modules.items()}


def _record_imports(package: Path = PKG) -> list[str]:
    """``module: imported name`` for each import of the research record in ``package``'s source."""
    return [f"{_module_name(p)}: {t}" for p in sorted(package.rglob("*.py")) for t in sorted(_imports(p))
            if t == "gspo_record" or t.startswith("gspo_record.")]  # fmt: skip


def test_the_library_never_imports_the_record():
    """STYLE 23: what ``pip install`` gives (algorithms, model, loop, runner and reader, widgets) works without the
    research record (rules, statements, pages, lint); the record imports the library, never the reverse."""
    assert _record_imports() == []
    assert _record_imports(RECORD), "the record is expected to import the library (found no import to check)"


def test_the_direction_check_sees_an_import_inside_a_function(tmp_path):
    """The check's own mutant: a library module that imports the record lazily, inside a function, is caught."""
    lib = tmp_path / "gspo_lab"
    lib.mkdir()
    (lib / "__init__.py").write_text("")
    (lib / "widget.py").write_text("def view():\n    from gspo_record.f12.curves import lag_readout\n    return 1\n")
    global PKG
    saved, PKG = PKG, lib
    try:
        assert _record_imports(lib) == ["gspo_lab.widget: gspo_record.f12.curves",
                                        "gspo_lab.widget: gspo_record.f12.curves.lag_readout"]  # fmt: skip
    finally:
        PKG = saved


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
    graph = _import_graph((PKG, RECORD))
    graph.pop("gspo_lab", None)  # the package's __init__ re-exports; no module imports it (checked below)
    graph.pop("gspo_record", None)
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
    assert not (PKG / "findings").exists(), "the findings are the research record's (gspo_record/), not the library's"
    assert not {"sweep", "experiments", "probes"} & set(flat), "the research rig lives in gspo_lab/experiments/"
    assert "objectives" not in flat, "the objectives are a package, one room per family (gspo_lab/objectives/)"


def test_rig_findings_and_notebook_modules_stay_small():
    """The one-purpose packages keep files of about 300 lines at most (STYLE 21), the record's too; no module of
    either package passes 400 lines."""
    small = [p for d in ("experiments", "nb", "objectives", "widgets") for p in (PKG / d).rglob("*.py")]
    sizes = {
        str(p.relative_to(PKG.parent)): len(p.read_text().splitlines()) for p in small + list(RECORD.rglob("*.py"))
    }
    assert {k: v for k, v in sizes.items() if v > 300} == {}
    every = {str(p.relative_to(PKG.parent)): len(p.read_text().splitlines()) for p in PKG.rglob("*.py")}
    assert {k: v for k, v in every.items() if v > 400} == {}


def test_the_library_stays_small():
    """The library that ``pip install`` gives is about half of what it was when the record lived in it (issue 47:
    21.4k lines, at most 11k after the move; since then two capabilities raised the ceiling, each by what it added:
    issue 49's design space, gspo_lab/design.py and its panel (about 500 lines), and issue 50's top-k / top-p sampler
    with sampling replay, the batch-composition measurement and the geometric corrections with the stale-sampler
    drift and the mask rate per length read (about 250), and issue 51's KL weight with its plot (about 50) and R3,
    the sampler's routing recorded and replayed (about 70): 11.9k; and issue 52's compiled paths, the trainer's forwards
    compiled in every configuration and the sampler's decode on a static cache (about 75): 12k)."""
    assert sum(len(p.read_text().splitlines()) for p in PKG.rglob("*.py")) <= 12_000


def test_docs_and_help_cite_only_files_inside_the_repository():
    """Help texts and docstrings name files a reader of this repository has: nothing under ../shared/."""
    root = PKG.parent
    files = [
        *PKG.rglob("*.py"),
        *RECORD.rglob("*.py"),
        *(root / "scripts").glob("*"),
        *(root / "tests").glob("*.py"),
        root / "README.md",
    ]
    files = [p for p in files if p.is_file() and p.name != "test_layout.py"]
    offenders = [str(p.relative_to(root)) for p in files if "shared/" in p.read_text(errors="ignore")]
    assert offenders == []
