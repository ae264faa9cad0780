"""The metric catalogue: every statistic an objective returns, defined once.

Objectives never log. They return an :class:`ObjectiveStats` (frozen, plain floats); the training loop collects
those into a history. Each field's metadata holds its namespaced key and its definition; :func:`catalogue` prints
them as the table below, which is the one place a metric is defined.

Clip fractions come in two *units* and two *meanings*, and the names say which:

* unit ``token``: a fraction of valid tokens. For GSPO a clipped response counts all its tokens (the paper's
  Fig. 2 and verl's ``pg_clipfrac``); for GRPO each token counts on its own.
* unit ``seq``: a fraction of all B responses. GSPO: the response is clipped (TRL's sequence-level
  ``clip_ratio/*``); GRPO: at least one of its tokens is clipped.
* meaning *active* (no suffix, ``_low``, ``_high``): the clip binds for the sign of Â, i.e. it zeroes that unit's
  gradient — ratio > 1 + ε_high with Â > 0 (``high``), ratio < 1 − ε_low with Â < 0 (``low``). This is TRL's
  ``clip_ratio/region_mean`` definition. A ratio exactly on the band's edge is not clipped.
* meaning *outside* (``_outside``): the ratio lies outside [1 − ε_low, 1 + ε_high], whatever the sign of Â.

KL estimates use samples from π_old (the rollout policy) with w = π_θ / π_old per token: k1 = −log w and
k3 = (w − 1) − log w (Schulman, "Approximating KL divergence", 2020), averaged over valid tokens; both estimate
KL(π_old ‖ π_θ). k3 is >= 0 for every sample; k1 is unbiased but can be negative.

Shapes: B sequences, T tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import torch
from torch import Tensor

from gspo_lab.reductions import masked_mean

__all__ = ["ObjectiveStats", "objective_stats", "catalogue"]


def _metric(key: str, doc: str):
    return field(metadata={"key": key, "doc": doc})


@dataclass(frozen=True)
class ObjectiveStats:
    """Detached statistics of one objective evaluation. ``as_dict()`` gives the namespaced keys."""

    clip_token_frac: float = _metric("clip/token_frac", "valid tokens whose clip is active for the sign of Â")
    clip_token_frac_low: float = _metric("clip/token_frac_low", "valid tokens with ratio < 1−ε_low and Â < 0")
    clip_token_frac_high: float = _metric("clip/token_frac_high", "valid tokens with ratio > 1+ε_high and Â > 0")
    clip_token_frac_outside: float = _metric(
        "clip/token_frac_outside", "valid tokens whose ratio lies outside [1−ε_low, 1+ε_high], any Â"
    )
    clip_seq_frac: float = _metric("clip/seq_frac", "responses (of all B) with at least one clip-active token")
    clip_seq_frac_low: float = _metric("clip/seq_frac_low", "responses with a low-clip-active token (Â < 0)")
    clip_seq_frac_high: float = _metric("clip/seq_frac_high", "responses with a high-clip-active token (Â > 0)")
    clip_seq_frac_outside: float = _metric(
        "clip/seq_frac_outside", "responses with at least one token whose ratio lies outside the band, any Â"
    )
    tok_log_ratio_mean: float = _metric("ratio/tok_log_mean", "mean of log w_{i,t} over valid tokens")
    tok_log_ratio_std: float = _metric("ratio/tok_log_std", "population std of log w_{i,t} over valid tokens")
    tok_log_ratio_absmax: float = _metric("ratio/tok_log_absmax", "max |log w_{i,t}| over valid tokens")
    seq_log_ratio_mean: float = _metric("ratio/seq_log_mean", "mean of log s_i over non-empty responses")
    seq_log_ratio_std: float = _metric("ratio/seq_log_std", "population std of log s_i over non-empty responses")
    seq_log_ratio_absmax: float = _metric("ratio/seq_log_absmax", "max |log s_i| over non-empty responses")
    kl_k1: float = _metric("kl/k1", "mean over valid tokens of −log w_{i,t}: KL(π_old‖π_θ), unbiased")
    kl_k3: float = _metric("kl/k3", "mean over valid tokens of w_{i,t} − 1 − log w_{i,t}: KL(π_old‖π_θ), >= 0")
    n_seqs: int = _metric("count/seqs", "responses in the batch (B), empty ones included")
    n_tokens: int = _metric("count/tokens", "valid tokens in the batch (Σ_i |y_i|)")
    n_empty_seqs: int = _metric("count/empty_seqs", "responses with no valid token (contribute 0 to the loss)")

    def as_dict(self) -> dict[str, float]:
        """{namespaced key: value}, e.g. ``{"clip/token_frac": 0.15, ...}``."""
        return {f.metadata["key"]: getattr(self, f.name) for f in fields(self)}


def catalogue() -> dict[str, str]:
    """{namespaced key: definition} for every field of :class:`ObjectiveStats`."""
    return {f.metadata["key"]: f.metadata["doc"] for f in fields(ObjectiveStats)}


def _std_absmax(x: Tensor, mask: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Masked mean, population std and max |x| over all masked-in entries (0 when there are none)."""
    mean = masked_mean(x, mask, dim=None)
    var = masked_mean((x - mean) ** 2, mask, dim=None)
    absmax = x.abs().where(mask, x.new_zeros(())).max() if x.numel() else x.new_zeros(())
    return mean, var.sqrt(), absmax


@torch.no_grad()
def objective_stats(
    tok_log_ratio: Tensor,
    clip_log_ratio: Tensor,
    adv: Tensor,
    mask: Tensor,
    eps_low: float,
    eps_high: float,
) -> ObjectiveStats:
    """Clip, ratio and KL statistics of one objective evaluation.

    Args:
        tok_log_ratio: (B, T) log w_{i,t}, 0 at padding.
        clip_log_ratio: (B, T) log of the ratio the objective clips, at each token (log w_{i,t} for GRPO; log s_i
            broadcast over the response for GSPO; log s_{i,t} for GSPO-token).
        adv: (B, T) advantage at each token (a per-sequence Â_i broadcast).
        mask: (B, T) bool, True at valid tokens.
        eps_low, eps_high: the clip band [1 − eps_low, 1 + eps_high].
    """
    weight = clip_log_ratio.exp()
    low = mask & (adv < 0) & (weight < 1 - eps_low)
    high = mask & (adv > 0) & (weight > 1 + eps_high)
    outside = mask & ((weight < 1 - eps_low) | (weight > 1 + eps_high))
    fdt = tok_log_ratio.dtype
    lengths = mask.sum(-1)
    nonempty = lengths > 0
    log_s = masked_mean(tok_log_ratio, mask, dim=-1)
    tok = _std_absmax(tok_log_ratio, mask)
    seq = _std_absmax(log_s.unsqueeze(0), nonempty.unsqueeze(0))
    k3 = torch.expm1(tok_log_ratio) - tok_log_ratio  # w − 1 − log w, exact near w = 1
    values = torch.stack(
        [
            *(masked_mean(c.to(fdt), mask, dim=None) for c in (low | high, low, high, outside)),
            *(c.any(-1).to(fdt).mean() for c in (low | high, low, high, outside)),
            *tok,
            *seq,
            -masked_mean(tok_log_ratio, mask, dim=None),
            masked_mean(k3, mask, dim=None),
        ]
    ).tolist()
    counts = [mask.shape[0], int(lengths.sum()), int((~nonempty).sum())]
    return ObjectiveStats(*values, *counts)
