"""Clipped token ratios: GRPO (GSPO paper Eq. 2) and its aggregations and dual-clip.

One ratio w_{i,t} = π_θ(y_{i,t}|…) / π_old(y_{i,t}|…) per token (Eq. 3), one hard clip per token; the four differ only
in how per-token terms become one number (:mod:`gspo_lab.reductions`) or, for dual-clip, in a floor for Â < 0.
Every function has the one signature of :mod:`gspo_lab.objectives`; ``sampler_ratio`` / ``seq_keep`` multiply each
token's term before the aggregation (:func:`gspo_lab.objectives.core.loss_factor`).
"""

from __future__ import annotations

from gspo_lab.metrics import objective_stats
from gspo_lab.objectives.core import (
    DAPO_CLIP,
    DUAL_CLIP_C,
    GRPO_BAND,
    GRPO_CLIP,
    PPO_CLIP,
    clipped_surrogate,
    loss_factor,
    per_token,
    prepare,
)
from gspo_lab.ratios import tok_log_ratio
from gspo_lab.reductions import seq_mean_token_mean, seq_mean_token_sum_norm, token_mean

__all__ = ["grpo", "grpo_token_mean", "grpo_const_norm", "grpo_dual_clip"]


def _token_objective(logp, old_logp, adv, mask, eps_low, eps_high, reduce, sampler_ratio, seq_keep, clip_c=None):
    """−reduce(min(w Â, clip(w) Â) · factor) with GRPO's stats: the body the four functions share."""
    logp, old_logp, adv, mask, eps_low, eps_high = prepare(
        logp, old_logp, adv, mask, eps_low, eps_high, per_token_adv=True
    )
    if clip_c is not None and (
        isinstance(clip_c, bool) or not isinstance(clip_c, (int, float)) or not clip_c > 1 + eps_high
    ):
        raise ValueError(
            f"clip_c must be a number > 1 + eps_high = {1 + eps_high:g} (verl's default 3.0), got {clip_c!r}"
        )  # fmt: skip
    adv = per_token(adv, logp.shape)
    log_w = tok_log_ratio(logp, old_logp, mask)
    surrogate = clipped_surrogate(log_w, adv, eps_low, eps_high, clip_c)
    factor = loss_factor(sampler_ratio, seq_keep, mask, logp.dtype)
    zeroed = None if clip_c is None else (adv < 0) & (log_w.detach().exp() > clip_c)  # dual-clip's floor
    stats = objective_stats(
        log_w, log_w, adv, mask, eps_low, eps_high, factor=factor, zeroed=zeroed, grpo_band=GRPO_BAND
    )
    if factor is not None:
        surrogate = surrogate * factor
    return -reduce(surrogate, mask), stats


def grpo(logp, old_logp, adv, mask, *, eps_low=GRPO_CLIP.low, eps_high=GRPO_CLIP.high, sampler_ratio=None,
         seq_keep=None):  # fmt: skip
    """GRPO (GSPO paper §2, Eq. 2): one ratio and one clip per token.

    J = 1/B Σ_i 1/|y_i| Σ_t min(w_{i,t} Â_{i,t}, clip(w_{i,t}, 1−ε_low, 1+ε_high) Â_{i,t}),  w_{i,t} of Eq. 3.
    Normalisation: per-response token mean, then mean over responses (``seq_mean_token_mean``; TRL
    ``loss_type="grpo"``, verl ``seq-mean-token-mean``). adv: (B,) or per-token (B, T). Returns (−J, stats).
    """
    return _token_objective(logp, old_logp, adv, mask, eps_low, eps_high, seq_mean_token_mean, sampler_ratio, seq_keep)


def grpo_token_mean(logp, old_logp, adv, mask, *, eps_low=DAPO_CLIP.low, eps_high=DAPO_CLIP.high, sampler_ratio=None,
                    seq_keep=None):  # fmt: skip
    """GRPO's token ratios with DAPO's token-mean aggregation (DAPO, arXiv 2503.14476, §3.3).

    J = Σ_i Σ_t min(w Â, clip(w) Â) / Σ_i |y_i|. Normalisation: mean over all valid tokens of the batch
    (``token_mean``; TRL ``loss_type="bnpo"``, verl ``token-mean``): a response weighs in proportion to its length.
    Returns (−J, stats).
    """
    return _token_objective(logp, old_logp, adv, mask, eps_low, eps_high, token_mean, sampler_ratio, seq_keep)


def grpo_const_norm(logp, old_logp, adv, mask, *, eps_low=PPO_CLIP.low, eps_high=PPO_CLIP.high,
                    norm_len: int | None = None, sampler_ratio=None, seq_keep=None):  # fmt: skip
    """GRPO's token ratios with Dr. GRPO's constant normaliser (Dr. GRPO, arXiv 2503.20783, §3.2).

    J = 1/B Σ_i Σ_t min(w Â, clip(w) Â) / L_norm, with L_norm = ``norm_len``: the generation budget (TRL's
    ``dr_grpo`` uses ``max_completion_length``; the loop passes ``max_new_tokens``). Default T, the padded
    length — a constant only when every batch is padded to the budget. Normalisation: ``seq_mean_token_sum_norm``,
    a constant, so a response weighs in proportion to its length and the scale never depends on the batch.
    Returns (−J, stats).
    """

    def reduce(x, m):  # norm_len is checked there, after the tensors (None: the padded length T)
        return seq_mean_token_sum_norm(x, m, x.shape[-1] if norm_len is None else norm_len)

    return _token_objective(logp, old_logp, adv, mask, eps_low, eps_high, reduce, sampler_ratio, seq_keep)


def grpo_dual_clip(logp, old_logp, adv, mask, *, eps_low=GRPO_CLIP.low, eps_high=GRPO_CLIP.high,
                   clip_c: float = DUAL_CLIP_C, sampler_ratio=None, seq_keep=None):  # fmt: skip
    """GRPO (Eq. 2) with dual-clip (Ye et al., arXiv 1912.09729, §3.2): a token with Â < 0 contributes at least c·Â.

    In Eq. 2, min(w Â, clip(w) Â) with Â < 0 picks w Â whenever w > 1 + ε_high: nothing bounds that token's weight,
    so one stale token whose ratio grew to e^5 can dominate an update. Dual-clip takes max(·, c Â) for Â < 0, so a
    token with w > c has value c Â and no gradient. verl: ``clip_ratio_c`` (default 3.0); TRL: ``delta`` (it clamps
    w at δ before the min, the same function for δ = c > 1 + ε_high). Normalisation as :func:`grpo`. The clip
    statistics count the ε band only, as TRL's and verl's do. adv: (B,) or (B, T). Returns (−J, stats).
    """
    return _token_objective(
        logp, old_logp, adv, mask, eps_low, eps_high, seq_mean_token_mean, sampler_ratio, seq_keep, clip_c
    )
