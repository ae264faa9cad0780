"""The training run: many RL steps (:mod:`gspo_lab.step`), saved atomically after each, resumable.

    table = train(cfg, run_dir)                 # a fresh run; refuses a folder that already holds one
    table = train(cfg, run_dir, resume=True)    # continue the run saved in run_dir (an error if there is none)

A run folder (``runs/...``) holds ``config.json``, ``metrics.csv`` and ``state-NNNNN/`` — the model
(safetensors), the optimizer, schedule and generator states (``torch.save``, read back with
``weights_only=True``), the metric rows, the step counters — plus ``LATEST`` naming the newest complete state.
A state is written to a temporary folder and renamed into place, and ``LATEST`` is replaced atomically
afterwards, so a run killed at any moment resumes from its last complete RL step.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from tqdm.auto import tqdm

from gspo_lab.config import TrainConfig
from gspo_lab.step import init_state, train_step

__all__ = ["train", "write_config", "save_state", "load_state"]


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def write_config(cfg, run_dir: str | Path, *, resume: bool) -> None:
    """Write ``config.json``; refuse to overwrite a run, or to resume one with a different config."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / "config.json"
    new = dataclasses.asdict(cfg)
    if path.exists():
        if not resume and (run_dir / "LATEST").exists():
            raise FileExistsError(f"run_dir {run_dir} already holds a run: pass resume=True or use a new folder")
        old = json.loads(path.read_text())
        diff = sorted(k for k in new if k != "rollouts" and old.get(k) != new[k])
        if resume and diff:
            raise ValueError(f"cannot resume {run_dir} with a different config; changed fields: {diff}")
    _atomic_write(path, json.dumps(new, indent=1))


def save_state(state, run_dir: str | Path) -> Path:
    """Save everything :func:`load_state` needs, atomically; keep only the newest state folder."""
    import pandas as pd

    run_dir = Path(run_dir)
    final = run_dir / f"state-{state.rollout_index:05d}"
    tmp = run_dir / (final.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    save_file({k: v.contiguous() for k, v in state.model.state_dict().items()}, tmp / "model.safetensors")
    torch.save(
        {
            "optimizer": state.optimizer.state_dict(),
            "scheduler": state.scheduler.state_dict(),
            "generators": [g.get_state() for g in (state.prompt_gen, state.sample_gen, state.shuffle_gen)],
        },
        tmp / "trainer.pt",
    )
    meta = {"rollout_index": state.rollout_index, "update_index": state.update_index, "history": state.history}
    (tmp / "meta.json").write_text(json.dumps(meta))
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    _atomic_write(run_dir / "LATEST", final.name)
    pd.DataFrame(state.history).to_csv(run_dir / "metrics.csv.tmp", index=False)
    os.replace(run_dir / "metrics.csv.tmp", run_dir / "metrics.csv")
    for old in run_dir.glob("state-*"):
        if old != final:
            shutil.rmtree(old, ignore_errors=True)
    return final


def load_state(cfg, run_dir: str | Path, **init_kw):
    """The :class:`~gspo_lab.step.TrainState` saved last in ``run_dir`` (None if there is none)."""
    run_dir = Path(run_dir)
    if not (run_dir / "LATEST").exists():
        return None
    folder = run_dir / (run_dir / "LATEST").read_text().strip()
    state = init_state(cfg, **init_kw)
    state.model.load_state_dict(load_file(folder / "model.safetensors"))
    saved = torch.load(folder / "trainer.pt", weights_only=True)
    state.optimizer.load_state_dict(saved["optimizer"])
    state.scheduler.load_state_dict(saved["scheduler"])
    for g, s in zip((state.prompt_gen, state.sample_gen, state.shuffle_gen), saved["generators"], strict=True):
        g.set_state(s)
    meta = json.loads((folder / "meta.json").read_text())
    state.rollout_index, state.update_index, state.history = (
        meta["rollout_index"],
        meta["update_index"],
        meta["history"],
    )
    return state


def train(cfg: TrainConfig, run_dir=None, *, resume: bool = False, on_step=None, progress: bool = True, **init_kw):
    """Run ``cfg.rollouts`` RL steps; returns the metrics table (pandas DataFrame, one row per optimizer step).

    With ``run_dir``, the config is written as JSON and the full state is saved atomically after every RL step
    (a killed run loses at most the step in progress); ``resume=True`` continues from the last saved state.
    ``on_step(state, rows)`` is called after each RL step (live plots, early stopping).
    """
    import pandas as pd

    torch.set_num_threads(cfg.threads)
    state = None
    if run_dir is not None:
        write_config(cfg, run_dir, resume=resume)
        if resume:
            state = load_state(cfg, run_dir, **init_kw)
    state = state or init_state(cfg, **init_kw)
    bar = tqdm(total=cfg.rollouts, initial=state.rollout_index, desc=f"{cfg.objective}", disable=not progress)
    while state.rollout_index < cfg.rollouts:
        rows = train_step(state)
        if run_dir is not None:
            save_state(state, run_dir)
        bar.update(1)
        bar.set_postfix(reward=f"{rows[-1]['reward/mean']:.2f}", clip=f"{rows[-1]['clip/token_frac']:.3f}")
        if on_step is not None:
            on_step(state, rows)
    bar.close()
    return pd.DataFrame(state.history)
