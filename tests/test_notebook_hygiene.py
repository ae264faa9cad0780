"""Notebooks are stored clean: no outputs, stable ids, paired with their jupytext .py, one template."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import jupytext
import pytest

from gspo_lab.nb.params import NOTEBOOKS

ROOT = Path(__file__).resolve().parents[1] / "notebooks"
NAMES = sorted(NOTEBOOKS)
MAX_DEF_LINES = 4  # a helper longer than this belongs in the library


def test_every_notebook_is_registered_and_paired():
    on_disk = sorted(p.stem for p in ROOT.glob("[0-9][0-9]_*.ipynb"))
    assert on_disk == NAMES
    assert sorted(p.stem for p in ROOT.glob("[0-9][0-9]_*.py")) == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_stored_without_outputs_and_with_stable_ids(name):
    nb = json.loads((ROOT / f"{name}.ipynb").read_text())
    ids = [c.get("id") for c in nb["cells"]]
    assert all(ids) and len(set(ids)) == len(ids)
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None, f"{name}: stored outputs"
        assert "papermill" not in cell.get("metadata", {})
    assert nb["metadata"]["kernelspec"]["name"] == "gspo-lab"
    assert nb["metadata"]["jupytext"]["formats"] == "ipynb,py:percent"
    assert "papermill" not in nb["metadata"] and "widgets" not in nb["metadata"]


@pytest.mark.parametrize("name", NAMES)
def test_pair_in_sync(name):
    from_py = jupytext.read(ROOT / f"{name}.py")
    stored = jupytext.read(ROOT / f"{name}.ipynb")
    assert [(c.cell_type, c.source) for c in from_py.cells] == [(c.cell_type, c.source) for c in stored.cells]


@pytest.mark.parametrize("name", NAMES)
def test_template_and_no_long_definitions(name):
    nb = jupytext.read(ROOT / f"{name}.py")
    params = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(params) == 1 and "results_path = None" in params[0].source
    headings = [c.source.splitlines()[0] for c in nb.cells if c.cell_type == "markdown"]
    assert headings[0].startswith(f"# {name[:2]} ·")
    assert "## What to take away" in headings and headings[-1] == "## Record results"
    assert "**Question.**" in nb.cells[0].source and "**Paper.**" in nb.cells[0].source
    assert "record_results(results_path" in nb.cells[-1].source
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for node in ast.walk(ast.parse(cell.source)):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                assert length <= MAX_DEF_LINES, f"{name}: `{node.name}` is {length} lines: move it into gspo_lab"


@pytest.mark.parametrize("name", NAMES)
def test_every_parameter_is_one_papermill_can_set(name):
    """papermill skips a line it cannot parse (a second "=" in a comment) and then never offers that parameter."""
    import papermill

    nb = jupytext.read(ROOT / f"{name}.py")
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    assigned = {n.targets[0].id for n in ast.parse(cell.source).body if isinstance(n, ast.Assign)}
    assert set(papermill.inspect_notebook(str(ROOT / f"{name}.ipynb"))) == assigned


@pytest.mark.parametrize("name", NAMES)
def test_the_record_results_cell_is_collapsed_in_jupyterlab(name):
    """Plumbing, not a lesson: the last code cell (record_results) opens with its source hidden."""
    nb = json.loads((ROOT / f"{name}.ipynb").read_text())
    last = [c for c in nb["cells"] if c["cell_type"] == "code"][-1]
    assert "record_results(results_path" in "".join(last["source"])
    assert last["metadata"].get("jupyter", {}).get("source_hidden") is True
