"""GSPO's successors as one design space (notebook 06): how token ratios are *combined*, and what *bounds* them.

Every objective after GSPO picks one point on two axes (and, for a few, a third control):

* **combination** — which ratio each token's term reads, r_{i,t}, from the token ratios w_{i,t} (Eq. 3):
  ``token`` r = w_{i,t} (GRPO, CISPO, SAPO); ``prefix`` r = Π_{s≤t} w_{i,s}, a running prefix product (later papers);
  ``geometric`` r = s_i = (Π_t w_{i,t})^{1/|y_i|} (GSPO's Eq. 7; LUSPO); ``product`` r = W_i = Π_t w_{i,t}, the
  full sequence ratio (VESPO). The sequence forms broadcast one r over the response, and the gradient of each
  token's term flows through the combination to every token it reads.
* **bound** — what the term does with r (Â: the token's advantage):
  ``clip``  min(r Â, clip(r, 1 − ε_low, 1 + ε_high) Â), PPO's hard clip: 0 gradient past the band for the sign of Â
  (GRPO's Eq. 2, GSPO's Eq. 5); with ``floor_c`` the dual-clip floor max(·, c Â) for Â < 0;
  ``clip first``  each token's log-ratio clipped *before* the combination, pessimistically for the sign of Â, to the
  log band [−ε_low, ε_high] (ĉ = min(log w, clamp(log w)) for Â > 0, max otherwise), then e^{combined ĉ} Â: GMPO's
  clip (its ε is in log space);
  ``mask``  sg[min(r, cap_high)] M Â log π_θ(y_{i,t}): a detached weight, M = 0 where the clip would bind
  (MiniMax-M1's token mask);
  ``cap``  sg[clamp(r, cap_low, cap_high)] Â log π_θ(y_{i,t}): a capped detached weight, no token loses its gradient
  (CISPO: TRL's cap [0, ε_max], verl's two-sided [1 − ε, 1 + ε]);
  ``gate``  σ(τ (r − 1)) · 4/τ · Â, SAPO's smooth gate (τ₊ for Â > 0, τ₋ otherwise; log r clamped at ±20);
  ``gamma``  sg[φ(r)] Â log π_θ(y_{i,t}), φ(r) = r^k e^{λ(1 − r)}, VESPO's Gamma-shaped weight (log r clamped to
  [ln 1e-8, 20]);
  ``none``  r Â: plain importance sampling, nothing bounds it.
* **aggregation** (the third control, :mod:`gspo_lab.reductions`): ``seq_mean_token_mean`` (GRPO, GSPO, SAPO),
  ``token_mean`` (CISPO, VESPO), ``seq_mean_token_sum`` (LUSPO's length weight: each response counted |y_i| times).

:data:`PRESETS` places the library's objectives on the axes; each equals its registry objective in loss, gradient
and clip statistics at its registry defaults (tests/test_design.py). Three sit off the two axes and get a control of
their own: GMPO clips each token's log-ratio *before* the geometric mean (the bound ``clip first``, which only GMPO
uses), dual-clip's floor (``floor_c``) and LUSPO's length weight (``aggregation``). GSPO-token (Eqs. 13-14) is
GSPO's point: with one Â per response its loss, gradient and clipping equal GSPO's (the paper's §4.3).

Shapes: B responses, T tokens; logp, old_logp, mask (B, T); adv (B,) or (B, T).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from gspo_lab.metrics import objective_stats
from gspo_lab.objectives import (
    CISPO_CAP,
    CISPO_CLIP,
    DUAL_CLIP_C,
    GMPO_CLIP,
    GRPO_CLIP,
    GSPO_CLIP,
    LUSPO_CLIP,
    SAPO_TAU,
    VESPO_SHAPE,
    get_objective,
)
from gspo_lab.objectives.core import GRPO_BAND, clipped_surrogate, no_band, per_token, prepare
from gspo_lab.ratios import tok_log_ratio
from gspo_lab.reductions import masked_mean, masked_sum, seq_mean_token_mean, seq_mean_token_sum, token_mean

__all__ = [
    "COMBINATIONS",
    "BOUNDS",
    "AGGREGATIONS",
    "Design",
    "Preset",
    "PRESETS",
    "combined_log_ratio",
    "design_objective",
    "token_weights",
    "readout",
    "preset_gap",
]

COMBINATIONS = ("token", "prefix", "geometric", "product")
BOUNDS = ("clip", "clip first", "mask", "cap", "gate", "gamma", "none")
AGGREGATIONS = {"seq_mean_token_mean": seq_mean_token_mean, "token_mean": token_mean,
                "seq_mean_token_sum": seq_mean_token_sum}  # fmt: skip
_REINFORCE = ("mask", "cap", "gamma")  # a detached weight times Â log π_θ: the gradient flows through log π only
_LOG_CLAMP = 20.0  # SAPO's (verl) and VESPO's (TRL) clamp of a log-ratio
_VESPO_FLOOR = math.log(1e-8)


@dataclass(frozen=True)
class Design:
    """One point of the design space and its parameters (module docstring)."""

    combine: str = "token"
    bound: str = "clip"
    eps_low: float = GRPO_CLIP.low  # clip, mask: the band [1 − ε_low, 1 + ε_high] on r; clip first: [−ε_low, ε_high]
    #: on log w
    eps_high: float = GRPO_CLIP.high
    cap_low: float = 0.0  # cap: the detached weight clamped to [cap_low, cap_high]; mask: capped at cap_high
    cap_high: float = CISPO_CAP.high
    tau: tuple[float, float] = SAPO_TAU  # gate: (τ₊, τ₋)
    shape: tuple[float, float, float, float] = VESPO_SHAPE  # gamma: (k₊, λ₊, k₋, λ₋)
    floor_c: float | None = None  # clip: dual-clip's c (Â < 0 floored at c Â), None = none
    aggregation: str = "seq_mean_token_mean"

    def __post_init__(self):
        for name, value, allowed in (("combine", self.combine, COMBINATIONS), ("bound", self.bound, BOUNDS),
                                     ("aggregation", self.aggregation, tuple(AGGREGATIONS))):  # fmt: skip
            if value not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
        if not (0 <= self.cap_low < self.cap_high):
            raise ValueError(f"cap_low and cap_high must satisfy 0 <= cap_low < cap_high, got {self.cap_low!r}, "
                             f"{self.cap_high!r}")  # fmt: skip
        if any(not t > 0 for t in self.tau):
            raise ValueError(f"tau must be two numbers > 0 (τ₊, τ₋), got {self.tau!r}")
        if self.floor_c is not None and not self.floor_c > 1 + self.eps_high:
            raise ValueError(f"floor_c must be None or a number > 1 + eps_high = {1 + self.eps_high:g}, got "
                             f"{self.floor_c!r}")  # fmt: skip

    def band(self) -> tuple[float, float]:
        """(ε_low, ε_high) of the clip statistics, :func:`gspo_lab.metrics.objective_stats`' terms: the ε band
        (clip, mask), the cap's band (cap), none (gate, gamma, none: nothing is clipped)."""
        if self.bound in ("clip", "mask"):
            return self.eps_low, self.eps_high
        if self.bound == "clip first":  # the log band as a ratio band
            return -math.expm1(-self.eps_low), math.expm1(self.eps_high)
        if self.bound == "cap":
            return 1.0 - self.cap_low, self.cap_high - 1.0
        return no_band()

    def __call__(self, logp, old_logp, adv, mask):
        """The objective at this point, with the library's one signature (no keyword needed)."""
        return design_objective(logp, old_logp, adv, mask, self)


@dataclass(frozen=True)
class Preset:
    """A library objective (its registry name) and its point in the design space."""

    objective: str
    design: Design
    note: str = ""


PRESETS: dict[str, Preset] = {
    "GRPO": Preset("grpo", Design()),
    "GRPO + dual-clip": Preset("grpo_dual_clip", Design(floor_c=DUAL_CLIP_C),
                               note="dual-clip's floor c: a third control"),
    "GSPO": Preset("gspo", Design("geometric", eps_low=GSPO_CLIP.low, eps_high=GSPO_CLIP.high)),
    "GSPO-token": Preset("gspo_token", Design("geometric", eps_low=GSPO_CLIP.low, eps_high=GSPO_CLIP.high),
                         note="GSPO's point: with one Â per response it equals GSPO (§4.3)"),
    "CISPO (TRL)": Preset("cispo", Design(bound="cap", aggregation="token_mean")),
    "CISPO (verl)": Preset("cispo_clip", Design(bound="cap", cap_low=1 - CISPO_CLIP.low, cap_high=1 + CISPO_CLIP.high,
                                                aggregation="token_mean")),
    "CISPO + mask (MiniMax-M1)": Preset("cispo_mask", Design(bound="mask", aggregation="token_mean")),
    "SAPO": Preset("sapo", Design(bound="gate")),
    "GMPO": Preset("gmpo", Design("geometric", "clip first", eps_low=GMPO_CLIP.low, eps_high=GMPO_CLIP.high),
                   note="clips each token's log-ratio before the geometric mean: the bound 'clip first'"),
    "VESPO": Preset("vespo", Design("product", "gamma", aggregation="token_mean")),
    "LUSPO": Preset("luspo", Design("geometric", eps_low=LUSPO_CLIP.low, eps_high=LUSPO_CLIP.high,
                                    aggregation="seq_mean_token_sum"),
                    note="GSPO's point with each response counted |y_i| times: the aggregation control"),
}  # fmt: skip


def combined_log_ratio(log_w: Tensor, mask: Tensor, combine: str) -> Tensor:
    """(B, T) log r_{i,t} of ``combine`` from the token log-ratios ``log_w`` (0 at padding), 0 at padding."""
    if combine == "token":
        out = log_w
    elif combine == "prefix":
        out = torch.cumsum(log_w.where(mask, log_w.new_zeros(())), dim=-1)
    elif combine == "geometric":
        out = per_token(masked_mean(log_w, mask, dim=-1), log_w.shape)
    elif combine == "product":
        out = per_token(masked_sum(log_w, mask, dim=-1), log_w.shape)
    else:
        raise ValueError(f"combine must be one of {COMBINATIONS}, got {combine!r}")
    return out.where(mask, out.new_zeros(()))


def _term(d: Design, log_r: Tensor, adv: Tensor, logp: Tensor, mask: Tensor) -> Tensor:
    """(B, T) each token's term of J at ``d``'s bound (module docstring), 0 at padding."""
    if d.bound == "clip":
        term = clipped_surrogate(log_r, adv, d.eps_low, d.eps_high, d.floor_c)
    elif d.bound in ("none", "clip first"):  # clip first: the clip is already inside log r
        term = log_r.exp() * adv
    elif d.bound == "gate":
        r = log_r.clamp(-_LOG_CLAMP, _LOG_CLAMP).exp()
        dt = log_r.dtype
        tau = torch.where(adv > 0, torch.tensor(d.tau[0], dtype=dt), torch.tensor(d.tau[1], dtype=dt))
        term = torch.sigmoid(tau * (r - 1)) * 4 / tau * adv
    else:  # a detached weight: REINFORCE on log π_θ
        r = log_r.detach().exp()
        if d.bound == "cap":
            weight = r.clamp(d.cap_low, d.cap_high)
        elif d.bound == "mask":
            masked = ((adv > 0) & (r > 1 + d.eps_high)) | ((adv < 0) & (r < 1 - d.eps_low))
            weight = r.clamp(max=d.cap_high).where(~masked, r.new_zeros(()))
        else:  # gamma
            k_pos, lam_pos, k_neg, lam_neg = d.shape
            log_big = log_r.detach().clamp(_VESPO_FLOOR, _LOG_CLAMP)
            dt = log_r.dtype
            k = torch.where(adv >= 0, torch.tensor(k_pos, dtype=dt), torch.tensor(k_neg, dtype=dt))
            lam = torch.where(adv >= 0, torch.tensor(lam_pos, dtype=dt), torch.tensor(lam_neg, dtype=dt))
            weight = (lam + k * log_big - lam * log_big.exp()).exp()
        term = weight * adv * logp.where(mask, logp.new_zeros(()))
    return term.where(mask, term.new_zeros(()))


def design_objective(logp, old_logp, adv, mask, design: Design):
    """J at one point of the design space, with the library's one signature: (−J, stats).

    ``design``: a :class:`Design`. adv: (B,) or (B, T). The clip statistics count where the bound binds for the sign
    of Â (clip, mask: the ε band on r; cap: the cap's band; gate, gamma, none: nothing), as each registry objective
    counts them. Returns (loss, :class:`~gspo_lab.metrics.ObjectiveStats`)."""
    if not isinstance(design, Design):
        raise TypeError(f"design must be a gspo_lab.design.Design, got {type(design).__name__}")
    logp, old_logp, adv, mask, _, _ = prepare(logp, old_logp, adv, mask, None, None, per_token_adv=True, band=False)
    adv = per_token(adv, logp.shape)
    log_w = tok_log_ratio(logp, old_logp, mask)
    if design.bound == "clip first":  # GMPO: the pessimistic clip per token, in log space, then the combination
        clamped = log_w.clamp(-design.eps_low, design.eps_high)
        log_w_c = torch.where(adv > 0, torch.minimum(log_w, clamped), torch.maximum(log_w, clamped))
        log_r = combined_log_ratio(log_w_c, mask, design.combine)
    else:
        log_r = combined_log_ratio(log_w, mask, design.combine)
    loss = -AGGREGATIONS[design.aggregation](_term(design, log_r, adv, logp, mask), mask)
    zeroed = None
    if design.bound == "clip" and design.floor_c is not None:
        zeroed = (adv < 0) & (log_r.detach().exp() > design.floor_c)
    clip_on = log_w if design.bound == "clip first" else log_r  # GMPO counts tokens past its band, as TRL does
    stats = objective_stats(log_w.detach(), clip_on.detach(), adv, mask, *design.band(), zeroed=zeroed,
                            grpo_band=GRPO_BAND)  # fmt: skip
    return loss, stats


def token_weights(objective, logp: Tensor, old_logp: Tensor, adv: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
    """Each token's gradient weight: −∂loss/∂logp_{i,t} divided by its value on-policy (logp = old_logp, every ratio
    1), by autograd on ``objective`` (a :class:`Design` or any callable with the objectives' signature), in float64.

    1 on-policy for every objective here; 0 where the bound took the token's gradient; for a sequence combination
    the token's share of the gradient through r. Returns (weights, defined): both (B, T); ``defined`` is the valid
    tokens with Â ≠ 0 (elsewhere the gradient is 0 on- and off-policy, and the weight is set to 0, not 0/0)."""
    old = old_logp.detach().to(torch.float64)
    adv64 = adv.detach().to(torch.float64)

    def coef(at: Tensor) -> Tensor:
        leaf = at.detach().to(torch.float64).requires_grad_(True)
        loss, _ = objective(leaf, old, adv64, mask)
        (grad,) = torch.autograd.grad(loss, leaf)
        return -grad

    now, base = coef(logp), coef(old)
    defined = mask.bool() & (per_token(adv64, old.shape) != 0) & (base != 0)
    return torch.where(defined, now / base.where(defined, base.new_ones(())), 0.0), defined


def readout(objective, logp: Tensor, old_logp: Tensor, adv: Tensor, mask: Tensor) -> dict:
    """What notebook 06's panel reads out for ``objective`` on one batch: the tokens with Â ≠ 0 (``tokens``), those
    whose ratio w lies outside GRPO's band [0.8, 1.27] (``outside``), the share of those that keep a gradient
    (``kept``, None when no token is outside), and the clipped shares in tokens and in responses (the objective's own
    ``clip/token_frac`` and ``clip/seq_frac``)."""
    weights, defined = token_weights(objective, logp, old_logp, adv, mask)
    w = tok_log_ratio(logp.detach(), old_logp.detach(), mask).exp()
    outside = defined & ((w < 1 - GRPO_BAND[0]) | (w > 1 + GRPO_BAND[1]))
    kept = outside & (weights != 0)
    _, stats = objective(logp.detach(), old_logp.detach(), adv.detach(), mask)
    n_out = int(outside.sum())
    return {"tokens": int(defined.sum()), "outside": n_out, "kept": int(kept.sum()) / n_out if n_out else None,
            "clip_token_frac": stats.clip_token_frac, "clip_seq_frac": stats.clip_seq_frac}  # fmt: skip


def preset_gap(logp: Tensor, old_logp: Tensor, adv: Tensor, mask: Tensor) -> dict[str, float]:
    """Per preset, the largest absolute difference between its design point and its registry objective on one batch
    (float64): the loss, −∂loss/∂logp at every token, and every ``clip/*`` statistic. 0 up to rounding."""
    out = {}
    for name, p in PRESETS.items():
        results = []
        for fn in (p.design, get_objective(p.objective)):
            leaf = logp.detach().to(torch.float64).requires_grad_(True)
            loss, stats = fn(leaf, old_logp.detach().to(torch.float64), adv.detach().to(torch.float64), mask)
            (grad,) = torch.autograd.grad(loss, leaf)
            clip = {k: v for k, v in stats.as_dict().items() if k.startswith("clip/")}
            results.append((loss.item(), grad, clip))
        (la, ga, ca), (lb, gb, cb) = results
        out[name] = max(abs(la - lb), float((ga - gb).abs().max()), *(abs(ca[k] - cb[k]) for k in ca))
    return out
