"""Sweeps: a grid of training runs from a committed spec file, in worker processes, resumable, one result per cell.

    gspo-lab sweep data/specs/clip_fractions.toml --seeds confirm     # run (or finish) every cell of the spec
    gspo-lab sweep --core                                             # every spec marked core = true
    gspo-lab sweep data/specs/clip_fractions.toml --merge             # only merge finished cells into one table

A spec (TOML, ``data/specs/<name>.toml``) declares, before any run: ``name``, ``description``, ``core`` (part of
the core set the findings page regenerates: ``true`` for every grid point, or a table of grid keys to the values
that are core, e.g. ``[core]`` ``lr = [3e-5]``; the other points are the extended set), ``seeds`` (``search``
and ``confirm`` lists: a regime found on search seeds is confirmed on fresh ones), ``[base]`` (TrainConfig fields
shared by every cell) and ``[grid]`` (lists of values; the cells are their Cartesian product × seeds; the objective
is usually the only other difference between arms).
A grid key naming several fields, ``"objective,routing_replay" = [["grpo", false], ["gspo", false]]``, varies them
together (arms, or ε pairs). The string ``"off"`` stands for None (e.g. ``grad_clip = "off"``; TOML has no null).

Each cell trains with :func:`gspo_lab.train.train` into ``runs/sweeps/<name>/<key>/`` (resumable: a killed cell
continues from its last RL step) and, once finished, writes one immutable compressed result
``data/results/<name>/<key>.json.gz``, where ``key`` hashes the cell's full config and :data:`CODE_VERSION`. A cell
whose result exists is skipped. The result holds the config, the seed, per-rollout aggregates of every logged
metric (mean and max, so a spike shows), the held-out evaluations, the summary (:func:`summarize`), the command,
the git commit, the machine and the wall time. :func:`merge` gathers a spec's results into one table (a row per
cell: its grid values, seed and summary).

Collapse, declared before any run (:func:`summarize`): with held-out accuracy sampled at the training temperature,
a_0 at rollout 0 and a threshold of ``COLLAPSE_FRACTION · a_0``, a run *collapsed* when some evaluation falls below
the threshold and every later one stays below it (the first such evaluation is the collapse point). A run whose loss
or gradient became non-finite *diverged*; it counts as collapsed.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import itertools
import json
import math
import os
import platform
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from gspo_lab.config import TrainConfig
from gspo_lab.paths import data_dir, repo_root, runs_dir

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = [
    "CODE_VERSION",
    "COLLAPSE_FRACTION",
    "Spec",
    "Cell",
    "load_spec",
    "cells",
    "cell_key",
    "run_cell",
    "run_sweep",
    "run_core",
    "core_specs",
    "summarize",
    "per_rollout",
    "load_result",
    "rerun_prefix",
    "merge",
    "compare_results",
]

#: bumped whenever the loop's numbers for a given config change (then every stored key changes with it)
CODE_VERSION = "2026-12-02.1"
#: a run collapsed when its held-out sampled accuracy falls below this fraction of the cold start's and stays there
COLLAPSE_FRACTION = 0.5
SEED_SETS = ("search", "confirm", "all")
#: TrainConfig fields added after CODE_VERSION was set, whose default reproduces the earlier loop exactly: they enter
#: a cell's key only when set away from that default, so the stored results stay addressable
KEY_IF_NOT_DEFAULT = {"token_advantage": 0.0}


@dataclass(frozen=True)
class Spec:
    """A committed experiment: the grid, the seeds declared before the runs, whether it is part of the core set."""

    name: str
    description: str
    core: bool
    search_seeds: tuple[int, ...]
    confirm_seeds: tuple[int, ...]
    base: dict
    grid: dict
    path: Path
    probe: str | None = None  # a probe of gspo_lab.probes instead of a training run
    core_grid: dict | None = None  # the core subset of the grid ({grid key: values}); None = all of it (if core)

    def seeds(self, which: str) -> tuple[int, ...]:
        if which not in SEED_SETS:
            raise ValueError(f"seeds must be one of {SEED_SETS}, got {which!r}")
        return {"search": self.search_seeds, "confirm": self.confirm_seeds}.get(
            which, self.search_seeds + self.confirm_seeds
        )

    def in_core(self, point: dict) -> bool:
        """Whether a grid point (``{field: value}``) belongs to the core set."""
        if not self.core:
            return False
        for key, allowed in (self.core_grid or {}).items():
            names = key.split(",")
            value = [point[n] for n in names] if len(names) > 1 else point[names[0]]
            if value not in allowed:
                return False
        return True

    def core_label(self) -> str:
        """``core set``, ``extended set``, or for a subset ``core set at lr 3e-05; the other points extended``."""
        if not self.core:
            return "extended set"
        if not self.core_grid:
            return "core set"
        return f"core set at {self.core_where()}; the other points extended"

    def core_where(self) -> str:
        """The grid points of the core subset, e.g. ``lr 3e-05``; empty when the whole spec (or none of it) is core."""
        return "; ".join(f"{k} {', '.join(map(str, v))}" for k, v in self.core_grid.items())


@dataclass(frozen=True)
class Cell:
    """One run of a spec: its grid point, its seed and the full config."""

    spec: str
    point: dict
    seed: int
    cfg: TrainConfig
    probe: str | None = None
    probe_kw: dict = dataclasses.field(default_factory=dict)

    @property
    def key(self) -> str:
        return cell_key(self.cfg, self.probe, self.probe_kw)


def load_spec(path: str | Path) -> Spec:
    """Read and check a spec file; errors name the field."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"spec {path} not found (specs live in data/specs/)")
    raw = tomllib.loads(path.read_text())
    for field in ("name", "description", "seeds", "base", "grid"):
        if field not in raw:
            raise ValueError(f"spec {path}: missing field {field!r}")
    seeds = raw["seeds"]
    search, confirm = tuple(seeds.get("search", ())), tuple(seeds.get("confirm", ()))
    if set(search) & set(confirm):
        raise ValueError(
            f"spec {path}: confirmation seeds must be fresh, {sorted(set(search) & set(confirm))} are both"
        )
    names = {f.name for f in dataclasses.fields(TrainConfig)}
    probe = raw.get("probe")
    if probe is not None:
        from gspo_lab.probes import probe_params

        try:
            names |= probe_params(probe)
        except ValueError as err:
            raise ValueError(f"spec {path}: {err}") from None
    for section in ("base", "grid"):
        unknown = {name for key in raw[section] for name in key.split(",")} - names
        if unknown:
            what = "TrainConfig" + (f" and probe {probe!r}" if probe else "")
            raise ValueError(f"spec {path}: [{section}] has fields {what} does not: {sorted(unknown)}")
    if "seed" in raw["base"] or "seed" in raw["grid"]:
        raise ValueError(f"spec {path}: seeds go in [seeds] (search/confirm), not in [base] or [grid]")
    for k, v in raw["grid"].items():
        if not isinstance(v, list) or not v:
            raise ValueError(f"spec {path}: [grid] {k} must be a non-empty list")
        width = len(k.split(","))
        if width > 1 and not all(isinstance(x, list) and len(x) == width for x in v):
            raise ValueError(f"spec {path}: [grid] {k!r} must list {width}-element lists")
    core, core_grid = raw.get("core", False), None
    if isinstance(core, dict):
        for k, v in core.items():
            if k not in raw["grid"]:
                raise ValueError(f"spec {path}: [core] key {k!r} is not a [grid] key ({sorted(raw['grid'])})")
            if not isinstance(v, list) or not v or any(x not in raw["grid"][k] for x in v):
                raise ValueError(f"spec {path}: [core] {k} must be a non-empty list of [grid] {k}'s values")
        core, core_grid = bool(core), core
    elif not isinstance(core, bool):
        raise ValueError(f"spec {path}: core must be true, false or a table of grid values, got {core!r}")
    spec = Spec(raw["name"], raw["description"], core, search, confirm, raw["base"], raw["grid"], path, probe,
                core_grid)  # fmt: skip
    cells(spec, "all")  # every config must be valid now, not hours into the sweep
    return spec


def cells(spec: Spec, seeds: str = "all", *, core: bool = False) -> list[Cell]:
    """Every cell of the spec for a seed set, in a fixed order (grid points × seeds); ``core``: only the core set's
    grid points (:meth:`Spec.in_core`)."""
    out = []
    keys = list(spec.grid)
    for values in itertools.product(*(spec.grid[k] for k in keys)):
        point = {}
        for key, value in zip(keys, values, strict=True):
            names = key.split(",")
            point.update(zip(names, value if len(names) > 1 else [value], strict=True))
        if core and not spec.in_core(point):
            continue
        fields = {k: (None if v == "off" else v) for k, v in {**spec.base, **point}.items()}
        config_names = {f.name for f in dataclasses.fields(TrainConfig)}
        probe_kw = {k: v for k, v in fields.items() if k not in config_names}
        fields = {k: v for k, v in fields.items() if k in config_names}
        for seed in spec.seeds(seeds):
            out.append(Cell(spec.name, point, seed, TrainConfig(**fields, seed=seed), spec.probe, probe_kw))
    return out


def cell_key(cfg: TrainConfig, probe: str | None = None, probe_kw: dict | None = None) -> str:
    """16 hex digits of SHA-256 over the full config and :data:`CODE_VERSION` (and the probe with its arguments)."""
    config = dataclasses.asdict(cfg)
    for name, default in KEY_IF_NOT_DEFAULT.items():
        if config.get(name) == default:
            del config[name]
    content = {"config": config, "code": CODE_VERSION}
    if probe is not None:
        content["probe"] = {"name": probe, "kw": probe_kw or {}}
    text = json.dumps(content, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _results_dir(spec_name: str) -> Path:
    return Path(os.environ.get("GSPO_LAB_RESULTS", data_dir() / "results")) / spec_name


def result_path(cell: Cell) -> Path:
    return _results_dir(cell.spec) / f"{cell.key}.json.gz"


def per_rollout(history: pd.DataFrame) -> dict[str, list]:
    """Per rollout, the mean and the max of every numeric metric over its updates: ``{"<key>:mean": [...], ...}``."""
    if history.empty:
        return {"rollout": []}
    numeric = history.drop(columns=["update", "update_in_rollout", "epoch"], errors="ignore")
    numeric = numeric.select_dtypes("number")
    grouped = numeric.groupby("rollout")
    out = {"rollout": [int(r) for r in grouped.groups]}
    for stat in ("mean", "max"):
        table = getattr(grouped, stat)()
        for col in table.columns:
            out[f"{col}:{stat}"] = [None if not math.isfinite(v) else float(v) for v in table[col]]
    return out


def summarize(evals: pd.DataFrame, history: pd.DataFrame, *, diverged: bool = False) -> dict:
    """The cell's summary: cold-start and final held-out accuracy, collapse (module docstring), clip fractions."""
    out: dict = {"diverged": diverged}
    if not evals.empty:
        acc = evals["eval/accuracy_sampled"].tolist()
        threshold = COLLAPSE_FRACTION * acc[0]
        below = [a < threshold for a in acc]
        first = next((i for i in range(len(acc)) if all(below[i:])), None)
        out.update(
            eval_start=acc[0],
            eval_final=acc[-1],
            eval_best=max(acc),
            eval_greedy_start=float(evals["eval/accuracy_greedy"].iloc[0]),
            eval_greedy_final=float(evals["eval/accuracy_greedy"].iloc[-1]),
            collapsed=diverged or first is not None,
            collapse_rollout=int(evals["rollout"].iloc[first]) if first is not None else None,
        )
    if not history.empty:
        off = history[history["update_in_rollout"] > 0]
        out.update(
            rollouts_done=int(history["rollout"].max()) + 1,
            reward_start=float(history["reward/mean"].iloc[0]),
            reward_final=float(history.groupby("rollout")["reward/mean"].first().iloc[-5:].mean()),
            clip_token_frac=float(off["clip/token_frac"].mean()) if len(off) else 0.0,
            clip_seq_frac=float(off["clip/seq_frac"].mean()) if len(off) else 0.0,
            grad_norm_max=float(history["grad/norm"].max()),
        )
        if "moe/expert_change" in history:
            out["expert_change"] = float(off["moe/expert_change"].mean()) if len(off) else 0.0
    return out


def _git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo_root(), capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "gspo_lab"], cwd=repo_root(), capture_output=True,
                               text=True, timeout=10).stdout.strip()  # fmt: skip
        return out.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _write_gz(path: Path, obj: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with gzip.open(tmp, "wt") as f:
        json.dump(obj, f, separators=(",", ":"))
    os.replace(tmp, path)


def _run_probe_cell(cell: Cell, command: str) -> dict:
    from gspo_lab.probes import run_probe

    t0 = time.perf_counter()
    out = run_probe(cell.probe, cell.cfg, **cell.probe_kw)
    result = {
        "spec": cell.spec,
        "key": cell.key,
        "code_version": CODE_VERSION,
        "point": cell.point,
        "seed": cell.seed,
        "config": dataclasses.asdict(cell.cfg),
        "probe": {"name": cell.probe, "kw": cell.probe_kw},
        "summary": out["summary"],
        "tables": out["tables"],
        "command": command,
        "git_commit": _git_commit(),
        "machine": {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count()},
        "wall_s": round(time.perf_counter() - t0, 1),
    }
    _write_gz(result_path(cell), result)
    return result


def run_cell(cell: Cell, *, command: str = "") -> dict:
    """Train one cell (resuming its run folder if one is there), write its result file, return the result.
    A probe cell (``cell.probe``) runs its probe instead (gspo_lab/probes.py); nothing to resume."""
    if cell.probe is not None:
        return _run_probe_cell(cell, command)
    from gspo_lab.train import load_state, train

    run_dir = runs_dir() / "sweeps" / cell.spec / cell.key
    t0 = time.perf_counter()
    diverged = None
    try:
        table = train(cell.cfg, run_dir, resume="auto", progress=False)
        history, evals = table, table.attrs["eval"]
    except FloatingPointError as err:  # the policy diverged: keep what was saved before it
        diverged = str(err)
        state = load_state(cell.cfg, run_dir) if (run_dir / "LATEST").exists() else None
        history = pd.DataFrame(state.history if state else [])
        evals = pd.DataFrame(state.eval_history if state else [])
    result = {
        "spec": cell.spec,
        "key": cell.key,
        "code_version": CODE_VERSION,
        "point": cell.point,
        "seed": cell.seed,
        "config": dataclasses.asdict(cell.cfg),
        "summary": summarize(evals, history, diverged=diverged is not None),
        "diverged": diverged,
        "per_rollout": per_rollout(history),
        "eval": evals.to_dict(orient="list"),
        "command": command,
        "git_commit": _git_commit(),
        "machine": {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count()},
        "wall_s": round(time.perf_counter() - t0, 1),
    }
    _write_gz(result_path(cell), result)
    return result


def _worker(cell: Cell, command: str) -> tuple[str, float]:
    import torch

    torch.set_num_threads(1)
    result = run_cell(cell, command=command)
    return cell.key, result["wall_s"]


def run_sweep(
    spec: Spec, *, seeds: str = "all", workers: int | None = None, command: str = "", progress=True, core=False
):
    """Run every unfinished cell of ``spec`` (``core``: of its core set) in ``workers`` processes (default: the CPU
    count); returns the merge."""
    from tqdm.auto import tqdm

    todo = [c for c in cells(spec, seeds, core=core) if not result_path(c).exists()]
    order = spec.seeds("all")
    todo.sort(key=lambda c: order.index(c.seed))  # seed-major: a partial sweep holds complete, comparable seeds
    workers = workers or os.cpu_count() or 1
    total = len(cells(spec, seeds, core=core))
    bar = tqdm(total=total, initial=total - len(todo), desc=f"sweep {spec.name}", unit="cell", disable=not progress)
    if workers == 1:
        for cell in todo:
            run_cell(cell, command=command)
            bar.update(1)
    else:
        import multiprocessing

        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = [pool.submit(_worker, cell, command) for cell in todo]
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
    start = time.time()
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
        "git_commit": _git_commit(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(start)),
        "machine": {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count()},
    }
    out = _results_dir("core_timing.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n")
    return record


def rerun_prefix(result: dict, run_dir: str | Path, rollouts: int = 5) -> dict[str, list]:
    """Re-train the first ``rollouts`` rollout batches of a stored training cell into ``run_dir``; its per-rollout
    aggregates (:func:`per_rollout`). On the machine and thread count that wrote the result they equal the stored
    rows exactly (the loop's generators are seeded; the schedule does not depend on ``rollouts``)."""
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


def load_result(path: str | Path) -> dict:
    with gzip.open(path, "rt") as f:
        return json.load(f)


def compare_results(fresh: str | Path, stored: str | Path | None = None) -> dict:
    """Compare every result under ``fresh`` (``<spec>/<key>.json.gz``, e.g. a re-run of the core set into a scratch
    folder) with the stored result of the same key (default ``data/results``): how many summaries are identical, how
    many agree on collapse, the largest absolute difference of a numeric summary field, the keys that differ."""
    stored = Path(stored) if stored is not None else data_dir() / "results"
    out = {"compared": 0, "identical": 0, "same_collapse": 0, "missing": 0, "max_abs_diff": 0.0, "differing": []}
    for path in sorted(Path(fresh).glob("*/*.json.gz")):
        other = stored / path.parent.name / path.name
        if not other.exists():
            out["missing"] += 1
            continue
        a, b = load_result(path)["summary"], load_result(other)["summary"]
        out["compared"] += 1
        out["identical"] += a == b
        out["same_collapse"] += a.get("collapsed") == b.get("collapsed")
        for k in set(a) & set(b):
            x, y = a[k], b[k]
            if isinstance(x, float | int) and isinstance(y, float | int) and not isinstance(x, bool):
                if math.isfinite(x) and math.isfinite(y):
                    out["max_abs_diff"] = max(out["max_abs_diff"], abs(x - y))
        if a != b:
            out["differing"].append(f"{path.parent.name}/{path.name.removesuffix('.json.gz')}")
    return out


def merge(spec: Spec, *, write: bool = True) -> pd.DataFrame:
    """One row per finished cell of ``spec`` (current code version): grid values, seed, summary. With ``write``,
    also saved as ``data/results/<name>.csv``."""
    keys = {c.key: c for c in cells(spec, "all")}
    rows = []
    for path in sorted(_results_dir(spec.name).glob("*.json.gz")):
        result = load_result(path)
        if result["key"] not in keys:
            continue  # another code version or a cell no longer in the spec: kept on disk, left out of the table
        seed_set = "search" if result["seed"] in spec.search_seeds else "confirm"
        rows.append({**result["point"], "seed": result["seed"], "seed_set": seed_set, "key": result["key"],
                     **result["summary"], "wall_s": result["wall_s"]})  # fmt: skip
    table = pd.DataFrame(rows)
    if rows:
        columns = [name for key in spec.grid for name in key.split(",")]
        table = table.sort_values(columns + ["seed"], key=lambda c: c.astype(str)).reset_index(drop=True)
    if rows and write:
        out = _results_dir(spec.name).with_suffix(".csv")
        table.to_csv(out.with_name(out.name + ".tmp"), index=False)
        os.replace(out.with_name(out.name + ".tmp"), out)
    return table


def core_specs() -> list[Spec]:
    """Every spec in ``data/specs/`` marked ``core = true``."""
    return [s for s in (load_spec(p) for p in sorted((data_dir() / "specs").glob("*.toml"))) if s.core]
