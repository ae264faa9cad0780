"""Clipping fractions (GSPO paper §5.2): short live runs per objective, and what-if clip fractions on their ratios.

:func:`clip_runs` trains each objective from the same checkpoint with its own clip range and keeps every update's
log-ratios. :func:`clip_whatif` then recomputes an objective's clip fractions on those *stored* ratios for any
(ε_low, ε_high) — a what-if on the statistic, not a re-run of training (the ratios themselves would change if the
run were repeated with another ε). The counting is :func:`gspo_lab.metrics.objective_stats`, the same code the
objectives use.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, replace

import pandas as pd
import torch
from tqdm.auto import tqdm

from gspo_lab.config import TrainConfig
from gspo_lab.metrics import objective_stats
from gspo_lab.objectives import OBJECTIVES
from gspo_lab.objectives.core import GRPO_BAND
from gspo_lab.reductions import masked_mean
from gspo_lab.step import init_state, train_step

__all__ = ["ClipRun", "clip_runs", "clip_summary", "clip_whatif", "clip_curve"]


@dataclass
class ClipRun:
    """One objective's live run: its metrics table (a row per update) and per-update log-ratios."""

    objective: str
    cfg: TrainConfig
    history: pd.DataFrame
    ratios: list[dict]


def clip_runs(cfg: TrainConfig, objectives=("grpo", "gspo"), *, progress: bool = True, **init_kw) -> dict[str, ClipRun]:
    """Train each objective for ``cfg.rollouts`` RL steps from ``cfg.checkpoint`` (same seed, own clip range).

    ``cfg.eps_low`` / ``cfg.eps_high`` apply to every objective when given; leave them None for the paper's.
    A ``model`` passed in ``init_kw`` is deep-copied for each objective, so every objective starts from the same
    weights and the caller's model is left untouched.
    """
    torch.set_num_threads(cfg.threads)
    out = {}
    for name in objectives:
        run_cfg = replace(cfg, objective=name)
        run_kw = {**init_kw, "model": copy.deepcopy(init_kw["model"])} if init_kw.get("model") is not None else init_kw
        state = init_state(run_cfg, **run_kw)
        state.ratios = []
        for _ in tqdm(range(run_cfg.rollouts), desc=name, disable=not progress):
            train_step(state)
        out[name] = ClipRun(name, run_cfg, pd.DataFrame(state.history), state.ratios)
    return out


def clip_summary(runs: dict[str, ClipRun]) -> pd.DataFrame:
    """Per objective: mean clipped fractions over the off-policy updates (k ≥ 1 within each rollout).

    Columns ``clip/token_frac`` (the paper's Fig. 2 unit), ``clip/seq_frac`` (TRL's), ``clip/token_frac_outside``;
    update k = 0 of each rollout is on-policy and clips nothing, so it is left out of the means.
    """
    keys = ["clip/token_frac", "clip/seq_frac", "clip/token_frac_outside"]
    rows = {name: run.history.query("update_in_rollout > 0")[keys].mean() for name, run in runs.items()}
    return pd.DataFrame.from_dict(rows, orient="index")


def clip_whatif(run: ClipRun, objective: str, eps_low: float, eps_high: float) -> pd.DataFrame:
    """Clip fractions of ``objective``'s rule at (ε_low, ε_high) on the stored ratios of ``run``, per update.

    GRPO-like objectives clip log w_{i,t}; GSPO-like ones clip log s_i (a clipped response counts all its tokens).
    Columns: update, rollout, update_in_rollout, and the ``clip/*`` keys of ObjectiveStats.
    """
    spec = OBJECTIVES[objective]
    rows = []
    per_rollout = run.cfg.minibatches * run.cfg.epochs
    for rec in run.ratios:
        lw, adv, mask = rec["tok_log_ratio"], rec["adv"], rec["mask"]
        if spec.ratio == "token":
            clip_lr = lw
        else:
            clip_lr = masked_mean(lw, mask, dim=-1).unsqueeze(-1).expand_as(lw)
        adv_t = adv.unsqueeze(-1).expand_as(lw) if adv.dim() == 1 else adv
        stats = objective_stats(lw, clip_lr, adv_t, mask, eps_low, eps_high, grpo_band=GRPO_BAND).as_dict()
        row = {"update": rec["update"], "rollout": rec["rollout"], "update_in_rollout": rec["update"] % per_rollout}
        row.update({k: v for k, v in stats.items() if k.startswith("clip/")})
        rows.append(row)
    return pd.DataFrame(rows)


def clip_curve(
    run: ClipRun, objective: str, eps_low: float, eps_high: float, *, span: float = 10.0, points: int = 13
) -> pd.DataFrame:
    """The what-if clipped fractions (mean over the off-policy updates k ≥ 1) of ``objective`` as its band scales
    around (ε_low, ε_high) by a factor from 1/``span`` to ``span`` (``points`` log-spaced scales, 1 among them);
    columns scale, eps_low, eps_high, clip/token_frac, clip/seq_frac."""
    import numpy as np

    rows = []
    for scale in np.logspace(-np.log10(span), np.log10(span), points):
        table = clip_whatif(run, objective, eps_low * scale, eps_high * scale)
        off = table[table["update_in_rollout"] > 0]
        rows.append(
            {
                "scale": float(scale),
                "eps_low": eps_low * scale,
                "eps_high": eps_high * scale,
                "clip/token_frac": off["clip/token_frac"].mean(),
                "clip/seq_frac": off["clip/seq_frac"].mean(),
            }
        )
    return pd.DataFrame(rows)
