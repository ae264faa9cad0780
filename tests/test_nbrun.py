"""Headless notebook execution (gspo_lab.nb.run) and the HTML report (gspo_lab.nb.report), on a tiny throwaway notebook.

The notebook has what the real ones have: a ``parameters`` cell, widgets with an observer, a tqdm.auto loop, a
matplotlib figure and a ``record_results`` call. Three kernel runs in all (a few seconds each).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from queue import Empty

import nbformat
import pytest
from jupyter_client.channels import AsyncZMQSocketChannel
from nbclient.exceptions import CellTimeoutError
from papermill.exceptions import PapermillExecutionError

from gspo_lab.nb import run as nbrun
from gspo_lab.nb.engine import POLL_SLICE_S, SlicedShellChannel
from gspo_lab.nb.report import build_report, summarize
from gspo_lab.nb.results import load_results
from gspo_lab.nb.run import KERNEL_NAME, ensure_kernel, execute

WIDGET_CELL = """\
import ipywidgets as widgets
from IPython.display import display
from tqdm.auto import tqdm

slider = widgets.IntSlider(value=x, min=0, max=10)
out = widgets.Output()

def on_change(change):
    with out:
        print("value", change["new"])

slider.observe(on_change, names="value")
slider.value = x + 1
for _ in tqdm(range(3)):
    pass
display(widgets.VBox([slider, out]))"""

# display(fig) on a figure pyplot still holds: the inline backend shows it a second time, the report once
FIGURE_CELL = """\
import matplotlib.pyplot as plt
from IPython.display import display

fig, ax = plt.subplots(figsize=(3, 2))
ax.plot([0, 1], [0, x])
display(fig)"""

RECORD_CELL = """\
import os
import sys

from gspo_lab.nb.results import claim, record_results

record_results(
    results_path,
    "tiny",
    [claim("x_reached", "the papermill parameter reached the kernel", x, ">=", 2)],
    {"x": x, "cwd": os.getcwd(), "python": sys.executable, "nested": {"half": 0.5}},
)"""


def make_notebook(path: Path, *cells: str) -> Path:
    """A notebook at ``path``: a parameters cell, then ``cells`` (markdown when they start with '#'); fixed ids."""
    new = [nbformat.v4.new_code_cell("results_path = None\nx = 1", id="params", metadata={"tags": ["parameters"]})]
    for i, src in enumerate(cells):
        make = nbformat.v4.new_markdown_cell if src.startswith("#") else nbformat.v4.new_code_cell
        new.append(make(src, id=f"cell-{i}"))
    # deliberately another kernel's name: execute() must run gspo-lab regardless
    meta = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    nbformat.write(nbformat.v4.new_notebook(cells=new, metadata=meta), path)
    return path


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """The tiny notebook executed once with x = 2: (folder, source notebook, executed notebook, results JSON)."""
    root = tmp_path_factory.mktemp("nbrun")
    (root / "src").mkdir()
    source = make_notebook(
        root / "src" / "tiny.ipynb", "# Tiny", WIDGET_CELL, "## A figure", FIGURE_CELL, "## Results", RECORD_CELL
    )
    out, results = root / "out" / "tiny.ipynb", root / "out" / "tiny.json"
    seconds = execute(source, out, {"x": 2, "results_path": str(results)}, cell_timeout=60)
    return root, source, out, results, seconds


def test_ensure_kernel_runs_this_interpreter():
    spec_dir = ensure_kernel()
    assert spec_dir == Path(sys.prefix) / "share" / "jupyter" / "kernels" / KERNEL_NAME
    assert json.loads((spec_dir / "kernel.json").read_text())["argv"][0] == sys.executable
    assert ensure_kernel() == spec_dir  # idempotent


def test_execute_passes_parameters_and_records_results(tiny_run):
    root, source, out, results, seconds = tiny_run
    data = load_results(results)
    assert data["numbers"]["x"] == 2
    assert [c["passed"] for c in data["claims"]] == [True]
    assert Path(data["numbers"]["cwd"]) == source.parent.resolve()  # the kernel ran in the notebook's folder
    assert data["numbers"]["python"] == sys.executable  # the gspo-lab kernel, not a user's python3
    executed = nbformat.read(out, as_version=4)
    assert executed.metadata.kernelspec.name == KERNEL_NAME
    assert executed.metadata.papermill.parameters == {"x": 2, "results_path": str(results)}
    widget_cell = next(c for c in executed.cells if c.id == "cell-1")
    assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in widget_cell.outputs)
    assert 0 < seconds < 60


def test_failing_cell_raises_and_still_writes_the_notebook(tmp_path):
    source = make_notebook(tmp_path / "bad.ipynb", "y = x + 1", "raise ValueError('boom')", "z = 3")
    out = tmp_path / "out" / "bad.ipynb"
    with pytest.raises(PapermillExecutionError, match="boom"):
        execute(source, out, {"x": 2}, cell_timeout=30)
    executed = nbformat.read(out, as_version=4)
    assert any(o.get("ename") == "ValueError" for c in executed.cells for o in c.get("outputs", []))


def test_real_timeout_raises_cell_timeout_error(tmp_path):
    source = make_notebook(tmp_path / "slow.ipynb", "import time\ntime.sleep(30)")
    with pytest.raises(CellTimeoutError):
        execute(source, tmp_path / "out.ipynb", {}, cell_timeout=2)


def test_build_report_shows_claims_and_figures(tiny_run):
    root, _, out, results, seconds = tiny_run
    runs = [
        {"name": "tiny", "tier": "smoke", "seconds": seconds, "ok": True, "error": None, "results": str(results)},
        {"name": "broken", "tier": "smoke", "seconds": 1.0, "ok": False, "error": "ValueError: <boom>"},
    ]
    report = build_report(out.parent, runs)
    page = report.read_text()
    assert report == out.parent / "report.html"
    assert "the papermill parameter reached the kernel" in page
    assert "PASS" in page and "ValueError: &lt;boom&gt;" in page
    assert '<img src="figures/tiny-1.png" alt="tiny, figure 1 — A figure"' in page
    assert (out.parent / "figures" / "tiny-1.png").read_bytes().startswith(b"\x89PNG")
    assert not (out.parent / "figures" / "tiny-2.png").exists()  # the identical second copy is shown once
    assert "<td>nested.half</td>" in page
    assert summarize(runs) == {"notebooks": 2, "notebooks_ok": 1, "claims": 1, "claims_passed": 1}


def test_sliced_shell_channel_polls_in_short_slices(monkeypatch):
    """The fix's mechanism: one get_msg(timeout) becomes polls of <= POLL_SLICE_S, same deadline, same result."""
    waits, replies = [], iter([Empty, Empty, {"msg": "reply"}])

    async def fake_get_msg(self, timeout=None):
        waits.append(timeout)
        reply = next(replies, Empty)
        if reply is Empty:
            await asyncio.sleep(timeout)
            raise Empty
        return reply

    monkeypatch.setattr(AsyncZMQSocketChannel, "get_msg", fake_get_msg)
    channel = object.__new__(SlicedShellChannel)
    assert asyncio.run(channel.get_msg(timeout=60)) == {"msg": "reply"}
    assert waits == [POLL_SLICE_S] * 3

    waits.clear()
    with pytest.raises(Empty):
        asyncio.run(channel.get_msg(timeout=1.2))
    assert all(w <= POLL_SLICE_S for w in waits) and sum(waits) == pytest.approx(1.2, abs=0.1)


def test_run_all_records_a_failing_notebook_and_goes_on(tmp_path, monkeypatch):
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    monkeypatch.setattr(nbrun, "repo_root", lambda: tmp_path)
    calls = []

    def fake_execute(notebook, out, parameters, *, cell_timeout):
        calls.append(notebook.name)
        if notebook.stem == "00_tour":
            raise RuntimeError("kernel died")
        Path(parameters["results_path"]).write_text(json.dumps({"claims": [], "numbers": {}}))

    monkeypatch.setattr(nbrun, "execute", fake_execute)
    runs = nbrun.run_all("smoke", tmp_path / "out", notebooks=["00_tour", "03_clipping"], progress=False)
    assert calls == ["00_tour.ipynb", "03_clipping.ipynb"]
    assert [r["ok"] for r in runs] == [False, True]
    assert runs[0]["error"] == "RuntimeError: kernel died" and runs[0]["results"] is None
    assert runs[1]["results"] == str((tmp_path / "out" / "03_clipping.json").resolve())
    assert runs[1]["parameters"]["rollouts"] == 3


def test_main_exits_nonzero_on_a_failed_claim_and_still_writes_the_report(tmp_path, monkeypatch, capsys):
    results = tmp_path / "00_tour.json"
    results.write_text(
        json.dumps(
            {
                "claims": [{"statement": "a claim", "value": 0.1, "op": ">=", "threshold": 1.0, "passed": False}],
                "numbers": {},
            }
        )
    )
    run = {"name": "00_tour", "tier": "smoke", "seconds": 1.0, "ok": True, "error": None, "results": str(results)}
    monkeypatch.setattr(nbrun, "run_all", lambda tier, out, **kw: [run])
    assert nbrun.main(["--tier", "smoke", "--out", str(tmp_path)]) == 1
    assert capsys.readouterr().out.strip().endswith(str(tmp_path / "report.html"))
    assert "a claim" in (tmp_path / "report.html").read_text()
    assert json.loads((tmp_path / "runs.json").read_text()) == [run]
