"""Headless notebook execution (gspo_lab.nb.run) and the book (gspo_lab.nb.book, .frames), on a tiny throwaway notebook.

The notebook has what the real ones have: a ``parameters`` cell, widgets with an observer, a tqdm.auto loop, a panel
whose Output widget draws a matplotlib figure, a figure, math in Markdown and a ``record_results`` call. Three kernel
runs in all (a few seconds each); two Sphinx builds of the book (a few seconds each, most of it the findings page).
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import sys
from pathlib import Path
from queue import Empty

import nbformat
import pytest
from jupyter_client.channels import AsyncZMQSocketChannel
from nbclient.exceptions import CellTimeoutError
from papermill.exceptions import PapermillExecutionError

from gspo_lab.nb import run as nbrun
from gspo_lab.nb.book import build_book
from gspo_lab.nb.engine import POLL_SLICE_S, SlicedShellChannel
from gspo_lab.nb.frames import WIDGET_STATE, WIDGET_VIEW, static_notebook, widget_frames
from gspo_lab.nb.results import load_results, summarize
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

# a panel as gspo_lab.widgets draws one: a control and an Output widget holding the figure (its stored frame)
PANEL_CELL = """\
import ipywidgets as widgets
import matplotlib.pyplot as plt
from IPython.display import display

frame = widgets.Output()
with frame:
    fig, ax = plt.subplots(figsize=(2, 1.5))
    ax.plot([0, 1], [x, 0])
    display(fig)
    plt.close(fig)
display(widgets.VBox([widgets.IntSlider(value=x), frame]))"""

# display(fig) on a figure pyplot still holds: the inline backend shows it a second time
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
    cells = ["# Tiny", WIDGET_CELL, PANEL_CELL, "## A figure of $y = x t$", FIGURE_CELL, "## Results", RECORD_CELL]
    source = make_notebook(root / "src" / "tiny.ipynb", *cells)
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


EXTERNAL_ASSET = re.compile(r"<(?:script|link|img|iframe|source)\b[^>]*\b(?:src|href)=[\"']?(?:https?:)?//", re.I)


def external_assets(site: Path) -> dict[str, list[str]]:
    """Page -> its <script>/<link>/<img>/<iframe>/<source> tags that load from another host (the book must not)."""
    found = {str(p.relative_to(site)): EXTERNAL_ASSET.findall(p.read_text()) for p in site.rglob("*.html")}
    return {page: tags for page, tags in found.items() if tags}


def test_book_shows_pages_claims_and_widget_frames_offline(tiny_run):
    root, _, out, results, seconds = tiny_run
    runs = [
        {"name": "tiny", "tier": "smoke", "seconds": seconds, "ok": True, "error": None, "results": str(results),
         "executed": str(out), "parameters": {"x": 2, "results_path": str(results)}},
        {"name": "broken", "tier": "smoke", "seconds": 1.0, "ok": False, "error": "ValueError: <boom>",
         "results": None, "executed": None},
    ]  # fmt: skip
    book = build_book(root / "run", runs)
    site = root / "run" / "book"
    assert book.index == site / "index.html" and book.warnings == (), book.warnings
    index = book.index.read_text()
    assert "the story in five minutes" in index  # the book opens with the story
    report = (site / "report.html").read_text()  # the run report and claims dashboard: an appendix page
    assert "the papermill parameter reached the kernel" in report and 'class="gspo-pass"' in report
    assert "ValueError: &lt;boom&gt;" in report and 'class="gspo-fail"' in report
    for href in ("notebooks/tiny.html", "findings.html", "methods.html", "f1_clipping.html", "glossary.html",
                 "recipe.html", "report.html"):  # fmt: skip
        assert f'href="{href}"' in index, href  # the table of contents
    assert "nested.half" in (site / "numbers.html").read_text()
    assert sorted(p.name for p in (site / "notebooks").glob("*.html")) == ["tiny.html"]  # no page for "broken"
    assert 'src="_images/f1_clip_curves.png"' in (site / "f1_clipping.html").read_text()  # docs/figures/ came along
    assert (site / "_images" / "f1_clip_curves.png").is_file()

    page = (site / "notebooks" / "tiny.html").read_text()
    assert 'href="../glossary.html"' in page and 'href="../index.html"' in page  # the line of links on every page
    assert 'src="../_static/mathjax/MathJax.js' in page and r"\(y = x t\)" in page  # math, rendered by local MathJax
    assert page.count('class="gspo-widget-note"') == 2  # the panel and the slider + text Output
    assert "|██████████| 3/3" in page  # the tqdm bar, as its final text
    assert "widget-view+json" not in page and "jupyter-widgets" not in page
    nb = json.loads(out.read_text())
    state = nb["metadata"]["widgets"][WIDGET_STATE]["state"]
    panel = next(c for c in nb["cells"] if c["id"] == "cell-2")["outputs"][0]["data"][WIDGET_VIEW]["model_id"]
    (frame,) = widget_frames(panel, state)
    shown = {p.read_bytes() for p in (site / "_images").glob("*.png")}
    assert base64.b64decode(frame) in shown  # the panel's stored frame is on the page
    assert external_assets(site) == {}
    assert "widgets" not in json.loads((root / "run" / "book_src" / "notebooks" / "tiny.ipynb").read_text())["metadata"]
    assert summarize(runs) == {"notebooks": 2, "notebooks_ok": 1, "claims": 1, "claims_passed": 1}


def test_static_notebook_replaces_views_follows_boxes_and_drops_state():
    png = base64.b64encode(b"\x89PNG fake").decode()
    state = {
        "box": {"model_name": "VBoxModel", "state": {"children": ["IPY_MODEL_slider", "IPY_MODEL_out",
                                                                  "IPY_MODEL_box"]}},  # a cycle is followed once
        "slider": {"model_name": "IntSliderModel", "state": {"value": 3}},
        "out": {"model_name": "OutputModel", "state": {"outputs": [{"output_type": "display_data",
                                                                    "data": {"image/png": png}}]}},
        "bare": {"model_name": "ButtonModel", "state": {}},
    }  # fmt: skip
    view = {"output_type": "display_data", "data": {WIDGET_VIEW: {"model_id": "box"}, "text/plain": "VBox(…)"}}
    text = {"output_type": "stream", "name": "stdout", "text": "hello\n"}
    nb = {
        "metadata": {"widgets": {WIDGET_STATE: {"state": state}}},
        "cells": [
            {"cell_type": "code", "metadata": {}, "outputs": [text, view]},
            {"cell_type": "code", "metadata": {"jupyter": {"source_hidden": True}},
             "outputs": [{"output_type": "display_data", "data": {WIDGET_VIEW: {"model_id": "bare"}}}]},
        ],
    }  # fmt: skip
    static = static_notebook(nb)
    assert "widgets" not in static["metadata"] and "widgets" in nb["metadata"]  # a copy; the state is dropped
    first, second = (c["outputs"] for c in static["cells"])
    assert first[0] == text and first[1]["data"] == {"image/png": png}  # the frame, then the note
    assert len(first) == 3 and "live kernel" in first[2]["data"]["text/html"]
    assert len(second) == 1 and "live kernel" in second[0]["data"]["text/html"]  # no frame: the note alone
    assert [c["metadata"]["tags"] for c in static["cells"]] == [["hide-input"]] * 2  # every code cell's source
    empty = static_notebook({"cells": [{"cell_type": "code", "metadata": {}, "outputs": []}]})
    assert empty["cells"][0]["metadata"]["tags"] == ["remove-cell"]  # nothing to show: no empty toggle

    # a frame equal to a figure the page already shows (its plain-function twin's) is not repeated
    twin = {"output_type": "display_data", "data": {"image/png": png, "text/plain": "<Figure>"}}
    nb["cells"][0]["outputs"] = [twin, view]
    first = static_notebook(nb)["cells"][0]["outputs"]
    assert [o["data"].get("image/png") for o in first].count(png) == 1
    assert first[0] == twin and "drawn by its plain-function twin" in first[1]["data"]["text/html"]


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


def test_main_exits_nonzero_on_a_failed_claim_and_still_builds_the_book(tmp_path, monkeypatch, capsys):
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
    printed = capsys.readouterr().out
    assert printed.strip().endswith(str(tmp_path / "book" / "index.html")) and "0 Sphinx warnings" in printed
    report = (tmp_path / "book" / "report.html").read_text()  # the claims dashboard's appendix page
    assert "a claim" in report and 'class="gspo-fail"' in report
    assert json.loads((tmp_path / "runs.json").read_text()) == [run]
