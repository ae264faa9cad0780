"""Checkpoints: the shipped cold-start policies, read-only I/O (a run's own state is :mod:`gspo_lab.train`'s).

Shipped, in ``data/checkpoints/<name>/``: ``model.safetensors`` + ``config.json`` (``save_pretrained``), the
tokenizer files, and ``sft.json`` (how it was made). They load offline, without pickle.
"""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["checkpoint_path", "checkpoint_task", "load_checkpoint"]


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


def checkpoint_task(name_or_path: str | Path) -> str:
    """The task a checkpoint was trained on: its ``sft.json`` (``task`` or ``config.task``), else a ``task`` field
    of its ``config.json``; a folder stating neither is refused (a policy trained on one task says nothing about
    another). Reads JSON only: no weights are loaded."""
    folder = checkpoint_path(name_or_path)
    record = json.loads((folder / "sft.json").read_text()) if (folder / "sft.json").is_file() else {}
    config = json.loads((folder / "config.json").read_text())
    task = record.get("task") or record.get("config", {}).get("task") or config.get("task")
    if not task:
        raise ValueError(
            f"checkpoint {str(name_or_path)!r} does not state its task: {folder} needs an sft.json with a 'task' "
            "(gspo-lab sft and gspo-lab export write one) or a 'task' field in its config.json"
        )
    return str(task)


def load_checkpoint(name_or_path: str | Path):
    """(model, tokenizer, record) of a checkpoint folder, offline (safetensors, no pickle). transformers' "Loading
    weights" progress bar is kept out of the caller's output (a notebook cell, a widget panel); its setting is
    restored afterwards."""
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    from gspo_lab.tokenizer import load_tokenizer

    folder = checkpoint_path(name_or_path)
    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        model = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True, use_safetensors=True)
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()
    record = json.loads((folder / "sft.json").read_text()) if (folder / "sft.json").exists() else {}
    return model, load_tokenizer(folder), record
