"""Checkpoints: the shipped cold-start policies (read-only) and a run's resumable state (atomic writes).

Shipped, in ``data/checkpoints/<name>/``: ``model.safetensors`` + ``config.json`` (``save_pretrained``), the
tokenizer files, and ``sft.json`` (how it was made). They load offline, without pickle.

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

__all__ = ["checkpoint_path", "load_checkpoint", "write_config", "save_state", "load_state"]


def checkpoint_path(name_or_path: str | Path) -> Path:
    """A shipped checkpoint by name (a folder of ``data/checkpoints``), or any checkpoint folder by path."""
    from gspo_lab.paths import data_dir

    path = Path(name_or_path)
    if (path / "config.json").is_file():
        return path
    shipped = data_dir() / "checkpoints"
    if (shipped / str(name_or_path) / "config.json").is_file():
        return shipped / str(name_or_path)
    names = sorted(p.name for p in shipped.iterdir() if (p / "config.json").is_file()) if shipped.is_dir() else []
    raise FileNotFoundError(f"checkpoint must be one of {names} or a checkpoint folder, got {str(name_or_path)!r}")


def load_checkpoint(name_or_path: str | Path):
    """(model, tokenizer, record) of a checkpoint folder, offline (safetensors, no pickle)."""
    from transformers import AutoModelForCausalLM

    from gspo_lab.tokenizer import load_tokenizer

    folder = checkpoint_path(name_or_path)
    model = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True, use_safetensors=True)
    record = json.loads((folder / "sft.json").read_text()) if (folder / "sft.json").exists() else {}
    return model, load_tokenizer(folder), record


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
    """The :class:`~gspo_lab.train.TrainState` saved last in ``run_dir`` (None if there is none)."""
    from gspo_lab.train import init_state

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
