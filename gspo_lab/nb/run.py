"""Headless notebook execution: the notebook regression tests and the main job.

    python -m gspo_lab.nb.run --tier full [--out runs/<timestamp>] [--notebooks 00_tour 03_clipping]

runs every notebook of ``gspo_lab.nb.params.NOTEBOOKS`` at a tier through papermill, each writing its results
JSON (``gspo_lab.nb.results``) beside its executed copy, then builds the book, a static site of the executed notebooks,
the claims dashboard and the findings page (``gspo_lab.nb.book``: ``<out>/book/index.html``). The exit status is 1
when a notebook failed or a claim did not hold (the book is built either way).

Where this departs from a plain ``papermill.execute_notebook``, numbered:
    1. The kernel is always ``gspo-lab``: a kernelspec installed into this environment (``sys.prefix``) that runs
       this interpreter (``ensure_kernel``), never whichever ``python3`` kernel a user has.
    2. Every cell has a finite timeout (papermill's default is none) and runs in the notebook's folder.
    3. The engine ``gspo`` (:mod:`gspo_lab.nb.engine`) is papermill's nbclient engine with one fix, for
       jupyter/nbclient#312 (a widget cell that waited for its whole timeout, then carried on without error).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

from gspo_lab.nb.engine import ENGINE_NAME
from gspo_lab.nb.params import NOTEBOOKS, TIERS, parameters_for
from gspo_lab.paths import repo_root, runs_dir

__all__ = [
    "KERNEL_NAME",
    "ENGINE_NAME",
    "ensure_kernel",
    "execute",
    "run_all",
    "main",
]

KERNEL_NAME = "gspo-lab"
KERNEL_DISPLAY_NAME = "Python (gspo-lab)"
FULL_CELL_TIMEOUT_S = 1800
"""Per-cell timeout of the main job: generous (a full-tier training cell is minutes), but finite."""

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _spec_runs_this_python(spec_dir: Path) -> bool:
    try:
        spec = json.loads((spec_dir / "kernel.json").read_text())
    except (OSError, ValueError):
        return False
    return spec.get("argv", [None])[0] == sys.executable and spec.get("display_name") == KERNEL_DISPLAY_NAME


def ensure_kernel() -> Path:
    """Install (once) the ``gspo-lab`` kernelspec into this environment, running ``sys.executable``; its folder.

    Raises RuntimeError when another ``gspo-lab`` kernelspec earlier on Jupyter's path (e.g. a user-level one from
    another clone) would be picked instead and runs a different interpreter.
    """
    from ipykernel.kernelspec import install
    from jupyter_client.kernelspec import KernelSpecManager

    spec_dir = Path(sys.prefix) / "share" / "jupyter" / "kernels" / KERNEL_NAME
    if not _spec_runs_this_python(spec_dir):
        install(kernel_name=KERNEL_NAME, display_name=KERNEL_DISPLAY_NAME, prefix=sys.prefix)
    found = Path(KernelSpecManager().get_kernel_spec(KERNEL_NAME).resource_dir)
    if found.resolve() != spec_dir.resolve() and not _spec_runs_this_python(found):
        raise RuntimeError(
            f"the kernelspec {KERNEL_NAME!r} resolves to {found}, which runs another interpreter than "
            f"{sys.executable}; remove it (`jupyter kernelspec remove {KERNEL_NAME}` there) or unset JUPYTER_PATH"
        )
    return spec_dir


def execute(
    notebook: Path,
    out: Path,
    parameters: dict,
    *,
    cell_timeout: int = 300,
    cwd: Path | None = None,
    engine_name: str | None = ENGINE_NAME,
) -> float:
    """Run ``notebook`` with papermill ``parameters`` on the gspo-lab kernel, write it to ``out``; seconds taken.

    Each cell may take ``cell_timeout`` seconds; the kernel runs in ``cwd`` (default: the notebook's folder).
    A failing cell raises ``papermill.PapermillExecutionError`` (``out`` is still written, with the traceback);
    a cell past its timeout raises ``nbclient.exceptions.CellTimeoutError``. ``engine_name=None`` selects papermill's
    stock engine (only for comparison: bench/nbclient_stall.py).
    """
    import papermill

    if cell_timeout is None or cell_timeout <= 0:
        raise ValueError(f"cell_timeout must be a positive number of seconds, got {cell_timeout!r}")
    ensure_kernel()
    notebook, out = Path(notebook).resolve(), Path(out).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    papermill.execute_notebook(
        str(notebook),
        str(out),
        parameters=dict(parameters),
        engine_name=engine_name,
        kernel_name=KERNEL_NAME,
        language="python",
        progress_bar=False,
        cwd=str(Path(cwd).resolve() if cwd is not None else notebook.parent),
        execution_timeout=int(cell_timeout),
    )
    return time.perf_counter() - start


def _describe(exc: BaseException) -> str:
    """A short, plain-text error message for the run record and the book."""
    ename, evalue = getattr(exc, "ename", None), getattr(exc, "evalue", None)
    if ename is not None:  # PapermillExecutionError: the notebook's own exception
        text = f"{ename}: {evalue} (cell [{getattr(exc, 'exec_count', '?')}])"
    else:
        text = f"{type(exc).__name__}: {exc}"
    text = _ANSI.sub("", text)
    return text if len(text) <= 2000 else text[:2000] + " …"


def run_all(
    tier: str,
    out_dir: Path,
    *,
    notebooks=None,
    progress: bool = True,
    cell_timeout: int = FULL_CELL_TIMEOUT_S,
) -> list[dict]:
    """Execute the notebooks (default: all of ``NOTEBOOKS``, in order) at ``tier`` into ``out_dir``.

    Each ``notebooks/<name>.ipynb`` is written, executed, to ``out_dir/<name>.ipynb`` and records its results to
    ``out_dir/<name>.json``. A failing notebook is recorded and the rest still run. Returns one dict per notebook:
    ``name, tier, parameters, seconds, ok, error (str | None), results (JSON path | None), executed (path | None)``.
    """
    from tqdm.auto import tqdm

    names = list(NOTEBOOKS) if notebooks is None else list(notebooks)
    for name in names:
        parameters_for(name, tier)  # bad names and tiers fail before anything runs
    out_dir = Path(out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    source = repo_root() / "notebooks"
    runs = []
    bar = tqdm(names, desc=f"notebooks ({tier})", unit="nb", disable=not progress)
    for name in bar:
        bar.set_postfix_str(name)
        results, executed = out_dir / f"{name}.json", out_dir / f"{name}.ipynb"
        results.unlink(missing_ok=True)  # a stale JSON must never pass for this run's
        parameters = {**parameters_for(name, tier), "results_path": str(results)}
        start, error = time.perf_counter(), None
        try:
            execute(source / f"{name}.ipynb", executed, parameters, cell_timeout=cell_timeout)
            if not results.is_file():
                error = "the notebook ran but wrote no results JSON (no record_results(results_path, ...) call?)"
        except Exception as exc:  # recorded; the other notebooks still run
            error = _describe(exc)
        runs.append(
            {
                "name": name,
                "tier": tier,
                "parameters": parameters,
                "seconds": round(time.perf_counter() - start, 2),
                "ok": error is None,
                "error": error,
                "results": str(results) if results.is_file() else None,
                "executed": str(executed) if executed.is_file() else None,
            }
        )
    return runs


def main(argv: list[str] | None = None) -> int:
    """The main job: run the notebooks, build the book, print its index.html. 0 when every notebook and claim passed."""
    from gspo_lab.nb.book import build_book
    from gspo_lab.nb.results import summarize

    parser = argparse.ArgumentParser(prog="python -m gspo_lab.nb.run", description=main.__doc__)
    parser.add_argument("--tier", choices=TIERS, default="full", help="parameter tier (default: full)")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: runs/<YYYYmmdd-HHMMSS>)")
    parser.add_argument("--notebooks", nargs="+", choices=list(NOTEBOOKS), default=None, help="a subset, in order")
    parser.add_argument(
        "--cell-timeout", type=int, default=FULL_CELL_TIMEOUT_S, help=f"seconds per cell ({FULL_CELL_TIMEOUT_S})"
    )
    args = parser.parse_args(argv)
    if args.cell_timeout <= 0:
        parser.error(f"--cell-timeout must be positive, got {args.cell_timeout}")
    out = args.out if args.out is not None else runs_dir() / time.strftime("%Y%m%d-%H%M%S")
    runs = run_all(args.tier, out, notebooks=args.notebooks, cell_timeout=args.cell_timeout)
    (Path(out) / "runs.json").write_text(json.dumps(runs, indent=1))
    s = summarize(runs)
    for run in runs:
        status = "ok" if run["ok"] else f"FAILED: {run['error']}"
        print(f"{run['name']:<22} {run['seconds']:8.1f} s  {status}")
    print(f"notebooks ok {s['notebooks_ok']}/{s['notebooks']}, claims passed {s['claims_passed']}/{s['claims']}")
    book = build_book(Path(out), runs)
    for warning in book.warnings:
        print(f"book: {warning}")
    print(f"book built in {book.seconds:.1f} s ({len(book.warnings)} Sphinx warnings)")
    print(book.index)
    return 0 if s["notebooks_ok"] == s["notebooks"] and s["claims_passed"] == s["claims"] else 1


if __name__ == "__main__":
    sys.exit(main())
