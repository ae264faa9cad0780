"""Live runs for notebook 04: GRPO and GSPO trained from the same cold start, saved as they go, resumed on a re-run.

    runs = live_runs({"GRPO": cfg_grpo, "GSPO": cfg_gspo}, runs_dir() / "04_live", on_step=redraw)
    runs["GRPO"].per_rollout        # one row per rollout: the mean and max of each logged metric
    runs["GRPO"].evals              # one row per held-out evaluation

Each config trains with :func:`gspo_lab.train.train` into ``<root>/<name>-<hash of the config>`` with
``resume="auto"``: a run saved there continues (or, finished, is read back without training), so a kernel restart
or a second Run All loses nothing and repeats nothing. ``on_step(name, run)`` is called after every RL step with
the run so far (a live plot).
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


def live_runs(cfgs: dict[str, TrainConfig], root: str | Path, *, on_step=None, progress: bool = True) -> dict:
    """Train (or resume, or read back) each named config in turn; ``{name: LiveRun}`` (module docstring)."""
    from gspo_lab.train import train

    out = {}
    for name, cfg in cfgs.items():

        def step(state, _rows, name=name, cfg=cfg):
            if on_step is not None:
                on_step(name, _as_run(cfg, state.history, state.eval_history))

        table = train(cfg, run_folder(root, name, cfg), resume="auto", progress=progress, on_step=step)
        out[name] = _as_run(cfg, table.to_dict(orient="records"), table.attrs["eval"].to_dict(orient="records"))
    return out
