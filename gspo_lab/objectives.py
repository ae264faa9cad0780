"""Policy objectives of GRPO, GSPO and GSPO-token (arXiv 2507.18071), with one signature and one registry.

Every objective is a pure function

    fn(logp, old_logp, adv, mask, *, eps_low, eps_high, **extra) -> (loss, ObjectiveStats)

with ``loss = −J`` (a scalar to *minimise*) and detached statistics (see :mod:`gspo_lab.metrics`). Look one up by
name with :func:`get_objective`; adding an objective is one function plus one :data:`OBJECTIVES` entry.

Shapes: B sequences (B = n_groups · G), T tokens.
    logp, old_logp: (B, T) log-probabilities of the sampled tokens under π_θ and π_old (any float dtype);
    adv: (B,) one Â_i per response, or (B, T) per token where the objective allows it;
    mask: (B, T) 0/1 or bool, 1 at response tokens.

Clip ranges are per objective and carry their source (:data:`GSPO_CLIP` is ~700x narrower than
:data:`GRPO_CLIP`; a shared ε would make GSPO clip nothing or GRPO clip everything).

Deviations from the paper, declared:
    1. The KL penalty is left out (β = 0), as in the paper's equations and TRL's/verl's GSPO recipes.
    2. A response with no valid token contributes 0 to the loss and still counts in the 1/B of the mean over
       responses (TRL's convention; verl drops it from the denominator). The paper does not consider it.
    3. Math runs in float32 at least (float64 stays float64): bf16/fp16 log-probs are upcast first. In float32,
       |log-ratio| up to ~80 stays finite in value and gradient.
    4. No dual-clip, no truncation of the unclipped ratio (TRL's ``delta``), no log-ratio clamp (verl clamps the
       GSPO log-ratio at 10) in the paper's objectives: none of them is in the paper. Dual-clip exists as its own
       objective, :func:`grpo_dual_clip`, to test where GRPO's large updates come from (findings, 2e).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch
from torch import Tensor

from gspo_lab.metrics import ObjectiveStats, objective_stats
from gspo_lab.ratios import gspo_token_log_ratio, seq_log_ratio, tok_log_ratio
from gspo_lab.reductions import seq_mean, seq_mean_token_mean, seq_mean_token_sum_norm, token_mean
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
    "GRPO_CLIP",
    "GSPO_CLIP",
    "DAPO_CLIP",
    "PPO_CLIP",
    "Objective",
    "ObjectiveSpec",
    "OBJECTIVES",
    "get_objective",
    "grpo",
    "gspo",
    "gspo_token",
    "grpo_token_mean",
    "grpo_const_norm",
    "gspo_token_mean",
    "grpo_dual_clip",
    "DUAL_CLIP_C",
]


@dataclass(frozen=True)
class ClipRange:
    """The clip band [1 − low, 1 + high] and where its numbers come from."""

    low: float
    high: float
    source: str


GSPO_CLIP = ClipRange(3e-4, 4e-4, "GSPO paper §5.1: 'the left and right clipping ranges ... 3e-4 and 4e-4'")
GRPO_CLIP = ClipRange(0.2, 0.27, "GSPO paper §5.1, the GRPO baseline's clipping ranges")
DAPO_CLIP = ClipRange(0.2, 0.28, "DAPO (arXiv 2503.14476) §3.1, Clip-Higher: ε_low 0.2, ε_high 0.28")
PPO_CLIP = ClipRange(0.2, 0.2, "PPO (arXiv 1707.06347) ε = 0.2; Dr. GRPO (arXiv 2503.20783) keeps PPO's clip")
#: dual-clip bound c (Ye et al., arXiv 1912.09729, §3.2): verl's default ``clip_ratio_c = 3.0``
DUAL_CLIP_C = 3.0


class Objective(Protocol):
    def __call__(
        self, logp: Tensor, old_logp: Tensor, adv: Tensor, mask: Tensor, *, eps_low: float, eps_high: float
    ) -> tuple[Tensor, ObjectiveStats]: ...


def _prepare(logp, old_logp, adv, mask, eps_low, eps_high, *, per_token_adv: bool):
    """Check every argument; return float32/64 copies, mask as bool and the clip band."""
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
    eps_low, eps_high = check_clip_range(eps_low, eps_high)
    check_finite("logp", logp, mask)
    check_finite("old_logp", old_logp, mask)
    check_finite("adv", adv, mask if adv.dim() == 2 else None)
    dtype = compute_dtype(logp, old_logp, adv)
    adv = adv.to(dtype)
    if adv.dim() == 2:
        adv = adv.where(mask, adv.new_zeros(()))  # padding may hold anything
    return logp.to(dtype), old_logp.to(dtype), adv, mask, eps_low, eps_high


def _per_token(adv: Tensor, shape: torch.Size) -> Tensor:
    """Â as (B, T): a per-response (B,) advantage is shared by all tokens of its response."""
    return adv.unsqueeze(-1).expand(shape) if adv.dim() == 1 else adv


def _clipped_surrogate(
    log_ratio: Tensor, adv: Tensor, eps_low: float, eps_high: float, clip_c: float | None = None
) -> Tensor:
    """min(r Â, clip(r, 1 − ε_low, 1 + ε_high) Â) elementwise, r = exp(log_ratio): the one exp(), before clipping.
    With ``clip_c`` (dual-clip), an element with Â < 0 is floored at c·Â."""
    weight = log_ratio.exp()
    surrogate = torch.minimum(weight * adv, weight.clamp(1 - eps_low, 1 + eps_high) * adv)
    if clip_c is None:
        return surrogate
    return torch.where(adv < 0, torch.maximum(surrogate, clip_c * adv), surrogate)


def grpo(logp, old_logp, adv, mask, *, eps_low=GRPO_CLIP.low, eps_high=GRPO_CLIP.high):
    """GRPO (GSPO paper §2, Eq. 2): one ratio and one clip per token.

    J = 1/B Σ_i 1/|y_i| Σ_t min(w_{i,t} Â_{i,t}, clip(w_{i,t}, 1−ε_low, 1+ε_high) Â_{i,t}),  w_{i,t} of Eq. 3.
    Normalisation: per-response token mean, then mean over responses (``seq_mean_token_mean``; TRL
    ``loss_type="grpo"``, verl ``seq-mean-token-mean``). adv: (B,) or per-token (B, T). Returns (−J, stats).
    """
    logp, old_logp, adv, mask, eps_low, eps_high = _prepare(
        logp, old_logp, adv, mask, eps_low, eps_high, per_token_adv=True
    )
    adv = _per_token(adv, logp.shape)
    log_w = tok_log_ratio(logp, old_logp, mask)
    loss = -seq_mean_token_mean(_clipped_surrogate(log_w, adv, eps_low, eps_high), mask)
    return loss, objective_stats(log_w, log_w, adv, mask, eps_low, eps_high)


def gspo(logp, old_logp, adv, mask, *, eps_low=GSPO_CLIP.low, eps_high=GSPO_CLIP.high):
    """GSPO (GSPO paper §4.1, Eqs. 5 and 7): one length-normalised ratio and one clip per response.

    J = 1/B Σ_i min(s_i Â_i, clip(s_i, 1−ε_low, 1+ε_high) Â_i),  log s_i = 1/|y_i| Σ_t log w_{i,t}.
    Normalisation: mean over responses of a per-response term (each response weighs 1/B whatever its length; the
    1/|y_i| sits inside s_i). An empty response contributes 0. adv: (B,) only — for per-token advantages use
    :func:`gspo_token`. Returns (−J, stats); a clipped response counts all its tokens in ``clip/token_frac``.
    """
    logp, old_logp, adv, mask, eps_low, eps_high = _prepare(
        logp, old_logp, adv, mask, eps_low, eps_high, per_token_adv=False
    )
    log_s = seq_log_ratio(logp, old_logp, mask)
    loss = -seq_mean(_clipped_surrogate(log_s, adv, eps_low, eps_high), mask)
    log_s_tokens, adv_tokens = _per_token(log_s, logp.shape), _per_token(adv, logp.shape)
    stats = objective_stats(tok_log_ratio(logp, old_logp, mask), log_s_tokens, adv_tokens, mask, eps_low, eps_high)
    return loss, stats


def gspo_token(logp, old_logp, adv, mask, *, eps_low=GSPO_CLIP.low, eps_high=GSPO_CLIP.high):
    """GSPO-token (GSPO paper §4.3, Eqs. 13-14): GSPO's ratio value with a per-token gradient path.

    J = 1/B Σ_i 1/|y_i| Σ_t min(s_{i,t} Â_{i,t}, clip(s_{i,t}, 1−ε_low, 1+ε_high) Â_{i,t}),
    s_{i,t} = sg[s_i] · π_θ(y_{i,t}|…) / sg[π_θ(y_{i,t}|…)].
    Normalisation: per-response token mean, then mean over responses (``seq_mean_token_mean``). With adv (B,)
    it equals :func:`gspo` in value, clipping and gradient; with per-token adv (B, T) it differs (the clip
    decision is still made on s_i, with the sign of each Â_{i,t}). Returns (−J, stats).
    """
    logp, old_logp, adv, mask, eps_low, eps_high = _prepare(
        logp, old_logp, adv, mask, eps_low, eps_high, per_token_adv=True
    )
    adv = _per_token(adv, logp.shape)
    log_s_t = gspo_token_log_ratio(logp, old_logp, mask)
    loss = -seq_mean_token_mean(_clipped_surrogate(log_s_t, adv, eps_low, eps_high), mask)
    return loss, objective_stats(tok_log_ratio(logp, old_logp, mask), log_s_t, adv, mask, eps_low, eps_high)


def grpo_token_mean(logp, old_logp, adv, mask, *, eps_low=DAPO_CLIP.low, eps_high=DAPO_CLIP.high):
    """GRPO's token ratios with DAPO's token-mean aggregation (DAPO, arXiv 2503.14476, §3.3).

    J = Σ_i Σ_t min(w Â, clip(w) Â) / Σ_i |y_i|. Normalisation: mean over all valid tokens of the batch
    (``token_mean``; TRL ``loss_type="bnpo"``, verl ``token-mean``): a response weighs in proportion to its length.
    Returns (−J, stats).
    """
    logp, old_logp, adv, mask, eps_low, eps_high = _prepare(
        logp, old_logp, adv, mask, eps_low, eps_high, per_token_adv=True
    )
    adv = _per_token(adv, logp.shape)
    log_w = tok_log_ratio(logp, old_logp, mask)
    loss = -token_mean(_clipped_surrogate(log_w, adv, eps_low, eps_high), mask)
    return loss, objective_stats(log_w, log_w, adv, mask, eps_low, eps_high)


def grpo_const_norm(
    logp, old_logp, adv, mask, *, eps_low=PPO_CLIP.low, eps_high=PPO_CLIP.high, norm_len: int | None = None
):
    """GRPO's token ratios with Dr. GRPO's constant normaliser (Dr. GRPO, arXiv 2503.20783, §3.2).

    J = 1/B Σ_i Σ_t min(w Â, clip(w) Â) / L_norm, with L_norm = ``norm_len``: the generation budget (TRL's
    ``dr_grpo`` uses ``max_completion_length``; the loop passes ``max_new_tokens``). Default T, the padded
    length — a constant only when every batch is padded to the budget. Normalisation: ``seq_mean_token_sum_norm``,
    a constant, so a response weighs in proportion to its length and the scale never depends on the batch.
    Returns (−J, stats).
    """
    logp, old_logp, adv, mask, eps_low, eps_high = _prepare(
        logp, old_logp, adv, mask, eps_low, eps_high, per_token_adv=True
    )
    adv = _per_token(adv, logp.shape)
    if norm_len is None:
        norm_len = logp.shape[1]
    if isinstance(norm_len, bool) or not isinstance(norm_len, int) or norm_len < 1:
        raise ValueError(f"norm_len must be a positive int (the constant length normaliser), got {norm_len!r}")
    log_w = tok_log_ratio(logp, old_logp, mask)
    loss = -seq_mean_token_sum_norm(_clipped_surrogate(log_w, adv, eps_low, eps_high), mask, norm_len)
    return loss, objective_stats(log_w, log_w, adv, mask, eps_low, eps_high)


def gspo_token_mean(logp, old_logp, adv, mask, *, eps_low=GSPO_CLIP.low, eps_high=GSPO_CLIP.high):
    """GSPO's sequence ratio with DAPO's token-mean aggregation: the length-weighting *pitfall*, kept to show it.

    J = Σ_i |y_i| min(s_i Â_i, clip(s_i) Â_i) / Σ_i |y_i|: each response is weighted by its length, which is not
    Eq. 5 (TRL ``importance_sampling_level="sequence"`` with ``loss_type="bnpo"``/``"dapo"`` does this and warns).
    Normalisation: ``token_mean``. adv: (B,) only. Returns (−J, stats).
    """
    logp, old_logp, adv, mask, eps_low, eps_high = _prepare(
        logp, old_logp, adv, mask, eps_low, eps_high, per_token_adv=False
    )
    log_s_tokens, adv = _per_token(seq_log_ratio(logp, old_logp, mask), logp.shape), _per_token(adv, logp.shape)
    loss = -token_mean(_clipped_surrogate(log_s_tokens, adv, eps_low, eps_high), mask)
    return loss, objective_stats(tok_log_ratio(logp, old_logp, mask), log_s_tokens, adv, mask, eps_low, eps_high)


def grpo_dual_clip(
    logp, old_logp, adv, mask, *, eps_low=GRPO_CLIP.low, eps_high=GRPO_CLIP.high, clip_c: float = DUAL_CLIP_C
):
    """GRPO (Eq. 2) with dual-clip (Ye et al., arXiv 1912.09729, §3.2): a token with Â < 0 contributes at least c·Â.

    In Eq. 2, min(w Â, clip(w) Â) with Â < 0 picks w Â whenever w > 1 + ε_high: nothing bounds that token's weight,
    so one stale token whose ratio grew to e^5 can dominate an update. Dual-clip takes max(·, c Â) for Â < 0, so a
    token with w > c has value c Â and no gradient. verl: ``clip_ratio_c`` (default 3.0); TRL: ``delta`` (it clamps
    w at δ before the min, the same function for δ = c > 1 + ε_high). Normalisation as :func:`grpo`. The clip
    statistics count the ε band only, as TRL's and verl's do. adv: (B,) or (B, T). Returns (−J, stats).
    """
    logp, old_logp, adv, mask, eps_low, eps_high = _prepare(
        logp, old_logp, adv, mask, eps_low, eps_high, per_token_adv=True
    )
    if isinstance(clip_c, bool) or not isinstance(clip_c, (int, float)) or not clip_c > 1 + eps_high:
        raise ValueError(
            f"clip_c must be a number > 1 + eps_high = {1 + eps_high:g} (verl's default 3.0), got {clip_c!r}"
        )
    adv = _per_token(adv, logp.shape)
    log_w = tok_log_ratio(logp, old_logp, mask)
    loss = -seq_mean_token_mean(_clipped_surrogate(log_w, adv, eps_low, eps_high, clip_c), mask)
    return loss, objective_stats(log_w, log_w, adv, mask, eps_low, eps_high)


@dataclass(frozen=True)
class ObjectiveSpec:
    """A registry entry: the function, its clip defaults, and what it is, for tables and plots."""

    name: str
    fn: Objective
    clip: ClipRange
    ratio: str  # which ratio is clipped: "token" | "sequence" | "gspo-token"
    aggregation: str  # the named reduction in gspo_lab.reductions
    reference: str
    budget_kw: str | None = None  # keyword that takes the response budget (a constant length normaliser), if any
    per_token_adv: bool = False  # accepts (B, T) advantages as well as (B,)

    def __call__(self, logp, old_logp, adv, mask, *, budget: int | None = None, **kwargs):
        """Call the objective with this entry's clip defaults unless ``eps_low`` / ``eps_high`` are given.

        ``budget``: the response budget (max new tokens) of the batch; passed on as ``budget_kw`` to objectives with
        a constant length normaliser, ignored by the others (their normalisation does not depend on it).
        """
        kwargs.setdefault("eps_low", self.clip.low)
        kwargs.setdefault("eps_high", self.clip.high)
        if self.budget_kw is not None and budget is not None:
            kwargs.setdefault(self.budget_kw, budget)
        return self.fn(logp, old_logp, adv, mask, **kwargs)


OBJECTIVES: dict[str, ObjectiveSpec] = {
    spec.name: spec
    for spec in (
        ObjectiveSpec("grpo", grpo, GRPO_CLIP, "token", "seq_mean_token_mean", "GSPO paper Eq. 2"),
        ObjectiveSpec("gspo", gspo, GSPO_CLIP, "sequence", "seq_mean", "GSPO paper Eqs. 5, 7"),
        ObjectiveSpec(
            "gspo_token",
            gspo_token,
            GSPO_CLIP,
            "gspo-token",
            "seq_mean_token_mean",
            "GSPO Eqs. 13-14",
            per_token_adv=True,
        ),
        ObjectiveSpec(
            "grpo_token_mean", grpo_token_mean, DAPO_CLIP, "token", "token_mean", "DAPO §3.3", per_token_adv=True
        ),
        ObjectiveSpec(
            "grpo_const_norm",
            grpo_const_norm,
            PPO_CLIP,
            "token",
            "seq_mean_token_sum_norm",
            "Dr. GRPO §3.2",
            budget_kw="norm_len",
        ),
        ObjectiveSpec("gspo_token_mean", gspo_token_mean, GSPO_CLIP, "sequence", "token_mean", "pitfall demo"),
        ObjectiveSpec(
            "grpo_dual_clip",
            grpo_dual_clip,
            GRPO_CLIP,
            "token",
            "seq_mean_token_mean",
            "Eq. 2 + dual-clip (verl clip_ratio_c)",
        ),
    )
}


def get_objective(name: str) -> ObjectiveSpec:
    """The registry entry for ``name``; a ValueError lists the valid names."""
    try:
        return OBJECTIVES[name]
    except KeyError:
        raise ValueError(f"objective must be one of {sorted(OBJECTIVES)}, got {name!r}") from None
