"""Live runs for notebook 04: GRPO and GSPO trained from the same cold start, saved as they go, resumed on a re-run.

    runs = live_runs({"GRPO": cfg_grpo, "GSPO": cfg_gspo}, runs_dir() / "04_live", on_step=redraw)
    runs["GRPO"].per_rollout        # one row per rollout: the mean and max of each logged metric
    runs["GRPO"].evals              # one row per held-out evaluation

Each config trains with :func:`gspo_lab.train.train` into ``<root>/<name>-<hash of the config>`` with
``resume="auto"``: a run saved there continues (or, finished, is read back without training), so a kernel restart
or a second Run All loses nothing and repeats nothing. Two or more configs train side by side, one worker process
each; ``on_step(name, run)`` is called in this process with the run so far each time a run's saved state advances
(a live plot follows both runs while they train).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from gspo_lab.config import TrainConfig

__all__ = ["LiveRun", "live_runs", "run_folder"]


@dataclass(frozen=True)
class LiveRun:
    """A run so far: its config, per-rollout aggregates (``<metric>:mean`` / ``:max``) and held-out evaluations."""

    cfg: TrainConfig
    per_rollout: pd.DataFrame
    evals: pd.DataFrame


def run_folder(root: str | Path, name: str, cfg: TrainConfig) -> Path:
    """``<root>/<name>-<12 hex digits of the config's hash>``: another config never resumes this one's run."""
    digest = hashlib.sha256(json.dumps(dataclasses.asdict(cfg), sort_keys=True).encode()).hexdigest()[:12]
    return Path(root) / f"{name}-{digest}"


def _as_run(cfg: TrainConfig, history: list[dict], evals: list[dict]) -> LiveRun:
    table = pd.DataFrame(history)
    if table.empty:
        return LiveRun(cfg, pd.DataFrame({"rollout": []}), pd.DataFrame(evals))
    numeric = table.drop(columns=["update", "update_in_rollout", "epoch"], errors="ignore").select_dtypes("number")
    grouped = numeric.groupby("rollout")
    per_rollout = pd.concat([grouped.mean().add_suffix(":mean"), grouped.max().add_suffix(":max")], axis=1)
    return LiveRun(cfg, per_rollout.reset_index(), pd.DataFrame(evals))


def live_runs(
    cfgs: dict[str, TrainConfig],
    root: str | Path,
    *,
    on_step=None,
    progress: bool = True,
    workers: int | None = None,
    poll_s: float = 0.5,
) -> dict:
    """Train (or resume, or read back) each named config; ``{name: LiveRun}`` (module docstring).

    With more than one config, the configs train side by side, one worker process each (at most ``workers``, default
    the CPU count): each run is seeded and sets its own torch threads (``cfg.threads``), so the runs are those of one
    after another (tests/test_live.py compares them) in about the time of the longest; a bar follows the rollouts
    saved. This process polls the run folders every ``poll_s`` seconds and calls ``on_step(name, run)`` with a run
    read back from its newest saved state (:func:`gspo_lab.train.saved_rows`): whenever any run's state holds more
    rollouts than the last call showed, every run with a saved state is passed, in the configs' order (so a caller
    that draws at the last one draws every run's newest state); a step saved between two polls is drawn with the
    next. With ``workers=1`` (or one config) they train in this process, in turn, and ``on_step`` is called after
    every RL step."""
    import os

    from gspo_lab.train import train

    workers = min(len(cfgs), workers or os.cpu_count() or 1)
    if workers > 1:
        return _side_by_side(cfgs, Path(root), workers, progress, on_step, poll_s)
    out = {}
    for name, cfg in cfgs.items():

        def step(state, _rows, name=name, cfg=cfg):
            if on_step is not None:
                on_step(name, _as_run(cfg, state.history, state.eval_history))

        table = train(cfg, run_folder(root, name, cfg), resume="auto", progress=progress, on_step=step)
        out[name] = _as_run(cfg, table.to_dict(orient="records"), table.attrs["eval"].to_dict(orient="records"))
    return out


def _train_records(cfg: TrainConfig, folder: Path) -> tuple[list[dict], list[dict]]:
    """A worker process's run: the rows and evaluations of ``train(cfg, folder, resume="auto")``."""
    from gspo_lab.train import train

    table = train(cfg, folder, resume="auto", progress=False)
    return table.to_dict(orient="records"), table.attrs["eval"].to_dict(orient="records")


def _saved_rollouts(folder: Path) -> int:
    """The rollouts a run folder's newest complete state holds (0 before its first)."""
    latest = folder / "LATEST"
    return int(latest.read_text().strip().rpartition("-")[2]) if latest.is_file() else 0


def _side_by_side(cfgs: dict[str, TrainConfig], root: Path, workers: int, progress: bool, on_step, poll_s: float):
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, wait

    from tqdm.auto import tqdm

    from gspo_lab.train import saved_rows

    folders = {name: run_folder(root, name, cfg) for name, cfg in cfgs.items()}
    shown = dict.fromkeys(cfgs, 0)  # rollouts of the state each run was last shown at
    total = sum(cfg.rollouts for cfg in cfgs.values())
    with tqdm(total=total, desc=" + ".join(cfgs), unit="rollout", disable=not progress) as bar:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = {name: pool.submit(_train_records, cfg, folders[name]) for name, cfg in cfgs.items()}

            def poll():
                saved = {name: min(_saved_rollouts(f), cfgs[name].rollouts) for name, f in folders.items()}
                bar.update(sum(saved.values()) - bar.n)
                if on_step is None or all(saved[n] <= shown[n] for n in cfgs):
                    return
                for name in [n for n in cfgs if saved[n] > 0]:  # every run, so the last call sees all of them new
                    run = _as_run(cfgs[name], *saved_rows(folders[name]))
                    shown[name] = max(saved[name], len(run.per_rollout))
                    on_step(name, run)

            try:
                while wait(list(futures.values()), timeout=poll_s).not_done:
                    poll()
                poll()  # the last states too: each run is shown at its last rollout
            except BaseException:  # an interrupt or a failing callback stops the workers, not waits for them
                for process in (getattr(pool, "_processes", None) or {}).values():  # Python < 3.14: no public way
                    process.terminate()
                raise
            return {name: _as_run(cfgs[name], *future.result()) for name, future in futures.items()}
