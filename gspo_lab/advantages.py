"""Group-relative advantages (GSPO paper §4.1, Eq. 6; the same estimator as GRPO's).

    Â_i = (r_i − mean_j r_j) / std_j r_j,   j over the G responses to the same query.

Rewards come flat, (B,) with B = n_groups · G, grouped contiguously: responses g·G … g·G + G − 1 answer query g
(TRL's and verl's layout).

Deviations, declared:
    1. std is the *sample* std (ddof = 1), as in TRL and verl; the paper does not say which.
    2. No additive guard on the std. TRL divides by std + 1e-4 and verl by std + 1e-6; both let float residue
       through. Measured with G = 8: rewards 0.1 + 0.2 vs 0.3 (float64) give |Â| = 5.6e-11 with verl's guard;
       float32 rewards one ulp apart give |Â| = 0.026 at r = 0.3, 0.10 at r = 1 and 0.19 at r = 3 (TRL: 100x less)
       — rounding noise promoted to a learning signal (NeMo-RL saw advantages blow up ×4000 this way). Instead a
       group whose std is at most
       ``ZERO_STD_RTOL · max(1, max_j |r_j|)`` gets Â = 0 *exactly*; every other group gets Eq. 6 exactly.
    3. ``scale="none"`` is Dr. GRPO's variant (arXiv 2503.20783): Â_i = r_i − mean_j r_j, no std division; the same
       tolerance zeroes residue-only groups.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import torch
from torch import Tensor

from gspo_lab.metrics import metric
from gspo_lab.reductions import masked_mean
from gspo_lab.validate import check_finite, check_group_size, check_mask

__all__ = ["ZERO_STD_RTOL", "AdvantageStats", "group_advantages", "token_advantages"]

#: Relative tolerance below which a group's reward std counts as zero. 1e-6 is ~8 float32 ulps at 1.0: above any
#: rounding residue of float32 reward arithmetic, below any real reward difference (rewards live in [0, 1] and
#: partial credit moves in steps of 1/L >= 1e-3).
ZERO_STD_RTOL = 1e-6

_SCALES = ("std", "none")


@dataclass(frozen=True)
class AdvantageStats:
    """Detached statistics of one advantage computation. ``as_dict()`` gives the namespaced keys."""

    reward_mean: float = metric("reward/mean")
    reward_std: float = metric("reward/std")
    zero_std_frac: float = metric("adv/zero_std_frac")
    adv_absmax: float = metric("adv/absmax")

    def as_dict(self) -> dict[str, float]:
        return {f.metadata["key"]: getattr(self, f.name) for f in fields(self)}


def group_advantages(
    rewards: Tensor, group_size: int, *, scale: str = "std", std_rtol: float = ZERO_STD_RTOL
) -> tuple[Tensor, AdvantageStats]:
    """Â_i of Eq. 6 for every response, and batch statistics.

    Args:
        rewards: (B,) real-valued rewards, B = n_groups · G, each group contiguous. Integer/bool tensors are
            accepted and converted. NaN/inf raise ValueError.
        group_size: G >= 2.
        scale: "std" (Eq. 6) or "none" (Dr. GRPO: no std division).
        std_rtol: a group with std <= std_rtol · max(1, max |r|) gets Â = 0 exactly (see deviation 2).

    Returns:
        adv: (B,) in the rewards' float dtype (float32 for integer rewards), computed in float64.
        stats: :class:`AdvantageStats`.
    """
    if not isinstance(rewards, Tensor):
        raise TypeError(f"rewards must be a torch.Tensor of shape (B,), got {type(rewards).__name__}")
    if rewards.dim() != 1:
        raise ValueError(f"rewards must be 1-D (B,) = (n_groups * G,), got shape {tuple(rewards.shape)}")
    if rewards.is_complex():
        raise TypeError(f"rewards must be real, got {rewards.dtype}")
    if scale not in _SCALES:
        raise ValueError(f"scale must be one of {_SCALES}, got {scale!r}")
    if not (isinstance(std_rtol, (int, float)) and 0.0 <= std_rtol < 1.0):
        raise ValueError(f"std_rtol must be a float in [0, 1), got {std_rtol!r}")
    G = check_group_size(group_size, rewards.numel())
    if rewards.numel() == 0:
        raise ValueError("rewards must hold at least one group, got an empty tensor")
    out_dtype = rewards.dtype if rewards.is_floating_point() else torch.float32
    r = rewards.detach().to(torch.float64)
    check_finite("rewards", r)
    groups = r.view(-1, G)
    mean = groups.mean(-1, keepdim=True)
    std = groups.std(-1, correction=1, keepdim=True)
    degenerate = std <= std_rtol * groups.abs().amax(-1, keepdim=True).clamp(min=1.0)
    centred = groups - mean
    adv = centred / std if scale == "std" else centred
    adv = adv.where(~degenerate, torch.zeros((), dtype=torch.float64)).reshape(-1)
    stats = AdvantageStats(
        reward_mean=r.mean().item(),
        reward_std=r.std(correction=0).item(),
        zero_std_frac=degenerate.to(torch.float64).mean().item(),
        adv_absmax=adv.abs().max().item(),
    )
    return adv.to(out_dtype), stats


def token_advantages(adv: Tensor, credit: Tensor, mask: Tensor, weight: float) -> Tensor:
    """Per-token advantages Â_{i,t} = Â_i + weight · (c_{i,t} − mean_t c_{i,t}) on valid tokens, 0 at padding.

    Not from the paper: §4.3 introduces GSPO-token (Eqs. 13-14) for advantages that vary within a response and
    leaves their construction open. This one redistributes credit *within* a response (the correction has zero
    mean over its valid tokens), so each response's mean advantage stays Â_i (Eq. 6).

    Args:
        adv: (B,) sequence advantages. credit: (B, T) per-token credit (e.g. :meth:`gspo_lab.tasks.Task.
        credit_matrix`). mask: (B, T) bool. weight: finite, >= 0 (0 gives Â_i on every valid token).
    Returns: (B, T) float64.
    """
    if not (isinstance(weight, (int, float)) and math.isfinite(weight) and weight >= 0):
        raise ValueError(f"weight must be a finite number >= 0, got {weight!r}")
    if not isinstance(adv, Tensor) or adv.dim() != 1:
        raise ValueError(f"adv must be a (B,) tensor, got {tuple(adv.shape) if isinstance(adv, Tensor) else adv!r}")
    if not isinstance(credit, Tensor) or credit.dim() != 2 or credit.shape[0] != adv.shape[0]:
        got = tuple(credit.shape) if isinstance(credit, Tensor) else type(credit).__name__
        raise ValueError(f"credit must be a (B, T) tensor with B = {adv.shape[0]}, got {got}")
    valid = check_mask(mask, credit.shape)
    credit = credit.to(torch.float64).where(valid, 0.0)
    if not torch.isfinite(credit).all():
        raise ValueError("credit must be finite at valid tokens")
    centred = credit - masked_mean(credit, valid, dim=-1)[:, None]
    return (adv.to(torch.float64)[:, None] + weight * centred).where(valid, 0.0)
