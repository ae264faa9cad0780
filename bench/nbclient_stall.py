"""How often does a widget cell stall headless (jupyter/nbclient#312), with and without gspo_lab.nb.run's fix?

    python bench/nbclient_stall.py [--runs 30] [--fixed-timeout 20] [--stock-timeout 12] [--json PATH]

Methodology, numbered:
    1. One tiny notebook (built here): a parameters cell, then three widget cells — an IntSlider + Output with an
       observer and a tqdm.auto loop; ``interact``; a tqdm.auto loop alone — each normally well under 1 s.
    2. ``--runs`` executions through ``gspo_lab.nb.run.execute`` with the fix (engine ``gspo``), and as many with
       papermill's stock nbclient engine (``engine_name=None``), *interleaved* (fixed, stock, fixed, …) so load on
       this shared machine hits both alike. Each execution starts a fresh gspo-lab kernel.
    3. A stall is a cell that took > 5 s (papermill's per-cell ``duration``). The stock engine does not fail on
       one: after its timeout pyzmq's last zero-timeout poll finds the reply and the cell "succeeds" — so a stall
       shows as a cell lasting about the timeout. The fixed engine's timeout is longer, so a stall it did not
       prevent would be obvious (~``--fixed-timeout`` s).
    4. Reported per engine: runs, runs with a stall, stalled cells, "slow" cells (0.4-5 s: with the fix, a missed
       wake-up caught by the next 0.5 s poll shows as a cell lasting about one slice), errors, total and median
       wall time per run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import nbformat

from gspo_lab.nb.run import ENGINE_NAME, execute

STALL_S = 5.0

CELLS = [
    """\
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
display(widgets.VBox([slider, out]))""",
    """\
from ipywidgets import interact

@interact(k=(0, 5))
def show(k=x):
    print("k =", k)""",
    """\
from tqdm.auto import trange

total = sum(i for i in trange(100, desc="sum"))""",
]


def build(path: Path) -> Path:
    cells = [nbformat.v4.new_code_cell("results_path = None\nx = 1", id="params", metadata={"tags": ["parameters"]})]
    cells += [nbformat.v4.new_code_cell(src, id=f"widget-{i}") for i, src in enumerate(CELLS)]
    meta = {"kernelspec": {"name": "gspo-lab", "display_name": "Python (gspo-lab)", "language": "python"}}
    nbformat.write(nbformat.v4.new_notebook(cells=cells, metadata=meta), path)
    return path


def one_run(source: Path, out: Path, engine: str | None, timeout: int) -> dict:
    start = time.perf_counter()
    error = None
    try:
        execute(source, out, {"x": 2}, cell_timeout=timeout, engine_name=engine)
    except Exception as exc:  # counted, the measurement goes on
        error = f"{type(exc).__name__}: {str(exc)[:200]}"
    wall = time.perf_counter() - start
    durations = []
    if out.is_file():
        nb = nbformat.read(out, as_version=4)
        widget_cells = [c for c in nb.cells if c.id.startswith("widget-")]  # not papermill's injected cell
        durations = [c.metadata.get("papermill", {}).get("duration") or 0.0 for c in widget_cells]
    return {"wall": wall, "durations": durations, "error": error}


def summary(runs: list[dict]) -> dict:
    stalled = [[d for d in r["durations"] if d > STALL_S] for r in runs]
    return {
        "runs": len(runs),
        "runs_with_stall": sum(bool(s) for s in stalled),
        "stalled_cells": sum(len(s) for s in stalled),
        "stall_durations_s": [round(d, 2) for s in stalled for d in s],
        "slow_cells_0.4_5s": [round(d, 3) for r in runs for d in r["durations"] if 0.4 < d <= STALL_S],
        "errors": sum(r["error"] is not None for r in runs),
        "total_s": round(sum(r["wall"] for r in runs), 1),
        "median_run_s": round(statistics.median(r["wall"] for r in runs), 2),
        "median_widget_cell_s": round(statistics.median(d for r in runs for d in r["durations"] if d <= STALL_S), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=30, help="executions per engine (default 30)")
    parser.add_argument("--fixed-timeout", type=int, default=20, help="cell timeout with the fix (s)")
    parser.add_argument("--stock-timeout", type=int, default=12, help="cell timeout of the stock engine (s)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()

    engines = {"fixed (gspo)": (ENGINE_NAME, args.fixed_timeout), "stock (nbclient)": (None, args.stock_timeout)}
    runs: dict[str, list[dict]] = {label: [] for label in engines}
    with tempfile.TemporaryDirectory() as tmp:
        source = build(Path(tmp) / "stall.ipynb")
        for i in range(args.runs):
            for label, (engine, timeout) in engines.items():
                r = one_run(source, Path(tmp) / f"out-{i}.ipynb", engine, timeout)
                runs[label].append(r)
                flag = " STALL" if any(d > STALL_S for d in r["durations"]) else ""
                cells = " ".join(f"{d:.2f}" for d in r["durations"])
                print(f"[{i + 1:3d}/{args.runs}] {label:<17} {r['wall']:6.2f} s  cells: {cells}{flag}", flush=True)
                if r["error"]:
                    print(f"    error: {r['error']}", flush=True)
    figures = {label: summary(rs) for label, rs in runs.items()}
    print()
    for label, s in figures.items():
        print(
            f"{label:<17} runs {s['runs']}, runs with a stall {s['runs_with_stall']}, stalled cells "
            f"{s['stalled_cells']} {s['stall_durations_s']}, slow cells {s['slow_cells_0.4_5s']}, "
            f"errors {s['errors']}, total {s['total_s']} s, "
            f"median run {s['median_run_s']} s, median widget cell {s['median_widget_cell_s']} s"
        )
    if args.json:
        args.json.write_text(json.dumps({"figures": figures, "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
