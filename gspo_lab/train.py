"""The training run: many RL steps (:mod:`gspo_lab.step`), held-out evaluation, saved atomically, resumable.

    table = train(cfg, run_dir)                   # a fresh run; refuses a folder that already holds one
    table = train(cfg, run_dir, resume=True)      # continue the run saved in run_dir (an error if there is none)
    table = train(cfg, run_dir, resume="auto")    # resume if a state is saved there, else start (sweeps)

A run folder (``runs/...``) holds ``config.json``, ``history.jsonl`` (a row per optimizer step, appended as the run
goes), ``eval.jsonl`` (a row per held-out evaluation, when ``cfg.eval_every > 0``), the same rows as ``metrics.csv``
and ``eval.csv`` once the run ends (or stops on an error), and ``state-NNNNN/`` — the model (safetensors), the
optimizer, schedule and generator states (``torch.save``, read back with ``weights_only=True``), the step counters and
how many rows of each JSON-lines file belong to it — plus ``LATEST`` naming the newest complete state. A state is
written to a temporary folder and renamed into place, and ``LATEST`` is replaced atomically afterwards, so a run
killed at any moment resumes from its last complete RL step. The run owns this state; :mod:`gspo_lab.checkpoints`
only reads the shipped cold starts.

Held-out evaluation (``cfg.eval_every = N > 0``): before the first rollout, after every N rollouts and after the last,
exact-match accuracy on the first ``cfg.eval_prompts`` prompts of the eval split at the training length, sampled at
the training temperature and greedy (:func:`gspo_lab.evaluate.evaluate`). It draws from its own generator, saved
with the run, so turning it on or off never changes the training stream.

Branching (issue 22, item 5): ``train(..., keep=(10, 20))`` keeps the states after those rollouts instead of only the
newest; :func:`branch_from` starts a new run folder from one of them (weights, AdamW, the sampler, data and eval
generators, the rows so far) under a branch config (``cfg.branch_at``, ``cfg.trunk``), which ``train(cfg, folder,
resume=True)`` then continues. An unchanged branch continues its trunk bit for bit.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import time
from pathlib import Path

import pandas as pd
import torch
from safetensors.torch import load_file, save_file
from tqdm.auto import tqdm

from gspo_lab.config import TrainConfig
from gspo_lab.evaluate import evaluate
from gspo_lab.staleness import from_saved, to_saved
from gspo_lab.step import TrainState, init_state, train_step
from gspo_lab.tasks import load_split

__all__ = [
    "train",
    "evaluate_state",
    "write_config",
    "save_state",
    "write_tables",
    "load_state",
    "saved_rows",
    "load_run_config",
    "load_run_policy",
    "branch_from",
]

_GENERATORS = ("prompt_gen", "sample_gen", "shuffle_gen", "eval_gen")


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _has_state(run_dir: Path) -> bool:
    return (run_dir / "LATEST").is_file()


def write_config(cfg: TrainConfig, run_dir: str | Path, *, resume: bool) -> None:
    """Check the folder, then write ``config.json``: refuse to overwrite a run, to resume a folder holding no saved
    state, or to resume one with a different config (only ``rollouts`` may grow). Nothing is written on error."""
    run_dir = Path(run_dir)
    path = run_dir / "config.json"
    new = dataclasses.asdict(cfg)
    if resume and not _has_state(run_dir):
        raise FileNotFoundError(
            f"run_dir {run_dir} holds no saved state (no LATEST file) to continue from: "
            "start a run there without resume"
        )
    if not resume and _has_state(run_dir):
        raise FileExistsError(f"run_dir {run_dir} already holds a run: pass resume=True or use a new folder")
    if resume:
        old = json.loads(path.read_text())
        default = {f.name: f.default for f in dataclasses.fields(TrainConfig)}  # a field added since: its default
        diff = sorted(k for k in new if k != "rollouts" and old.get(k, default[k]) != new[k])
        if diff:
            raise ValueError(f"cannot resume {run_dir} with a different config; changed fields: {diff}")
    run_dir.mkdir(parents=True, exist_ok=True)
    _atomic_write(path, json.dumps(new, indent=1))


def save_state(state, run_dir: str | Path, keep=()) -> Path:
    """Save everything :func:`load_state` needs, atomically; keep only the newest state folder and those after the
    rollouts in ``keep`` (branch points).

    The metric and evaluation rows go to ``history.jsonl`` / ``eval.jsonl`` in the run folder, append-only: each save
    writes only the rows added since the last one (rewriting them all made a save O(rows) and a run O(rows²): ~0.3 s
    per save by the end of an 80-rollout, 16-minibatch cell). The state's ``meta.json`` records how many rows and bytes
    of each file belong to it; a save first cuts the file back to what the newest complete state recorded, so rows
    appended by a save that was killed before its state was renamed into place are dropped."""
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
            "generators": [getattr(state, name).get_state() for name in _GENERATORS],
        },
        tmp / "trainer.pt",
    )
    before = json.loads((_latest(run_dir) / "meta.json").read_text()).get("rows", {}) if _has_state(run_dir) else {}
    rows = {attr: _append_rows(run_dir / name, getattr(state, attr), before.get(attr)) for attr, name in _ROW_FILES}
    meta = {"rollout_index": state.rollout_index, "update_index": state.update_index, "rows": rows}
    (tmp / "meta.json").write_text(json.dumps(meta))
    if state.pending:  # a stale run's queue of sampled batches (gspo_lab/staleness.py)
        torch.save([to_saved(s) for s in state.pending], tmp / "pending.pt")
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    _atomic_write(run_dir / "LATEST", final.name)
    kept = {f"state-{k:05d}" for k in keep}
    for old in run_dir.glob("state-*"):
        if old != final and old.name not in kept:
            shutil.rmtree(old, ignore_errors=True)
    return final


def branch_from(trunk_dir: str | Path, cfg: TrainConfig, run_dir: str | Path) -> Path:
    """Start the branch ``cfg`` in the new folder ``run_dir`` from the trunk run in ``trunk_dir``: its state after
    ``cfg.branch_at`` rollouts (kept with ``train(..., keep=...)``) and the rows that state recorded; returns
    ``run_dir``. The trunk's ``config.json`` must be ``cfg.trunk_config()`` (up to ``rollouts``), else ValueError
    naming the fields; ``train(cfg, run_dir, resume=True)`` continues the branch."""
    trunk_dir, run_dir = Path(trunk_dir), Path(run_dir)
    at = cfg.branch_at
    source = trunk_dir / f"state-{at:05d}"
    if not source.is_dir():
        kept = sorted(p.name for p in trunk_dir.glob("state-*")) or "none"
        raise FileNotFoundError(f"trunk_dir {trunk_dir} kept no state after rollout {at} (kept: {kept}); run the "
                                f"trunk with train(..., keep=({at},))")  # fmt: skip
    trunk, want = load_run_config(trunk_dir), cfg.trunk_config()
    changed = sorted(k for k, v in dataclasses.asdict(want).items() if k != "rollouts" and getattr(trunk, k) != v)
    if changed:
        raise ValueError(f"trunk_dir {trunk_dir} ran another trunk than cfg.trunk_config(); fields: {changed}")
    if _has_state(run_dir):
        raise FileExistsError(f"run_dir {run_dir} already holds a run: a branch starts in a new folder")
    run_dir.mkdir(parents=True, exist_ok=True)
    meta = json.loads((source / "meta.json").read_text())
    for attr, name in _ROW_FILES:  # the rows the state recorded, nothing the trunk appended after it
        with open(trunk_dir / name, "rb") as f:
            (run_dir / name).write_bytes(f.read(meta["rows"][attr]["bytes"]))
    shutil.copytree(source, run_dir / source.name, dirs_exist_ok=True)
    _atomic_write(run_dir / "config.json", json.dumps(dataclasses.asdict(cfg), indent=1))
    _atomic_write(run_dir / "LATEST", source.name)
    return run_dir


_ROW_FILES = (("history", "history.jsonl"), ("eval_history", "eval.jsonl"))


def _append_rows(path: Path, rows: list[dict], before: dict | None) -> dict:
    """Cut ``path`` back to ``before["bytes"]`` (0 when no state has recorded it), append ``rows[before["rows"]:]``
    as JSON lines; returns the new ``{"rows", "bytes"}``."""
    before = before or {"rows": 0, "bytes": 0}
    with open(path, "a+b") as f:
        f.truncate(before["bytes"])
        f.seek(0, os.SEEK_END)
        f.write("".join(json.dumps(row) + "\n" for row in rows[before["rows"] :]).encode())
        size = f.tell()
    return {"rows": len(rows), "bytes": size}


def _read_rows(path: Path, recorded: dict) -> list[dict]:
    """The first ``recorded["rows"]`` rows of a JSON-lines file (its first ``recorded["bytes"]`` bytes)."""
    with open(path, "rb") as f:
        lines = f.read(recorded["bytes"]).decode().splitlines()
    if len(lines) != recorded["rows"]:
        raise ValueError(f"{path} holds {len(lines)} rows where the saved state recorded {recorded['rows']}")
    return [json.loads(line) for line in lines]


def write_tables(state, run_dir: str | Path) -> None:
    """``metrics.csv`` and ``eval.csv``: the rows so far, for reading in pandas or a spreadsheet (end of a run)."""
    for name, rows in (("metrics.csv", state.history), ("eval.csv", state.eval_history)):
        if rows:
            pd.DataFrame(rows).to_csv(Path(run_dir) / f"{name}.tmp", index=False)
            os.replace(Path(run_dir) / f"{name}.tmp", Path(run_dir) / name)


def _latest(run_dir: Path) -> Path:
    if not _has_state(run_dir):
        raise FileNotFoundError(f"run_dir {run_dir} holds no saved state (no LATEST file)")
    return run_dir / (run_dir / "LATEST").read_text().strip()


def load_state(cfg: TrainConfig, run_dir: str | Path, **init_kw) -> TrainState:
    """The :class:`~gspo_lab.step.TrainState` saved last in ``run_dir`` (FileNotFoundError if there is none)."""
    folder = _latest(Path(run_dir))
    state = init_state(cfg, **init_kw)
    state.model.load_state_dict(load_file(folder / "model.safetensors"))
    saved = torch.load(folder / "trainer.pt", weights_only=True)
    state.optimizer.load_state_dict(saved["optimizer"])
    state.scheduler.load_state_dict(saved["scheduler"])
    for name, s in zip(_GENERATORS, saved["generators"], strict=True):
        getattr(state, name).set_state(s)
    meta = json.loads((folder / "meta.json").read_text())
    state.rollout_index, state.update_index = meta["rollout_index"], meta["update_index"]
    state.history, state.eval_history = _state_rows(Path(run_dir), meta)
    if (folder / "pending.pt").is_file():
        pool = load_split(state.task, "train", cfg.length)
        state.pending = [from_saved(s, pool) for s in torch.load(folder / "pending.pt", weights_only=True)]
    return state


def _state_rows(run_dir: Path, meta: dict) -> tuple[list[dict], list[dict]]:
    """(history, eval_history) that belong to the state whose ``meta.json`` is ``meta``."""
    if "rows" in meta:
        return tuple(_read_rows(run_dir / name, meta["rows"][attr]) for attr, name in _ROW_FILES)
    return meta["history"], meta["eval_history"]  # a state saved before the rows moved to JSON lines held them itself


def saved_rows(run_dir: str | Path, *, tries: int = 20) -> tuple[list[dict], list[dict]]:
    """(history, eval_history) of the newest complete state saved in ``run_dir``, without its model or optimizer;
    ``([], [])`` before the first. Safe to call while the run saves in another process (a live plot): a save only
    appends to the JSON-lines files past the bytes an older state recorded, and a state folder removed between
    reading ``LATEST`` and its ``meta.json`` is looked up again from the new ``LATEST``."""
    run_dir = Path(run_dir)

    def once():
        return (
            _state_rows(run_dir, json.loads((_latest(run_dir) / "meta.json").read_text()))
            if _has_state(run_dir)
            else ([], [])
        )

    for _ in range(tries - 1):
        with contextlib.suppress(FileNotFoundError):
            return once()
        time.sleep(0.05)
    return once()


def load_run_config(run_dir: str | Path) -> TrainConfig:
    """The :class:`TrainConfig` a run folder was started with (its ``config.json``)."""
    path = Path(run_dir) / "config.json"
    if not path.is_file():
        raise FileNotFoundError(f"run_dir {run_dir} is not a run folder (no config.json)")
    return TrainConfig(**json.loads(path.read_text()))


def load_run_policy(run_dir: str | Path):
    """(model, tokenizer, cfg, rollout_index) of a run's latest saved policy; no optimizer, no generators."""
    from gspo_lab.checkpoints import load_checkpoint

    run_dir = Path(run_dir)
    cfg = load_run_config(run_dir)
    folder = _latest(run_dir)
    model, tokenizer, _ = load_checkpoint(cfg.checkpoint)
    model.load_state_dict(load_file(folder / "model.safetensors"))
    meta = json.loads((folder / "meta.json").read_text())
    return model, tokenizer, cfg, meta["rollout_index"]


def evaluate_state(state: TrainState) -> dict:
    """One held-out evaluation of the current policy (sampled at the training temperature, then greedy): a row of
    ``eval.csv``, keyed by the rollouts completed so far."""
    cfg = state.cfg
    kw = {"prompts": cfg.eval_prompts, "max_new_tokens": cfg.max_new_tokens or None}
    row = {"rollout": state.rollout_index, "update": state.update_index}
    row.update(
        evaluate(
            state.model,
            state.tokenizer,
            state.task,
            cfg.length,
            temperature=cfg.temperature,
            generator=state.eval_gen,
            samples=cfg.eval_samples,
            **kw,
        )
    )
    row.update(evaluate(state.model, state.tokenizer, state.task, cfg.length, greedy=True, **kw))
    return row


def _eval_due(state: TrainState) -> bool:
    every, done = state.cfg.eval_every, state.rollout_index
    already = bool(state.eval_history) and state.eval_history[-1]["rollout"] == done
    return every > 0 and not already and (done % every == 0 or done >= state.cfg.rollouts)


def _postfix(state: TrainState, rows: list[dict]) -> dict:
    out = {}
    if rows:
        out = {"reward": f"{rows[-1]['reward/mean']:.2f}", "clip": f"{rows[-1]['clip/token_frac']:.3f}"}
    if state.eval_history:
        last = state.eval_history[-1]
        out["eval"] = f"{last['eval/accuracy_sampled']:.2f}/{last['eval/accuracy_greedy']:.2f}@{last['rollout']}"
    return out


def train(
    cfg: TrainConfig,
    run_dir=None,
    *,
    resume: bool | str = False,
    on_step=None,
    progress: bool = True,
    keep=(),
    **init_kw,
) -> pd.DataFrame:
    """Run ``cfg.rollouts`` RL steps; returns the metrics table (pandas DataFrame, one row per optimizer step), with
    the held-out evaluations as a DataFrame in ``table.attrs["eval"]``.

    With ``run_dir``, the config is written as JSON and the full state is saved atomically after every RL step
    (a killed run loses at most the step in progress). ``resume=True`` continues from the last saved state and
    is an error when there is none; ``resume="auto"`` resumes when a state is saved, else starts (what a sweep
    wants). ``on_step(state, rows)`` is called after each RL step (live plots, early stopping). ``keep``: the rollouts
    whose saved states stay (branch points, :func:`branch_from`); otherwise only the newest is kept.
    """
    if resume not in (False, True, "auto"):
        raise ValueError(f"resume must be False, True or 'auto', got {resume!r}")
    torch.set_num_threads(cfg.threads)
    if run_dir is not None and resume == "auto":
        resume = _has_state(Path(run_dir))
    if run_dir is None and resume:
        raise ValueError("resume needs a run_dir")
    if cfg.branch_at and not resume:
        raise ValueError(
            f"cfg is a branch (branch_at={cfg.branch_at}): it starts from its trunk's saved state, not the cold start; "
            "call branch_from(trunk_dir, cfg, run_dir), then train(cfg, run_dir, resume=True)"
        )
    if run_dir is not None:
        write_config(cfg, run_dir, resume=bool(resume))
    state = load_state(cfg, run_dir, **init_kw) if resume else init_state(cfg, **init_kw)
    bar = tqdm(total=cfg.rollouts, initial=state.rollout_index, desc=f"{cfg.objective}", disable=not progress)
    try:
        while True:
            if _eval_due(state):
                state.eval_history.append(evaluate_state(state))
                bar.set_postfix(_postfix(state, []))
                if run_dir is not None and state.rollout_index >= cfg.rollouts:
                    save_state(state, run_dir, keep)  # the final evaluation, saved with the state it measured
            if state.rollout_index >= cfg.rollouts:
                break
            rows = train_step(state)
            if run_dir is not None:
                save_state(state, run_dir, keep)
            bar.update(1)
            bar.set_postfix(_postfix(state, rows))
            if on_step is not None:
                on_step(state, rows)
    finally:  # the tables also when the run stops on an error (a diverged policy)
        if run_dir is not None:
            write_tables(state, run_dir)
    bar.close()
    table = pd.DataFrame(state.history)
    table.attrs["eval"] = pd.DataFrame(state.eval_history)
    return table
