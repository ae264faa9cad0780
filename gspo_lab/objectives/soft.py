"""Soft gates and caps: CISPO's capped weight (and its two variants), SAPO's smooth gate, VESPO's Gamma-shaped
sequence weight.

None of cispo, cispo_clip, sapo and vespo zeroes a token's gradient the way a hard clip does: each multiplies
Â ∇log π_θ(y_{i,t}) by a detached or smooth *weight* of the ratio, so a "clip fraction" means something else for each
(notebook 03). ``cispo_mask`` is the control that does zero it: cispo's weight times MiniMax-M1's token mask, the
tokens PPO's clip would zero (issue 37: two CISPO arms that test different things — cispo_clip bounds the weight on
both sides, cispo_mask takes "never zero a token's gradient" away). Every function has the one signature of
:mod:`gspo_lab.objectives`; SAPO and VESPO have no clip range (``eps_low`` / ``eps_high`` must be None) — their trust
region is their own parameters, with defaults from TRL 1.16's GRPOConfig.

Where TRL 1.16 has no clamp and returns NaN or inf in float32 on an extreme ratio, these return finite values
(tests/test_trl_successors.py says what TRL does instead):
    1. SAPO clamps the token log-ratio to ±20 before exp (verl's ``sapo`` does; TRL does not: at log w = +100
       TRL's float32 gradient is NaN). Past ±20 the gate is flat to float64 precision, so values agree with TRL's.
    2. VESPO keeps TRL's own clamps (±20 per token, [ln 1e-8, 20] for the summed log-ratio).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from gspo_lab.metrics import objective_stats
from gspo_lab.objectives.core import (
    CISPO_CAP,
    CISPO_CLIP,
    GRPO_BAND,
    GRPO_CLIP,
    loss_factor,
    no_band,
    per_token,
    prepare,
)
from gspo_lab.ratios import tok_log_ratio
from gspo_lab.reductions import masked_sum, seq_mean_token_mean, token_mean
from gspo_lab.validate import check_finite, check_float_tensor

__all__ = [
    "cispo",
    "cispo_clip",
    "cispo_mask",
    "sapo",
    "vespo",
    "gamma_weights",
    "SAPO_TAU",
    "VESPO_SHAPE",
    "LOG_RATIO_CLAMP",
]

#: SAPO's temperatures (τ for Â > 0, τ for Â <= 0): TRL 1.16 GRPOConfig ``sapo_temperature_pos/neg`` (1.0, 1.05),
#: grpo_config.py:722-729; verl's ``actor.yaml`` has the same
SAPO_TAU = (1.0, 1.05)
#: VESPO's (k₊, λ₊, k₋, λ₋): TRL 1.16 GRPOConfig ``vespo_k_pos/lambda_pos/k_neg/lambda_neg`` (grpo_config.py:730-758),
#: the VESPO authors' recipe code (its docstring lists other values)
VESPO_SHAPE = (2.0, 3.0, 3.0, 2.0)
#: the per-token log-ratio clamp of VESPO (TRL) and SAPO (verl): ±20
LOG_RATIO_CLAMP = 20.0
_VESPO_LOG_FLOOR = math.log(1e-8)  # TRL's lower clamp of log w and log ρ (grpo_trainer.py:2994)


def _positive(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def cispo(logp, old_logp, adv, mask, *, eps_low=CISPO_CAP.low, eps_high=CISPO_CAP.high, sampler_ratio=None,
          seq_keep=None):  # fmt: skip
    """CISPO (MiniMax-M1, arXiv 2506.13585): REINFORCE on every token with a capped, detached importance weight.

    J = Σ_i Σ_t sg[min(w_{i,t}, ε_max)] Â_{i,t} log π_θ(y_{i,t}|…) / Σ_i |y_i|,  ε_max = ``eps_high``.
    No token loses its gradient: a large ratio only caps its weight. This is TRL 1.16's form (``loss_type="cispo"``,
    grpo_trainer.py:3109-3111): ``eps_high`` is an *absolute* cap on w, not 1 + ε, and there is no lower bound
    (``eps_low`` is checked but unused). MiniMax-M1's paper and verl (``cispo``) write a two-sided clip instead,
    sg[clip(w, 1 − ε_low, 1 + ε_high)] (MiniMax sets ε_low large, which disables the floor); the kit implements
    TRL's. Default ε_max = 5.0 (TRL's help and ScaleRL, arXiv 2510.13786), not TRL's fallback: with
    ``epsilon_high`` unset TRL caps at ``epsilon`` = 0.2, which scales every on-policy token's gradient by 0.2.
    Normalisation: mean over all valid tokens (``token_mean``): TRL divides by ``num_items_in_batch``, the valid
    tokens of the whole generation batch over (GA / steps_per_generation); the kit's loop takes one optimizer step
    per minibatch without accumulation, so it becomes the minibatch's own token count. The loss *value* holds
    log π_θ: a surrogate, not J. Stats: ``clip/token_frac_high`` counts tokens with w > ε_max and Â > 0 (TRL's
    ``cispo_clip_ratio``); ``clip/token_frac_outside`` every capped token, both signs (the cap binds on both).
    adv: (B,) or (B, T). Returns (−J, stats).
    """
    logp, old_logp, adv, mask, eps_low, eps_high = prepare(
        logp, old_logp, adv, mask, eps_low, eps_high, per_token_adv=True
    )
    adv = per_token(adv, logp.shape)
    log_w = tok_log_ratio(logp, old_logp, mask)
    weight = log_w.detach().exp().clamp(max=eps_high)  # sg[min(w, ε_max)]
    loss, grad_weight = _reinforce(weight, adv, logp, mask, loss_factor(sampler_ratio, seq_keep, mask, logp.dtype))
    # the band [0, ε_max] in objective_stats' terms: floor 1 − 1 = 0 (none), ceiling 1 + (ε_max − 1)
    return loss, objective_stats(log_w, log_w, adv, mask, 1.0, eps_high - 1.0, grad_weight, grpo_band=GRPO_BAND)


def cispo_clip(logp, old_logp, adv, mask, *, eps_low=CISPO_CLIP.low, eps_high=CISPO_CLIP.high, sampler_ratio=None,
               seq_keep=None):  # fmt: skip
    """CISPO as MiniMax-M1 and verl write it: REINFORCE on every token with a two-sided clipped, detached weight.

    J = Σ_i Σ_t sg[clip(w_{i,t}, 1 − ε_low, 1 + ε_high)] Â_{i,t} log π_θ(y_{i,t}|…) / Σ_i |y_i|.
    MiniMax-M1 (arXiv 2506.13585) §3.1, Eq. 5's clipped IS weight r̂ in the CISPO objective (section and equation
    numbers as verl's and secondary summaries give them: the paper's text was not read here); verl
    ``compute_policy_loss_cispo`` (b178a3c, verl/trainer/ppo/core_algos.py:1721-1777), with log w clamped to ±20
    before exp as verl does (a no-op on the weight for any band inside [e^−20, e^20]); a sampler correction
    multiplies each token's term as verl's ``rollout_is_weights`` do (:1764-1765). The weight lies in
    [1 − ε_low, 1 + ε_high] and, since 1 − ε_low > 0, no token with Â ≠ 0 loses its gradient. Unlike :func:`cispo`
    (TRL's), ε_high is read as 1 + ε, not as an absolute cap, and a token far below π_old still weighs 1 − ε_low.
    TRL 1.16 has no such loss: its ``loss_type="cispo"`` with ``epsilon_high`` = 1 + ε_high gives this weight only
    where w >= 1 − ε_low. Defaults 0.2 / 0.2: verl's actor ``clip_ratio`` (:data:`CISPO_CLIP`). Normalisation: mean
    over all valid tokens (``token_mean``; verl's default ``loss_agg_mode=token-mean`` on one process); the loss value
    holds log π_θ: a surrogate. Stats, band [1 − ε_low, 1 + ε_high]: ``clip/token_frac_high`` counts w > 1 + ε_high
    with Â > 0 and ``_low`` w < 1 − ε_low with Â < 0 (weight clipped, gradient kept, as :func:`cispo`'s
    ``_high``); ``clip/token_frac_outside`` every clipped weight, both signs (verl's ``pg_clipfrac``).
    adv: (B,) or (B, T). Returns (−J, stats).
    """
    logp, old_logp, adv, mask, eps_low, eps_high = prepare(
        logp, old_logp, adv, mask, eps_low, eps_high, per_token_adv=True
    )
    adv = per_token(adv, logp.shape)
    log_w = tok_log_ratio(logp, old_logp, mask)
    # sg[clip(w, 1 − ε_low, 1 + ε_high)]
    weight = log_w.detach().clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP).exp().clamp(1 - eps_low, 1 + eps_high)
    loss, grad_weight = _reinforce(weight, adv, logp, mask, loss_factor(sampler_ratio, seq_keep, mask, logp.dtype))
    return loss, objective_stats(log_w, log_w, adv, mask, eps_low, eps_high, grad_weight, grpo_band=GRPO_BAND)


def cispo_mask(logp, old_logp, adv, mask, *, eps_low=GRPO_CLIP.low, eps_high=GRPO_CLIP.high, cap=CISPO_CAP.high,
               sampler_ratio=None, seq_keep=None):  # fmt: skip
    """CISPO with MiniMax-M1's token mask: :func:`cispo`'s weight, and the tokens PPO's clip would zero lose their
    gradient — the direct test of CISPO's "never zero a token's gradient".

    J = Σ_i Σ_t sg[min(w_{i,t}, ε_max)] M_{i,t} Â_{i,t} log π_θ(y_{i,t}|…) / Σ_i |y_i|,  ε_max = ``cap``,
    M_{i,t} = 0 if Â_{i,t} > 0 and w_{i,t} > 1 + ε_high, or Â_{i,t} < 0 and w_{i,t} < 1 − ε_low; else 1.
    MiniMax-M1 (arXiv 2506.13585) §3.1, the unified formulation (not checked against the paper's text here): CISPO's
    objective times a token-wise mask M_{i,t} that recovers PPO's trust region. The paper writes its clipped r̂ there
    (:func:`cispo_clip`'s weight); the weight here is TRL 1.16's ``loss_type="cispo"`` one (grpo_trainer.py:3109-3111),
    so that this arm differs from :func:`cispo` in the mask alone. ``eps_low`` / ``eps_high`` are the mask's band, by
    default GRPO's (0.2, 0.27; :data:`GRPO_CLIP`, the band of the ``drift/outside_grpo_band_*`` metrics); ``cap`` is
    cispo's absolute cap ε_max on the weight (default :data:`CISPO_CAP`.high = 5.0; ``math.inf``: no cap, and the
    gradient is ``grpo_token_mean``'s at the same ε). On-policy (w = 1) M = 1 and the weight is 1: the gradient is
    cispo's. Neither TRL 1.16 nor verl (b178a3c) has the mask. Normalisation: mean over all valid tokens
    (``token_mean``, as cispo); the loss value holds log π_θ: a surrogate. Stats, band [1 − ε_low, 1 + ε_high]:
    ``clip/token_frac`` (``_low``, ``_high``) counts exactly the masked tokens (M = 0, gradient zeroed, as GRPO's
    clip-active ones); ``clip/token_frac_outside`` the tokens outside the band, any Â; the cap binding is no clip
    fraction (it shows in ``weight/token_mean``). adv: (B,) or (B, T). Returns (−J, stats).
    """
    logp, old_logp, adv, mask, eps_low, eps_high = prepare(
        logp, old_logp, adv, mask, eps_low, eps_high, per_token_adv=True
    )
    if isinstance(cap, bool) or not isinstance(cap, (int, float)) or math.isnan(cap) or not cap > 0:
        raise ValueError(
            f"cap must be a number > 0 (ε_max, an absolute cap on the weight; math.inf: none), got {cap!r}"
        )
    adv = per_token(adv, logp.shape)
    log_w = tok_log_ratio(logp, old_logp, mask)
    w = log_w.detach().exp()
    # M_{i,t} = 0 where PPO's clip binds for the sign of Â (objective_stats' low | high, the same comparisons)
    masked = ((adv > 0) & (w > 1 + eps_high)) | ((adv < 0) & (w < 1 - eps_low))
    weight = w.clamp(max=cap).where(~masked, w.new_zeros(()))  # sg[min(w, ε_max)] · M
    loss, grad_weight = _reinforce(weight, adv, logp, mask, loss_factor(sampler_ratio, seq_keep, mask, logp.dtype))
    return loss, objective_stats(log_w, log_w, adv, mask, eps_low, eps_high, grad_weight, grpo_band=GRPO_BAND)


def _reinforce(weight: Tensor, adv: Tensor, logp: Tensor, mask: Tensor, factor: Tensor | None):
    """CISPO's surrogate −token_mean(c · Â · log π_θ · factor) with c = ``weight`` detached, and the gradient factor
    c · factor of ``weight/token_mean`` (factor: :func:`loss_factor`'s, None = none). All (B, T)."""
    per_tok = weight * adv * logp.where(mask, logp.new_zeros(()))
    loss = -token_mean(per_tok if factor is None else per_tok * factor, mask)
    return loss, (weight if factor is None else weight * factor)


def sapo(logp, old_logp, adv, mask, *, eps_low=None, eps_high=None, tau_pos=SAPO_TAU[0], tau_neg=SAPO_TAU[1],
         sampler_ratio=None, seq_keep=None):  # fmt: skip
    """SAPO (Soft Adaptive Policy Optimization, arXiv 2511.20347): a smooth gate in place of the hard clip.

    J = 1/B Σ_i 1/|y_i| Σ_t g(w_{i,t}) Â_{i,t},  g(w) = σ(τ (w − 1)) · 4/τ,  τ = τ₊ if Â > 0 else τ₋.
    g′(1) = 1: on-policy its gradient is the policy gradient; away from w = 1 the gradient weight
    4σ(x)(1 − σ(x))·w (x = τ(w − 1)) decays smoothly instead of dropping to 0 at a band edge, so no token is "clipped"
    (every ``clip/*`` fraction is 0; read ``weight/token_mean``). TRL 1.16 ``loss_type="sapo"``
    (grpo_trainer.py:3121-3124), per token, τ from GRPOConfig (:data:`SAPO_TAU`); verl ``sapo``. Deviation: the
    log-ratio is clamped to ±20 before exp (verl's clamp; see the module docstring). No ε: ``eps_low`` / ``eps_high``
    must be None. Normalisation: as GRPO (``seq_mean_token_mean``). adv: (B,) or (B, T). Returns (−J, stats).
    """
    logp, old_logp, adv, mask, _, _ = prepare(
        logp, old_logp, adv, mask, eps_low, eps_high, per_token_adv=True, band=False
    )
    tau_pos, tau_neg = _positive("tau_pos", tau_pos), _positive("tau_neg", tau_neg)
    adv = per_token(adv, logp.shape)
    log_w = tok_log_ratio(logp, old_logp, mask)
    w = log_w.clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP).exp()
    # τ in the math's dtype (TRL's torch.where on Python floats rounds 1.05 to float32: ~1e-8 apart in the loss)
    tau = torch.where(adv > 0, torch.tensor(tau_pos, dtype=logp.dtype), torch.tensor(tau_neg, dtype=logp.dtype))
    gate = torch.sigmoid(tau * (w - 1))
    per_tok = gate * 4 / tau * adv
    factor = loss_factor(sampler_ratio, seq_keep, mask, logp.dtype)
    loss = -seq_mean_token_mean(per_tok if factor is None else per_tok * factor, mask)
    with torch.no_grad():
        grad_weight = 4 * gate * (1 - gate) * w * (1.0 if factor is None else factor)
        # past the ±20 clamp log w has no gradient, whatever the gate's weight (drift/outside_grpo_band_*)
        carries = (grad_weight != 0) & (log_w.abs() <= LOG_RATIO_CLAMP)
    return loss, objective_stats(log_w, log_w, adv, mask, *no_band(), grad_weight, grpo_band=GRPO_BAND, carries=carries)


@torch.no_grad()
def gamma_weights(log_w: Tensor, adv: Tensor, mask: Tensor, log_rho: Tensor | None = None,
                  shape: tuple[float, float, float, float] = VESPO_SHAPE) -> Tensor:  # fmt: skip
    """VESPO's detached sequence weight φ(W) = W^k e^{λ(1 − W)} (φ(1) = 1), in log space. -> (B,).

    W = π_θ(y_i|x) / π_old(y_i|x), the *product* ratio (a sum of log-ratios, not GSPO's mean), each token's log-ratio
    clamped to ±20, the sum to [ln 1e-8, 20]; (k, λ) = (k₊, λ₊) for Â_i >= 0, (k₋, λ₋) otherwise, λ floored at 1e-4.
    ``log_rho`` (B, T): log of a token-level sampler correction, folded into W (TRL: log W += Σ_t clamp(log ρ)).
    TRL 1.16 ``GRPOTrainer.get_gamma_weights`` (grpo_trainer.py:2972-3018), except that the log ρ sum runs over valid
    tokens only (TRL sums every position; equal when padding's ρ is 1, as TRL's and the kit's is).

    log_w: (B, T) token log-ratios, 0 at padding; adv: (B,); mask: (B, T) bool.
    """
    k_pos, lambda_pos, k_neg, lambda_neg = shape
    seq = masked_sum(log_w.clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP), mask, dim=-1)
    if log_rho is not None:
        seq = seq + masked_sum(log_rho.clamp(_VESPO_LOG_FLOOR, LOG_RATIO_CLAMP), mask, dim=-1)
    log_W = seq.clamp(_VESPO_LOG_FLOOR, LOG_RATIO_CLAMP)
    nonneg = adv >= 0
    dt = log_W.dtype
    k = torch.where(nonneg, torch.tensor(k_pos, dtype=dt), torch.tensor(k_neg, dtype=dt))
    lam = torch.where(nonneg, torch.tensor(lambda_pos, dtype=dt), torch.tensor(lambda_neg, dtype=dt)).clamp(min=1e-4)
    return (lam + k * log_W - lam * log_W.exp()).exp()


def vespo(logp, old_logp, adv, mask, *, eps_low=None, eps_high=None, shape=VESPO_SHAPE, sampler_ratio=None,
          seq_keep=None):  # fmt: skip
    """VESPO (arXiv 2602.10693): REINFORCE with a detached Gamma-shaped weight of the whole sequence's ratio.

    J = Σ_i Σ_t sg[φ(W_i)] Â_i log π_θ(y_{i,t}|…) / Σ_i |y_i|,  φ and W of :func:`gamma_weights`.
    φ peaks at W = k/λ and falls to 0 on both sides: a response far off-policy in either direction is damped
    smoothly, none is cut at an edge (every ``clip/*`` fraction is 0; read ``weight/token_mean``, the mean of φ over
    valid tokens — TRL logs ``vespo/phi_seq_mean``, the mean over all B responses). TRL 1.16 ``loss_type="vespo"``
    (grpo_trainer.py:3125-3136), meant for ``importance_sampling_level="token"`` (W ignores the level); verl has no
    vespo (the authors' recipe registers one). A token-level ``sampler_ratio`` is folded into W in log space, not
    multiplied (TRL skips the multiplication for vespo, grpo_trainer.py:3146); a sequence-level one raises (TRL's
    __init__ does, grpo_trainer.py:936-941). No ε (None). Normalisation: mean over valid tokens (``token_mean``;
    TRL's ``num_items_in_batch``, as for :func:`cispo`); the loss value holds log π_θ: a surrogate.
    adv: (B,) only. Returns (−J, stats).
    """
    logp, old_logp, adv, mask, _, _ = prepare(
        logp, old_logp, adv, mask, eps_low, eps_high, per_token_adv=False, band=False
    )
    if len(shape) != 4:
        raise ValueError(f"shape must be (k_pos, lambda_pos, k_neg, lambda_neg), got {shape!r}")
    shape = tuple(_positive(n, v) for n, v in zip(("k_pos", "lambda_pos", "k_neg", "lambda_neg"), shape, strict=True))
    log_rho = None
    if sampler_ratio is not None:
        check_float_tensor("sampler_ratio", sampler_ratio, 2)
        if tuple(sampler_ratio.shape) != tuple(logp.shape):
            raise ValueError(
                f"vespo folds a per-token sampler_ratio (B, T) = {tuple(logp.shape)} into W; got shape "
                f"{tuple(sampler_ratio.shape)} (a sequence-level correction: TRL raises for vespo too)"
            )
        check_finite("sampler_ratio", sampler_ratio, mask)
        log_rho = sampler_ratio.detach().to(logp.dtype).clamp(min=0).log()  # log 0 = −inf, floored in gamma_weights
    log_w = tok_log_ratio(logp, old_logp, mask)
    phi = gamma_weights(log_w, adv, mask, log_rho, shape)
    factor = loss_factor(None, seq_keep, mask, logp.dtype)
    adv_tokens, phi_tokens = per_token(adv, logp.shape), per_token(phi, logp.shape)
    per_tok = phi_tokens * adv_tokens * logp.where(mask, logp.new_zeros(()))
    loss = -token_mean(per_tok if factor is None else per_tok * factor, mask)
    grad_weight = phi_tokens if factor is None else phi_tokens * factor
    return loss, objective_stats(log_w, log_w, adv_tokens, mask, *no_band(), grad_weight, grpo_band=GRPO_BAND)
