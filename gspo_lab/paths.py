"""Where the shipped data and generated runs live, found from the package itself (works from any folder).

``data/`` and ``runs/`` sit beside the ``gspo_lab`` package in the repository. Override with the environment
variables ``GSPO_LAB_DATA`` / ``GSPO_LAB_RUNS`` (e.g. a notebook executed from a temporary copy).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

__all__ = ["repo_root", "data_dir", "runs_dir"]


@functools.cache  # where this file sits: one answer per process
def repo_root() -> Path:
    return Path(__file__).resolve().parents[1]


def data_dir() -> Path:
    """The shipped artefacts: tokenizer, task splits, cold-start checkpoints."""
    path = Path(os.environ.get("GSPO_LAB_DATA", repo_root() / "data"))
    if not (path / "tasks").is_dir():
        raise FileNotFoundError(f"gspo_lab data folder not found at {path} (set GSPO_LAB_DATA to the repo's data/)")
    return path


def runs_dir() -> Path:
    """Generated outputs (git-ignored); created on first use."""
    path = Path(os.environ.get("GSPO_LAB_RUNS", repo_root() / "runs"))
    path.mkdir(parents=True, exist_ok=True)
    return path
