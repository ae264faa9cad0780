"""Stale rollouts (issue 38): what the loop's ``rollout_lag`` queue holds, and how stale a batch is.

Asynchronous RL systems sample with weights some updates old. ``TrainConfig.rollout_lag = D`` reproduces that in the
synchronous loop (:func:`gspo_lab.step.next_batch`): the sampler runs D rollout batches ahead of the trainer, so the
batch the trainer takes at RL step t was sampled by the weights at the start of step max(0, t − D). The unit is the
rollout batch (one policy version per RL step, as AReaL's and PRIME-RL's counts are); minibatch j of epoch e of that
batch is then D · M · E + e · M + j optimizer steps behind the weights that sampled it (M minibatches, E epochs): the
lag adds to the within-batch staleness that M > 1 already has.

π_old under lag is a per-run choice, read from ``old_logp``:

* ``old_logp="sampler"`` — the *behaviour* policy: the sampler's own log-probs, recorded when the batch was sampled
  (the weights D versions back). Every ratio is then to the stale policy, and a clip band sees the whole lag.
* ``old_logp="recompute"`` — a *proximal* policy (decoupled PPO, Hilton et al. 2022): π_old recomputed at the
  current weights before the batch's first update, so the clip band sees only the within-batch steps. The weight to
  the behaviour policy, ρ = π_prox / π_behav, is then ``sampler_correction``'s (token / sequence, truncate / mask,
  gspo_lab/corrections.py) and OPSM's (``opsm_threshold``), which already read the sampler's recorded log-probs.

Memory: the queue holds at most D sampled batches between steps (D + 1 while a step samples), each B = prompts · G
rows of prompt and response ids, masks and the sampler's log-probs: (D + 1) · B · (P + 3T) numbers, a few hundred KB
for the MoE preset at D = 16 — never a copy of the weights. The queue is saved with the run's state
(``pending.pt``, :func:`to_saved` / :func:`from_saved`), so a killed stale run resumes bit for bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import torch
from torch import Tensor

from gspo_lab.reductions import masked_mean
from gspo_lab.rollout import Rollout

__all__ = ["Sampled", "stale_stats", "sequence_ess_frac", "to_saved", "from_saved"]


@dataclass
class Sampled:
    """A scored rollout batch as the sampler left it, waiting for the trainer."""

    picks: list[int]  # indices of its prompts in the train split (rebuilt from them on resume)
    data: Rollout
    rewards: Tensor  # (B,)
    adv: Tensor  # (B,) or (B, T)
    max_new_tokens: int
    version: int  # the rollout index whose starting weights sampled it
    stats: dict  # the batch's sampler-side metrics (advantages, accuracy, length)
    seconds: float  # the time its sampling and scoring took


def sequence_ess_frac(log_w: Tensor) -> float:
    """Normalised effective sample size (Σ w)² / (n Σ w²) ∈ (0, 1] of sequence weights w = exp(log_w), shape (n,),
    in log space (a stale batch's weights span many orders of magnitude)."""
    if log_w.ndim != 1 or log_w.numel() == 0:
        raise ValueError(f"log_w must be a non-empty 1-D tensor of sequence log-weights; shape {tuple(log_w.shape)}")
    log_w = log_w.double()
    return math.exp(2 * torch.logsumexp(log_w, 0).item() - torch.logsumexp(2 * log_w, 0).item() - math.log(len(log_w)))


def stale_stats(lag: int, minibatches: list[Tensor], current: list[Tensor], data: Rollout) -> dict:
    """A stale batch's row entries: ``stale/lag`` (rollout batches since its sampler's weights) and, when π_old's
    forward ran (``current``: M × (b, T) log-probs at the current weights, else empty), ``stale/kl_k3`` — k3 of
    KL(π_behav ‖ π_current) over valid tokens — and ``stale/ess_frac``, :func:`sequence_ess_frac` of the responses'
    weights π_current(y)/π_behav(y) (VCPO's early warning)."""
    out = {"stale/lag": float(lag)}
    if not current:
        return out
    rows = torch.cat(minibatches)
    log_r = torch.cat(current) - data.sampler_logp.index_select(0, rows)  # log π_current − log π_behav, (B, T)
    mask = data.response_mask.index_select(0, rows)
    log_r = log_r.where(mask, 0.0)
    out["stale/kl_k3"] = masked_mean(log_r.exp() - 1 - log_r, mask, dim=None).item()
    out["stale/ess_frac"] = sequence_ess_frac(log_r.sum(-1))
    return out


def to_saved(sampled: Sampled) -> dict:
    """A :class:`Sampled` as tensors, lists and numbers only (what ``torch.load(weights_only=True)`` reads back)."""
    data = {f.name: getattr(sampled.data, f.name) for f in fields(Rollout) if f.name not in ("problems", "old_logp")}
    plain = {f.name: getattr(sampled, f.name) for f in fields(Sampled) if f.name != "data"}
    return {**plain, "data": data}


def from_saved(saved: dict, pool: list) -> Sampled:
    """Inverse of :func:`to_saved`; ``pool`` is the train split its ``picks`` index (each prompt's G rows)."""
    G = saved["data"]["group_size"]
    problems = [pool[i] for i in saved["picks"] for _ in range(G)]
    data = Rollout(problems=problems, **saved["data"])
    return Sampled(**{**saved, "data": data})
