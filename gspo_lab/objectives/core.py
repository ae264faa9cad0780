"""What every objective shares: the clip ranges with their sources, argument checks, the clipped surrogate, and the
per-token loss factor of the sampler–trainer corrections.

Shapes: B sequences, T tokens (see :mod:`gspo_lab.objectives`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from gspo_lab.validate import (
    check_clip_range,
    check_finite,
    check_float_tensor,
    check_mask,
    check_same_shape,
    compute_dtype,
)

__all__ = [
    "ClipRange",
    "GSPO_CLIP",
    "GRPO_CLIP",
    "GRPO_BAND",
    "DAPO_CLIP",
    "PPO_CLIP",
    "LUSPO_CLIP",
    "CISPO_CAP",
    "CISPO_CLIP",
    "GMPO_CLIP",
    "DUAL_CLIP_C",
    "prepare",
    "per_token",
    "clipped_surrogate",
    "loss_factor",
    "no_band",
]


@dataclass(frozen=True)
class ClipRange:
    """The two ε of an objective and where their numbers come from.

    For the clipped objectives the band is [1 − low, 1 + high] on the ratio; an objective that reads its ε another
    way (CISPO: ``high`` is an absolute cap; GMPO: a band in log space) says so in its docstring and in ``source``.
    """

    low: float
    high: float
    source: str


GSPO_CLIP = ClipRange(3e-4, 4e-4, "GSPO paper §5.1: 'the left and right clipping ranges ... 3e-4 and 4e-4'")
GRPO_CLIP = ClipRange(0.2, 0.27, "GSPO paper §5.1, the GRPO baseline's clipping ranges")
#: the fixed band of the ``drift/outside_grpo_band_*`` metrics (gspo_lab.metrics) whatever the objective trained:
#: GRPO's registry ε
GRPO_BAND = (GRPO_CLIP.low, GRPO_CLIP.high)
DAPO_CLIP = ClipRange(0.2, 0.28, "DAPO (arXiv 2503.14476) §3.1, Clip-Higher: ε_low 0.2, ε_high 0.28")
PPO_CLIP = ClipRange(0.2, 0.2, "PPO (arXiv 1707.06347) ε = 0.2; Dr. GRPO (arXiv 2503.20783) keeps PPO's clip")
LUSPO_CLIP = ClipRange(
    2e-3, 2.5e-3, "LUSPO (arXiv 2602.05261) §5.1 as TRL 1.16's docs quote it: epsilon=2e-3, epsilon_high=2.5e-3"
)
CISPO_CAP = ClipRange(
    0.2,
    5.0,
    "ε_high = ε_max = 5.0, an absolute cap on the weight: TRL 1.16 GRPOConfig help for cispo ('ScaleRL ... "
    "recommended value is 5.0', ScaleRL arXiv 2510.13786); TRL's fallback when epsilon_high is unset is epsilon = "
    "0.2, a cap of 0.2. ε_low is not used by TRL's cispo (no lower bound); 0.2 is verl's clip_ratio_low",
)
#: cispo_clip's two-sided band on the weight, [1 − low, 1 + high] (not CISPO_CAP: there high is an absolute cap)
CISPO_CLIP = ClipRange(
    0.2,
    0.2,
    "verl's actor clip_ratio = 0.2, with clip_ratio_low = clip_ratio_high = 0.2 (verl b178a3c, "
    "verl/trainer/config/actor/actor.yaml:36-42 and verl/workers/config/actor.py:138-140; compute_policy_loss_cispo "
    "falls back to clip_ratio when either is None, core_algos.py:1739-1740): the band of MiniMax-M1's clipped IS "
    "weight (arXiv 2506.13585, Eq. 5), whose own ε^IS values are not used here",
)
GMPO_CLIP = ClipRange(
    0.4, 0.4, "GMPO (arXiv 2507.20673): token log-ratios clipped to [−0.4, 0.4] (log space); TRL GMPOConfig.epsilon"
)
#: dual-clip bound c (Ye et al., arXiv 1912.09729, §3.2): verl's default ``clip_ratio_c = 3.0``
DUAL_CLIP_C = 3.0


def prepare(logp, old_logp, adv, mask, eps_low, eps_high, *, per_token_adv: bool, band: bool = True):
    """Check every argument; return float32/64 copies, mask as bool and the clip band.

    ``band=False`` (objectives without a clip range: SAPO, VESPO): ``eps_low`` / ``eps_high`` must be None.
    """
    check_float_tensor("logp", logp, 2)
    check_float_tensor("old_logp", old_logp, 2)
    check_same_shape("old_logp", old_logp, "logp", logp)
    if logp.shape[0] == 0:
        raise ValueError("logp must hold at least one response (B >= 1), got shape (0, T)")
    mask = check_mask(mask, logp.shape)
    check_float_tensor("adv", adv, (1, 2))
    allowed = (logp.shape[:1], logp.shape) if per_token_adv else (logp.shape[:1],)
    if adv.shape not in allowed:
        want = "(B,) or (B, T)" if per_token_adv else "(B,) (one Â_i per response; per-token Â needs gspo_token)"
        raise ValueError(f"adv must have shape {want} with (B, T) = {tuple(logp.shape)}, got {tuple(adv.shape)}")
    if band:
        eps_low, eps_high = check_clip_range(eps_low, eps_high)
    elif eps_low is not None or eps_high is not None:
        raise ValueError(
            f"this objective has no clip range (its trust region is its own parameters): eps_low and eps_high must "
            f"be None, got eps_low={eps_low!r}, eps_high={eps_high!r}"
        )
    check_finite("logp", logp, mask)
    check_finite("old_logp", old_logp, mask)
    check_finite("adv", adv, mask if adv.dim() == 2 else None)
    dtype = compute_dtype(logp, old_logp, adv)
    adv = adv.to(dtype)
    if adv.dim() == 2:
        adv = adv.where(mask, adv.new_zeros(()))  # padding may hold anything
    return logp.to(dtype), old_logp.to(dtype), adv, mask, eps_low, eps_high


def per_token(x: Tensor, shape: torch.Size) -> Tensor:
    """A per-response (B,) quantity as (B, T), shared by all tokens of its response; (B, T) passes through."""
    return x.unsqueeze(-1).expand(shape) if x.dim() == 1 else x


def clipped_surrogate(
    log_ratio: Tensor, adv: Tensor, eps_low: float, eps_high: float, clip_c: float | None = None
) -> Tensor:
    """min(r Â, clip(r, 1 − ε_low, 1 + ε_high) Â) elementwise, r = exp(log_ratio): the one exp(), before clipping.
    With ``clip_c`` (dual-clip), an element with Â < 0 is floored at c·Â; its log-ratio is first capped at
    log c + 1, which changes no value or gradient (every element past it is dual-clipped for Â < 0 and high-clipped
    for Â > 0, both with zero gradient) but keeps exp() finite: TRL's ``delta`` gives a NaN gradient in float32 at
    log w = 100 (0 · exp′ = 0 · inf), this does not."""
    if clip_c is not None:
        log_ratio = log_ratio.clamp(max=math.log(clip_c) + 1.0)
    weight = log_ratio.exp()
    surrogate = torch.minimum(weight * adv, weight.clamp(1 - eps_low, 1 + eps_high) * adv)
    if clip_c is None:
        return surrogate
    return torch.where(adv < 0, torch.maximum(surrogate, clip_c * adv), surrogate)


def no_band() -> tuple[float, float]:
    """(ε_low, ε_high) for :func:`gspo_lab.metrics.objective_stats` of an objective without a clip: a band no ratio
    leaves ([0, ∞]), so every clip fraction is 0 — nothing is clipped; its weights are in ``weight/token_mean``."""
    return 1.0, math.inf


def loss_factor(sampler_ratio: Tensor | None, seq_keep: Tensor | None, mask: Tensor, dtype) -> Tensor | None:
    """The detached (B, T) factor that multiplies each token's loss before the aggregation, or None when neither is
    given (the objective's own path, unchanged).

    TRL 1.16 multiplies ``per_token_loss`` by its off-policy sequence mask, then by the sampler importance ratio,
    before its normaliser (grpo_trainer.py:3140-3147); the normaliser's token counts stay those of ``mask``.

    Args:
        sampler_ratio: ρ = π_old / π_sampler after truncation or masking (:mod:`gspo_lab.corrections`), (B, T) per
            token or (B,) / (B, 1) per sequence; finite and >= 0.
        seq_keep: (B,) 0/1: 0 drops a whole response (OPSM).
        mask: (B, T) bool.
    """
    if sampler_ratio is None and seq_keep is None:
        return None
    B, T = mask.shape
    factor = torch.ones(B, T, dtype=dtype)
    if sampler_ratio is not None:
        check_float_tensor("sampler_ratio", sampler_ratio, (1, 2))
        if tuple(sampler_ratio.shape) not in ((B, T), (B, 1), (B,)):
            raise ValueError(f"sampler_ratio must have shape (B, T), (B, 1) or (B,) with (B, T) = {(B, T)}, got "
                             f"{tuple(sampler_ratio.shape)}")  # fmt: skip
        rho = sampler_ratio.detach().to(dtype).reshape(B, -1)
        check_finite("sampler_ratio", rho.expand(B, T), mask)
        if bool((rho.expand(B, T)[mask] < 0).any()):
            raise ValueError("sampler_ratio must be >= 0 (a probability ratio, 0 where masked)")
        factor = factor * rho
    if seq_keep is not None:
        check_float_tensor("seq_keep", seq_keep.to(dtype) if seq_keep.dtype == torch.bool else seq_keep, 1)
        if tuple(seq_keep.shape) != (B,):
            raise ValueError(f"seq_keep must have shape (B,) = ({B},), got {tuple(seq_keep.shape)}")
        factor = factor * seq_keep.detach().to(dtype).unsqueeze(-1)
    return factor.where(mask, factor.new_zeros(()))
