"""Policy objectives with one signature and one registry: GRPO and GSPO (arXiv 2507.18071) and their successors.

Every objective is a pure function

    fn(logp, old_logp, adv, mask, *, eps_low, eps_high, sampler_ratio=None, seq_keep=None, **extra) -> (loss, stats)

with ``loss = −J`` (a scalar to *minimise*) and detached statistics (see :mod:`gspo_lab.metrics`). Look one up by
name with :func:`get_objective`; adding an objective is one function plus one :data:`OBJECTIVES` entry.

One room per family (each module's docstring says what its members share):

=====================================  ===================================================================
``gspo_lab/objectives/clipped_token``  one ratio and one hard clip per token: grpo, grpo_token_mean (DAPO),
                                       grpo_const_norm (Dr. GRPO), grpo_dual_clip
``gspo_lab/objectives/sequence``       one length-normalised ratio per response: gspo, gspo_token,
                                       gspo_token_mean (the pitfall), luspo, gmpo
``gspo_lab/objectives/soft``           soft gates and caps: cispo, sapo, vespo; CISPO's variants cispo_clip
                                       (two-sided clip, verl) and cispo_mask (MiniMax-M1's token mask)
``gspo_lab/objectives/core``           clip ranges with their sources, argument checks, the clipped surrogate
=====================================  ===================================================================

Shapes: B sequences (B = n_groups · G), T tokens.
    logp, old_logp: (B, T) log-probabilities of the sampled tokens under π_θ and π_old (any float dtype);
    adv: (B,) one Â_i per response, or (B, T) per token where the objective allows it;
    mask: (B, T) 0/1 or bool, 1 at response tokens;
    sampler_ratio: None, or the sampler–trainer correction ρ = π_old / π_sampler, (B, T) or (B, 1)
        (:mod:`gspo_lab.corrections`); seq_keep: None, or (B,) 0/1 (off-policy sequence masking).

Clip ranges are per objective and carry their source (:data:`GSPO_CLIP` is ~700x narrower than
:data:`GRPO_CLIP`; a shared ε would make GSPO clip nothing or GRPO clip everything). SAPO and VESPO have none.

Deviations from the papers, declared:
    1. The KL penalty is left out (β = 0), as in the paper's equations and TRL's/verl's GSPO recipes.
    2. A response with no valid token contributes 0 to the loss and still counts in the 1/B of the mean over
       responses (TRL's convention; verl drops it from the denominator; TRL's GMPO counts it as −Â_i).
    3. Math runs in float32 at least (float64 stays float64): bf16/fp16 log-probs are upcast first. In float32,
       |log-ratio| up to ~80 stays finite in value and gradient (SAPO and VESPO clamp at ±20).
    4. No dual-clip, no truncation of the unclipped ratio (TRL's ``delta``), no log-ratio clamp (verl clamps the
       GSPO log-ratio at 10) in the paper's objectives: none of them is in the paper. Dual-clip exists as its own
       objective, :func:`grpo_dual_clip`, to test where GRPO's large updates come from (findings, 2e).
    5. A sampler correction multiplies each token's term before the aggregation, whose token counts stay those of
       ``mask`` (TRL's order, grpo_trainer.py:3140-3147); VESPO folds a token-level ρ into its weight instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from torch import Tensor

from gspo_lab.metrics import ObjectiveStats
from gspo_lab.objectives.clipped_token import grpo, grpo_const_norm, grpo_dual_clip, grpo_token_mean
from gspo_lab.objectives.core import (
    CISPO_CAP,
    CISPO_CLIP,
    DAPO_CLIP,
    DUAL_CLIP_C,
    GMPO_CLIP,
    GRPO_CLIP,
    GSPO_CLIP,
    LUSPO_CLIP,
    PPO_CLIP,
    ClipRange,
)
from gspo_lab.objectives.sequence import gmpo, gspo, gspo_token, gspo_token_mean, luspo
from gspo_lab.objectives.soft import SAPO_TAU, VESPO_SHAPE, cispo, cispo_clip, cispo_mask, gamma_weights, sapo, vespo

__all__ = [
    "ClipRange",
    "GRPO_CLIP",
    "GSPO_CLIP",
    "DAPO_CLIP",
    "PPO_CLIP",
    "LUSPO_CLIP",
    "CISPO_CAP",
    "CISPO_CLIP",
    "GMPO_CLIP",
    "SAPO_TAU",
    "VESPO_SHAPE",
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
    "luspo",
    "gmpo",
    "cispo",
    "cispo_clip",
    "cispo_mask",
    "sapo",
    "vespo",
    "gamma_weights",
    "DUAL_CLIP_C",
]


class Objective(Protocol):
    def __call__(
        self, logp: Tensor, old_logp: Tensor, adv: Tensor, mask: Tensor, *, eps_low: float, eps_high: float
    ) -> tuple[Tensor, ObjectiveStats]: ...


@dataclass(frozen=True)
class ObjectiveSpec:
    """A registry entry: the function, its clip defaults, and what it is, for tables and plots."""

    name: str
    fn: Objective
    clip: ClipRange | None  # None: the objective has no ε (SAPO, VESPO)
    ratio: str  # which ratio weighs the gradient: "token" | "sequence" | "gspo-token" | "sequence-product"
    aggregation: str  # the named reduction in gspo_lab.reductions
    reference: str
    budget_kw: str | None = None  # keyword that takes the response budget (a constant length normaliser), if any
    per_token_adv: bool = False  # accepts (B, T) advantages as well as (B,)
    # how it bounds an update: "hard clip" | "cap" | "two-sided cap" | "cap + mask" | "soft gate" | "smooth weight"
    trust_region: str = "hard clip"
    trl: str = ""  # the TRL 1.16 setting that computes the same loss ("" = none)

    def __call__(self, logp, old_logp, adv, mask, *, budget: int | None = None, **kwargs):
        """Call the objective with this entry's clip defaults unless ``eps_low`` / ``eps_high`` are given.

        ``budget``: the response budget (max new tokens) of the batch; passed on as ``budget_kw`` to objectives with
        a constant length normaliser, ignored by the others (their normalisation does not depend on it).
        """
        if self.clip is not None:
            kwargs.setdefault("eps_low", self.clip.low)
            kwargs.setdefault("eps_high", self.clip.high)
        if self.budget_kw is not None and budget is not None:
            kwargs.setdefault(self.budget_kw, budget)
        return self.fn(logp, old_logp, adv, mask, **kwargs)


def _entry(name, fn, clip, ratio, aggregation, reference, **kw) -> ObjectiveSpec:
    return ObjectiveSpec(name, fn, clip, ratio, aggregation, reference, **kw)


OBJECTIVES: dict[str, ObjectiveSpec] = {
    spec.name: spec
    for spec in (
        _entry("grpo", grpo, GRPO_CLIP, "token", "seq_mean_token_mean", "GSPO paper Eq. 2",
               trl='loss_type="grpo"'),
        _entry("gspo", gspo, GSPO_CLIP, "sequence", "seq_mean", "GSPO paper Eqs. 5, 7",
               trl='loss_type="grpo", importance_sampling_level="sequence"'),
        _entry("gspo_token", gspo_token, GSPO_CLIP, "gspo-token", "seq_mean_token_mean", "GSPO Eqs. 13-14",
               per_token_adv=True, trl='as gspo (verl "gspo")'),
        _entry("grpo_token_mean", grpo_token_mean, DAPO_CLIP, "token", "token_mean", "DAPO §3.3", per_token_adv=True,
               trl='loss_type="bnpo"'),
        _entry("grpo_const_norm", grpo_const_norm, PPO_CLIP, "token", "seq_mean_token_sum_norm", "Dr. GRPO §3.2",
               budget_kw="norm_len", trl='loss_type="dr_grpo"'),
        _entry("gspo_token_mean", gspo_token_mean, GSPO_CLIP, "sequence", "token_mean", "pitfall demo",
               trl='loss_type="bnpo", importance_sampling_level="sequence"'),
        _entry("grpo_dual_clip", grpo_dual_clip, GRPO_CLIP, "token", "seq_mean_token_mean",
               "Eq. 2 + dual-clip (verl clip_ratio_c)", trl='loss_type="grpo", delta=c'),
        _entry("luspo", luspo, LUSPO_CLIP, "sequence", "seq_mean_token_sum", "LUSPO (arXiv 2602.05261)",
               trl='loss_type="luspo", importance_sampling_level="sequence"'),
        _entry("gmpo", gmpo, GMPO_CLIP, "sequence", "seq_mean", "GMPO (arXiv 2507.20673)",
               trl="trl.experimental.gmpo.GMPOTrainer (experimental)"),
        _entry("cispo", cispo, CISPO_CAP, "token", "token_mean", "MiniMax-M1 CISPO (arXiv 2506.13585)",
               trust_region="cap", trl='loss_type="cispo", epsilon_high=5.0'),
        _entry("cispo_clip", cispo_clip, CISPO_CLIP, "token", "token_mean",
               "MiniMax-M1 Eq. 5 as verl's cispo: sg[clip(r, 1 − ε_low, 1 + ε_high)] (not in TRL 1.16)",
               per_token_adv=True, trust_region="two-sided cap", trl=""),
        _entry("cispo_mask", cispo_mask, GRPO_CLIP, "token", "token_mean",
               "MiniMax-M1 §3.1 token mask M on TRL's cispo weight, GRPO's band (not in TRL 1.16)",
               per_token_adv=True, trust_region="cap + mask", trl=""),
        _entry("sapo", sapo, None, "token", "seq_mean_token_mean", "SAPO (arXiv 2511.20347)",
               trust_region="soft gate", trl='loss_type="sapo"'),
        _entry("vespo", vespo, None, "sequence-product", "token_mean", "VESPO (arXiv 2602.10693)",
               trust_region="smooth weight", trl='loss_type="vespo"'),
    )
}  # fmt: skip


def get_objective(name: str) -> ObjectiveSpec:
    """The registry entry for ``name``; a ValueError lists the valid names."""
    try:
        return OBJECTIVES[name]
    except KeyError:
        raise ValueError(f"objective must be one of {sorted(OBJECTIVES)}, got {name!r}") from None
