"""Sequence ratios: GSPO (GSPO paper Eqs. 5-7), GSPO-token (Eqs. 13-14), the length-weighted variants (the token-mean
pitfall and LUSPO), and GMPO's geometric mean of clipped token ratios.

Each response gets one length-normalised weight, a geometric mean of its token ratios; the clip removes whole
responses (GSPO, LUSPO) or clips each token's log-ratio inside the mean (GMPO). Every function has the one signature
of :mod:`gspo_lab.objectives`. With ``sampler_ratio`` / ``seq_keep`` the per-response term is broadcast over its
tokens and each token's share multiplied before the aggregation, as TRL multiplies its (B, 1) sequence-level loss by
a (B, T) correction (grpo_trainer.py:3140-3147); without them the path is the objective's own.
"""

from __future__ import annotations

import math

import torch

from gspo_lab.metrics import objective_stats
from gspo_lab.objectives.core import (
    GMPO_CLIP,
    GRPO_BAND,
    GSPO_CLIP,
    LUSPO_CLIP,
    clipped_surrogate,
    loss_factor,
    per_token,
    prepare,
)
from gspo_lab.ratios import gspo_token_log_ratio, seq_log_ratio, tok_log_ratio
from gspo_lab.reductions import masked_mean, seq_mean, seq_mean_token_mean, seq_mean_token_sum, token_mean

__all__ = ["gspo", "gspo_token", "gspo_token_mean", "luspo", "gmpo"]


def _sequence_objective(logp, old_logp, adv, mask, eps_low, eps_high, reduce, sampler_ratio, seq_keep):
    """GSPO's clipped per-response term min(s_i Â_i, clip(s_i) Â_i), broadcast and reduced by ``reduce``
    (None: GSPO's own ``seq_mean`` of the (B,) term), and GSPO's stats."""
    logp, old_logp, adv, mask, eps_low, eps_high = prepare(
        logp, old_logp, adv, mask, eps_low, eps_high, per_token_adv=False
    )
    log_s = seq_log_ratio(logp, old_logp, mask)
    log_s_tokens, adv_tokens = per_token(log_s, logp.shape), per_token(adv, logp.shape)
    factor = loss_factor(sampler_ratio, seq_keep, mask, logp.dtype)
    if reduce is None and factor is None:
        loss = -seq_mean(clipped_surrogate(log_s, adv, eps_low, eps_high), mask)
    else:  # the (B,) term at each token, as TRL broadcasts its (B, 1) sequence-level loss
        per_tok = clipped_surrogate(log_s_tokens, adv_tokens, eps_low, eps_high)
        loss = -(reduce or seq_mean_token_mean)(per_tok if factor is None else per_tok * factor, mask)
    tok = tok_log_ratio(logp, old_logp, mask)
    return loss, objective_stats(
        tok, log_s_tokens, adv_tokens, mask, eps_low, eps_high, factor=factor, grpo_band=GRPO_BAND
    )


def gspo(logp, old_logp, adv, mask, *, eps_low=GSPO_CLIP.low, eps_high=GSPO_CLIP.high, sampler_ratio=None,
         seq_keep=None):  # fmt: skip
    """GSPO (GSPO paper §4.1, Eqs. 5 and 7): one length-normalised ratio and one clip per response.

    J = 1/B Σ_i min(s_i Â_i, clip(s_i, 1−ε_low, 1+ε_high) Â_i),  log s_i = 1/|y_i| Σ_t log w_{i,t}.
    Normalisation: mean over responses of a per-response term (each response weighs 1/B whatever its length; the
    1/|y_i| sits inside s_i). An empty response contributes 0. adv: (B,) only — for per-token advantages use
    :func:`gspo_token`. Returns (−J, stats); a clipped response counts all its tokens in ``clip/token_frac``.
    """
    return _sequence_objective(logp, old_logp, adv, mask, eps_low, eps_high, None, sampler_ratio, seq_keep)


def gspo_token(logp, old_logp, adv, mask, *, eps_low=GSPO_CLIP.low, eps_high=GSPO_CLIP.high, sampler_ratio=None,
               seq_keep=None):  # fmt: skip
    """GSPO-token (GSPO paper §4.3, Eqs. 13-14): GSPO's ratio value with a per-token gradient path.

    J = 1/B Σ_i 1/|y_i| Σ_t min(s_{i,t} Â_{i,t}, clip(s_{i,t}, 1−ε_low, 1+ε_high) Â_{i,t}),
    s_{i,t} = sg[s_i] · π_θ(y_{i,t}|…) / sg[π_θ(y_{i,t}|…)].
    Normalisation: per-response token mean, then mean over responses (``seq_mean_token_mean``). With adv (B,)
    it equals :func:`gspo` in value, clipping and gradient; with per-token adv (B, T) it differs (the clip
    decision is still made on s_i, with the sign of each Â_{i,t}). Returns (−J, stats).
    """
    logp, old_logp, adv, mask, eps_low, eps_high = prepare(
        logp, old_logp, adv, mask, eps_low, eps_high, per_token_adv=True
    )
    adv = per_token(adv, logp.shape)
    log_s_t = gspo_token_log_ratio(logp, old_logp, mask)
    surrogate = clipped_surrogate(log_s_t, adv, eps_low, eps_high)
    factor = loss_factor(sampler_ratio, seq_keep, mask, logp.dtype)
    loss = -seq_mean_token_mean(surrogate if factor is None else surrogate * factor, mask)
    tok = tok_log_ratio(logp, old_logp, mask)
    return loss, objective_stats(tok, log_s_t, adv, mask, eps_low, eps_high, factor=factor, grpo_band=GRPO_BAND)


def gspo_token_mean(logp, old_logp, adv, mask, *, eps_low=GSPO_CLIP.low, eps_high=GSPO_CLIP.high, sampler_ratio=None,
                    seq_keep=None):  # fmt: skip
    """GSPO's sequence ratio with DAPO's token-mean aggregation: the length-weighting *pitfall*, kept to show it.

    J = Σ_i |y_i| min(s_i Â_i, clip(s_i) Â_i) / Σ_i |y_i|: each response is weighted by its length, which is not
    Eq. 5 (TRL ``importance_sampling_level="sequence"`` with ``loss_type="bnpo"``/``"dapo"`` does this and warns).
    Normalisation: ``token_mean``. adv: (B,) only. Returns (−J, stats).
    """
    return _sequence_objective(logp, old_logp, adv, mask, eps_low, eps_high, token_mean, sampler_ratio, seq_keep)


def luspo(logp, old_logp, adv, mask, *, eps_low=LUSPO_CLIP.low, eps_high=LUSPO_CLIP.high, sampler_ratio=None,
          seq_keep=None):  # fmt: skip
    """LUSPO (arXiv 2602.05261): GSPO's clipped sequence term with each response counted |y_i| times.

    J = 1/B Σ_i |y_i| min(s_i Â_i, clip(s_i, 1−ε_low, 1+ε_high) Â_i), s_i of GSPO's Eq. 7 — "rectifying the length
    bias inherent in GSPO" (its abstract): under GSPO a long response moves each of its tokens 1/|y_i| as much as a
    short one does. Normalisation: ``seq_mean_token_sum`` (a sum over the response's tokens, a mean over B; no
    further normalisation, so the loss scale grows with length): TRL 1.16 ``loss_type="luspo"`` with
    ``importance_sampling_level="sequence"``, ``(per_token_loss * mask).sum(-1).mean()`` (grpo_trainer.py:3175-3182).
    verl has no luspo (the authors ship a patched ``core_algos.py``). ε: the paper's 2e-3 / 2.5e-3 as TRL's docs
    quote them. adv: (B,) only. Returns (−J, stats) with GSPO's clip statistics.
    """
    return _sequence_objective(
        logp, old_logp, adv, mask, eps_low, eps_high, seq_mean_token_sum, sampler_ratio, seq_keep
    )


def gmpo(logp, old_logp, adv, mask, *, eps_low=GMPO_CLIP.low, eps_high=GMPO_CLIP.high, sampler_ratio=None,
         seq_keep=None):  # fmt: skip
    """GMPO (Geometric-Mean Policy Optimization, arXiv 2507.20673): the geometric mean of *clipped* token ratios.

    J = 1/B Σ_i Â_i · exp(1/|y_i| Σ_t ĉ_{i,t}),  ĉ_{i,t} = min(log w, clamp(log w, −ε_low, ε_high)) for Â_i > 0 and
    max(·, ·) otherwise: PPO's pessimistic min taken per token in log space, then GSPO's geometric mean. ε is in *log*
    space: the ratio band is [e^{−ε_low}, e^{ε_high}] (0.4: [0.67, 1.49]). Normalisation: mean over responses of a
    per-response term (``seq_mean``). TRL 1.16 ships it only as ``trl.experimental.gmpo.GMPOTrainer``
    (gmpo_trainer.py:80-122), an *experimental* trainer that overrides ``_compute_loss`` and ignores ``loss_type``,
    ``delta``, OPSM and the vLLM IS ratio; verl's is ``geo_mean``. Differences from TRL's: an empty response
    contributes 0 here (TRL: −Â_i, its weight being exp(0) = 1), and a sampler correction, when given, multiplies
    each token's share of the response's term (TRL's GMPO has none). Clip statistics: tokens whose log-ratio lies
    past the log band for the sign of Â (TRL's ``clip_ratio/*``). adv: (B,) only. Returns (−J, stats).
    """
    logp, old_logp, adv, mask, eps_low, eps_high = prepare(
        logp, old_logp, adv, mask, eps_low, eps_high, per_token_adv=False
    )
    log_w = tok_log_ratio(logp, old_logp, mask)
    adv_tokens = per_token(adv, logp.shape)
    clamped = log_w.clamp(-eps_low, eps_high)
    pessimistic = torch.where(adv_tokens > 0, torch.minimum(log_w, clamped), torch.maximum(log_w, clamped))
    log_coef = masked_mean(pessimistic, mask, dim=-1)  # (B,): log of the geometric mean
    coef = log_coef.exp()
    factor = loss_factor(sampler_ratio, seq_keep, mask, logp.dtype)
    if factor is None:
        loss = -seq_mean(coef * adv, mask)
    else:
        loss = -seq_mean_token_mean(per_token(coef * adv, logp.shape) * factor, mask)
    binds = ((adv_tokens > 0) & (log_w > eps_high)) | ((adv_tokens < 0) & (log_w < -eps_low))
    coef_tokens = per_token(coef.detach(), logp.shape)
    grad_weight = coef_tokens.where(~binds, coef_tokens.new_zeros(())) * (1.0 if factor is None else factor)
    band_low, band_high = -math.expm1(-eps_low), math.expm1(eps_high)  # the log band as a ratio band
    return loss, objective_stats(log_w, log_w, adv_tokens, mask, band_low, band_high, grad_weight, grpo_band=GRPO_BAND)
