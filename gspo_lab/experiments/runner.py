"""Running cells: a grid of training runs (or probes) from a spec, in worker processes, resumable, one result each.

    gspo-lab sweep data/specs/clip_fractions.toml --seeds confirm     # run (or finish) every cell of the spec
    gspo-lab sweep --core                                             # every spec marked core = true
    gspo-lab sweep data/specs/clip_fractions.toml --merge             # only merge finished cells into one table

Each cell trains with :func:`gspo_lab.train.train` into ``runs/sweeps/<name>/<key>/`` (resumable: a killed cell
continues from its last RL step) and, once finished, writes its result (:mod:`gspo_lab.experiments.store`). A cell
whose result exists is skipped. A cell's wall time is the sum over every segment it ran in (a resumed cell keeps
the time of the segments before; ``wall.json`` in its run folder holds them).
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import subprocess
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import pandas as pd

from gspo_lab.config import TrainConfig
from gspo_lab.experiments.spec import CODE_VERSION, Cell, Spec, cell_key, cells, core_specs
from gspo_lab.experiments.store import base_of, merge, result_path, results_root, write_result
from gspo_lab.experiments.summary import per_rollout, stored_rows, summarize
from gspo_lab.paths import repo_root, runs_dir

__all__ = [
    "run_cell",
    "cell_result",
    "run_sweep",
    "branch_points",
    "pending",
    "run_core",
    "rerun_prefix",
    "git_commit",
    "machine",
]


def git_commit() -> str:
    """The repository's HEAD, with ``+dirty`` when ``gspo_lab/`` has uncommitted changes; ``unknown`` without git."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo_root(), capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "gspo_lab"], cwd=repo_root(), capture_output=True, text=True, timeout=10
        ).stdout.strip()
        return out.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def machine() -> dict:
    return {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count()}


def _record(cell: Cell, command: str, wall_s: float, **fields) -> dict:
    return {
        "spec": cell.spec,
        "key": cell.key,
        "code_version": CODE_VERSION,
        "point": cell.point,
        "seed": cell.seed,
        "config": dataclasses.asdict(cell.cfg),
        **fields,
        "command": command,
        "git_commit": git_commit(),
        "machine": machine(),
        "wall_s": round(wall_s, 1),
    }


def _probe_result(cell: Cell, command: str) -> dict:
    from gspo_lab.experiments.probes import run_probe

    t0 = time.perf_counter()
    out = run_probe(cell.probe, cell.cfg, **cell.probe_kw)
    probe = {"name": cell.probe, "kw": cell.probe_kw}
    return _record(cell, command, time.perf_counter() - t0, probe=probe, summary=out["summary"], tables=out["tables"])


class _WallClock:
    """The wall time of a resumable run over all its segments, kept in ``<run_dir>/wall.json`` after every step."""

    def __init__(self, run_dir: Path):
        self.path = run_dir / "wall.json"
        saved = json.loads(self.path.read_text()) if self.path.is_file() else {"segments": []}
        self.before = [float(s) for s in saved["segments"]]
        self.t0 = time.perf_counter()

    def segments(self) -> list[float]:
        return [*self.before, round(time.perf_counter() - self.t0, 1)]

    def save(self, *_):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name("wall.json.tmp")
        tmp.write_text(json.dumps({"segments": self.segments()}))
        os.replace(tmp, self.path)


def run_cell(cell: Cell, *, command: str = "", keep=()) -> dict:
    """Train one cell (resuming its run folder if one is there), write its result file, return the result.
    A probe cell (``cell.probe``) runs its probe instead (gspo_lab/experiments/probes.py); nothing to resume.
    ``keep``: rollouts whose states the run keeps (its branches start there)."""
    result = cell_result(cell, command=command, keep=keep)
    write_result(result_path(cell), result, base_of(cell))
    return result


def _start_branch(cell: Cell, run_dir: Path) -> None:
    """A branch cell's run folder, started from its trunk (issue 22, item 5): the trunk cell's kept state when the
    sweep ran it first (``runs/sweeps/<spec>/<trunk key>/``), else the trunk's first ``branch_at`` rollouts run in
    ``<run_dir>/trunk/`` (the same numbers: nothing in a run before rollout k depends on later rollouts)."""
    from gspo_lab.train import branch_from, train

    if (run_dir / "LATEST").is_file():
        return  # started (or finished) before: train resumes it
    cfg, at = cell.cfg, cell.cfg.branch_at
    trunk_cfg = cfg.trunk_config()
    shared = runs_dir() / "sweeps" / cell.spec / cell_key(trunk_cfg)
    if not (shared / f"state-{at:05d}").is_dir():
        shared = run_dir / "trunk"
        train(dataclasses.replace(trunk_cfg, rollouts=at), shared, resume="auto", progress=False, keep=(at,))
    branch_from(shared, cfg, run_dir)


def cell_result(cell: Cell, *, command: str = "", keep=()) -> dict:
    """:func:`run_cell` without writing the result: what a Ray task returns to the driver (cluster.py)."""
    if cell.probe is not None:
        return _probe_result(cell, command)
    from gspo_lab.train import load_state, train

    run_dir = runs_dir() / "sweeps" / cell.spec / cell.key
    clock = _WallClock(run_dir)
    diverged = None
    try:
        if cell.cfg.branch_at:
            _start_branch(cell, run_dir)
        table = train(cell.cfg, run_dir, resume="auto", progress=False, on_step=clock.save, keep=keep)
        history, evals = table, table.attrs["eval"]
    except FloatingPointError as err:  # the policy diverged: keep what was saved before it
        diverged = str(err)
        state = load_state(cell.cfg, run_dir) if (run_dir / "LATEST").exists() else None
        history = pd.DataFrame(state.history if state else [])
        evals = pd.DataFrame(state.eval_history if state else [])
    segments = clock.segments()
    summary = summarize(evals, history, diverged=diverged is not None)
    result = _record(
        cell,
        command,
        sum(segments),
        summary=summary,
        diverged=diverged,
        per_rollout=stored_rows(per_rollout(history)),  # every mean, the maxima something reads
        eval=evals.to_dict(orient="list"),
    )
    if len(segments) > 1:
        result["wall_segments_s"] = segments
    return result


def _worker(cell: Cell, command: str, keep=()) -> tuple[str, float]:
    import torch

    torch.set_num_threads(1)
    result = run_cell(cell, command=command, keep=keep)
    return cell.key, result["wall_s"]


def branch_points(todo: list[Cell]) -> dict[str, tuple[int, ...]]:
    """Per trunk cell key, the rollouts after which the branches in ``todo`` start: the states its run keeps."""
    points: dict[str, set] = {}
    for cell in todo:
        if cell.cfg.branch_at:
            points.setdefault(cell_key(cell.cfg.trunk_config()), set()).add(cell.cfg.branch_at)
    return {key: tuple(sorted(at)) for key, at in points.items()}


def pending(spec: Spec, seeds: str = "all", *, core: bool = False) -> tuple[list[Cell], int]:
    """The cells of ``spec`` with no stored result, seed-major (a partial sweep holds complete, comparable seeds),
    and the number of cells in all."""
    every = cells(spec, seeds, core=core)
    todo = [c for c in every if not result_path(c).exists()]
    order = spec.seeds("all")
    todo.sort(key=lambda c: order.index(c.seed))
    return todo, len(every)


def run_sweep(
    spec: Spec, *, seeds: str = "all", workers: int | None = None, command: str = "", progress=True, core=False
):
    """Run every unfinished cell of ``spec`` (``core``: of its core set) in ``workers`` processes (default: the CPU
    count); returns the merge."""
    from tqdm.auto import tqdm

    todo, total = pending(spec, seeds, core=core)
    workers = workers or os.cpu_count() or 1
    bar = tqdm(total=total, initial=total - len(todo), desc=f"sweep {spec.name}", unit="cell", disable=not progress)
    keep = branch_points(todo)
    phases = [[c for c in todo if not c.cfg.branch_at], [c for c in todo if c.cfg.branch_at]]  # trunks first
    for phase in phases:
        if workers == 1:
            for cell in phase:
                run_cell(cell, command=command, keep=keep.get(cell.key, ()))
                bar.update(1)
            continue
        import multiprocessing

        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = [pool.submit(_worker, cell, command, keep.get(cell.key, ())) for cell in phase]
            for future in as_completed(futures):
                future.result()
                bar.update(1)
    bar.close()
    return merge(spec)


def run_core(*, workers: int | None = None, seeds: str = "confirm", command: str = "", progress=True) -> dict:
    """Run the core set (every core spec's core cells, :meth:`Spec.in_core`) and time it. The timing record —
    wall time, cells run and skipped, workers, machine, commit — is written to ``<results>/core_timing.json``; it
    measures a regeneration only when ``cells_skipped`` is 0 (run with ``GSPO_LAB_RESULTS`` / ``GSPO_LAB_RUNS``
    pointing to empty folders to measure one without touching the stored results)."""
    specs = core_specs()
    todo = {s.name: [c for c in cells(s, seeds, core=True) if not result_path(c).exists()] for s in specs}
    total = sum(len(cells(s, seeds, core=True)) for s in specs)
    start, commit = time.time(), git_commit()  # the code the cells start from (HEAD may move during a long run)
    for spec in specs:
        run_sweep(spec, seeds=seeds, workers=workers, command=command, progress=progress, core=True)
    record = {
        "wall_s": round(time.time() - start, 1),
        "cells_run": sum(map(len, todo.values())),
        "cells_skipped": total - sum(map(len, todo.values())),
        "per_spec": {name: len(c) for name, c in todo.items()},
        "workers": workers or os.cpu_count() or 1,
        "seeds": seeds,
        "command": command,
        "git_commit": commit,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(start)),
        "machine": machine(),
    }
    out = results_root() / "core_timing.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n")
    return record


def rerun_prefix(result: dict, run_dir: str | Path, rollouts: int = 5) -> dict[str, list]:
    """Re-train the first ``rollouts`` rollout batches of a stored training cell into ``run_dir``; its per-rollout
    aggregates (:func:`~gspo_lab.experiments.summary.per_rollout`). On the machine and thread count that wrote the
    result they equal the stored rows exactly (the loop's generators are seeded; the schedule does not depend on
    ``rollouts``)."""
    import torch

    from gspo_lab.train import train

    if "probe" in result:
        raise ValueError(f"result {result['key']} is a probe cell, not a training run")
    fields = {k: v for k, v in result["config"].items() if k in {f.name for f in dataclasses.fields(TrainConfig)}}
    if rollouts > fields["rollouts"]:
        raise ValueError(f"rollouts must be <= the cell's {fields['rollouts']}, got {rollouts}")
    cfg = TrainConfig(**{**fields, "rollouts": rollouts})
    threads = torch.get_num_threads()
    try:
        table = train(cfg, Path(run_dir), progress=False)
    finally:
        torch.set_num_threads(threads)
    return per_rollout(table)
