"""The successors' and corrections' rows of the mutant table (tests/test_mutants.py): each check compares the kit with
TRL 1.16's own code on one seed of tests/test_trl_successors.py's inputs, and each mutant breaks one piece so the
comparison fails. CISPO's two variants, which TRL 1.16 does not have, are compared on the same inputs with a
transcription of verl's ``compute_policy_loss_cispo`` (cispo_clip) and with tests/test_cispo_variants.py's per-token
reference (cispo_mask).

TRL's side: ``GRPOTrainer._compute_loss`` on a bare object (no model, no accelerator: the recipe of
tests/test_trl_successors.py, whose real-trainer cases agree with it), ``GRPOTrainer.get_off_policy_mask`` (a
staticmethod), and for ρ — which TRL computes only with vLLM — a transcription of grpo_trainer.py:2660-2703.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections import defaultdict
from types import SimpleNamespace

import torch
from test_cispo_variants import reference as cispo_variant_reference
from test_trl_successors import _data, _fake_logps, _gmpo_trl, _OneProcess

import gspo_lab.corrections as corrections
import gspo_lab.objectives as objectives
from gspo_lab.ratios import tok_log_ratio
from gspo_lab.reductions import masked_mean

TOL = 1e-6


def _trl_loss(data, loss_type, level, eps, **args):
    """TRL 1.16's GRPOTrainer._compute_loss on a bare object: (loss, grad) for ``data``."""
    from trl import GRPOConfig, GRPOTrainer

    tr = object.__new__(GRPOTrainer)
    defaults = {f.name: f.default for f in dataclasses.fields(GRPOConfig) if f.default is not dataclasses.MISSING}
    tr.args = SimpleNamespace(**{**defaults, "steps_per_generation": 1, **args})
    tr.accelerator, tr.model = _OneProcess(), SimpleNamespace(training=True)
    tr._metrics = {"train": defaultdict(list), "eval": defaultdict(list)}
    tr.loss_type, tr.importance_sampling_level, tr.beta = loss_type, level, 0.0
    tr.epsilon_low, tr.epsilon_high = eps if eps is not None else (0.2, 0.2)
    tr.current_gradient_accumulation_steps, tr.max_completion_length = 1, 16
    tr.top_entropy_quantile, tr.off_policy_mask_threshold = 1.0, None
    tr.use_vllm = tr.vllm_importance_sampling_correction = False
    tr.aux_loss_enabled = tr._entropy_bonus_enabled = False
    logp = data["logp"].clone().requires_grad_(True)
    tr._get_per_token_logps_and_entropies = _fake_logps(logp)
    inputs = {k: v for k, v in data.items() if k not in ("logp", "sampling_per_token_logps")}
    loss = tr._compute_loss(tr.model, inputs)
    return loss.detach(), torch.autograd.grad(loss, logp)[0]


def _ours(name, data, eps):
    logp = data["logp"].clone().requires_grad_(True)
    kw = dict(eps_low=eps[0], eps_high=eps[1]) if eps is not None else {}
    loss, _ = objectives.get_objective(name)(
        logp, data["old_per_token_logps"], data["advantages"], data["completion_mask"], **kw
    )
    return loss.detach(), torch.autograd.grad(loss, logp)[0]


def _agree(a, b) -> bool:
    return bool((a[0] - b[0]).abs() <= TOL and (a[1] - b[1]).abs().max() <= TOL)


#: objective -> (TRL loss_type, level, ε) of its agreement check
TRL_SETTING = {
    "cispo": ("cispo", "token", (0.2, 1.2)),
    "sapo": ("sapo", "token", None),
    "luspo": ("luspo", "sequence", (2e-3, 2.5e-3)),
    "vespo": ("vespo", "token", None),
}


def objective_agrees(name: str):
    def check(patched: bool) -> bool:
        data = _data(0)
        if name == "gmpo":
            empty = data["completion_mask"].sum(-1) == 0
            data["advantages"] = data["advantages"].where(~empty, torch.zeros((), dtype=torch.float64))
            return _agree(_ours("gmpo", data, (0.4, 0.4)), _gmpo_trl(data, (0.4, 0.4))[:2])
        loss_type, level, eps = TRL_SETTING[name]
        return _agree(_ours(name, data, eps), _trl_loss(data, loss_type, level, eps))

    return check


def verl_cispo(old, logp, adv, mask, clip_ratio_low, clip_ratio_high):
    """A transcription of verl b178a3c ``compute_policy_loss_cispo`` (verl/trainer/ppo/core_algos.py:1743-1769) with
    ``loss_agg_mode="token-mean"`` on one process and no rollout IS weights: (loss, pg_clipfrac)."""
    negative_approx_kl = torch.clamp(logp - old, min=-20.0, max=20.0)
    ratio = torch.exp(negative_approx_kl)
    clipped_ratio = torch.clamp(ratio, 1 - clip_ratio_low, 1 + clip_ratio_high)
    pg_losses = -clipped_ratio.detach() * adv.unsqueeze(-1) * logp
    # verl_F.masked_mean / masked_sum (verl/utils/torch_functional.py:266-301), agg_loss token-mean (core_algos.py:1058)
    pg_clipfrac = torch.where(mask.bool(), (ratio != clipped_ratio).float(), 0.0).sum() / (mask.sum() + 1e-8)
    return (torch.where(mask.bool(), pg_losses, 0.0) * mask).sum() / mask.sum(), pg_clipfrac


def cispo_clip_agrees(patched: bool) -> bool:
    data = _data(0)
    old, adv, mask = data["old_per_token_logps"], data["advantages"], data["completion_mask"]
    eps = objectives.CISPO_CLIP.low, objectives.CISPO_CLIP.high
    logp = data["logp"].clone().requires_grad_(True)
    loss, stats = objectives.get_objective("cispo_clip")(logp, old, adv, mask)
    theirs_logp = data["logp"].clone().requires_grad_(True)
    theirs, clipfrac = verl_cispo(old, theirs_logp, adv, mask, *eps)
    same_frac = abs(stats.clip_token_frac_outside - clipfrac.item()) <= TOL
    return same_frac and _agree((loss.detach(), torch.autograd.grad(loss, logp)[0]),
                                (theirs.detach(), torch.autograd.grad(theirs, theirs_logp)[0]))  # fmt: skip


def cispo_mask_agrees(patched: bool) -> bool:
    data = _data(0)
    old, adv, mask = data["old_per_token_logps"], data["advantages"], data["completion_mask"]
    clip = objectives.GRPO_CLIP
    ours = _ours("cispo_mask", data, (clip.low, clip.high))
    loss, grad = cispo_variant_reference("cispo_mask", data["logp"], old, adv, mask, eps_low=clip.low,
                                         eps_high=clip.high)  # fmt: skip
    return _agree(ours, (torch.tensor(loss, dtype=torch.float64), grad))


# --- broken pieces ------------------------------------------------------------------------------------------------


def cispo_clip_one_sided(original):
    """cispo_clip without its floor: TRL's one-sided cap at 1 + ε_high."""
    return dataclasses.replace(original, fn=lambda *a, eps_low, eps_high, **k: objectives.cispo(
        *a, eps_low=eps_low, eps_high=1 + eps_high, **k))  # fmt: skip


def cispo_mask_never_zeroes(original):
    """cispo_mask with a mask that keeps every token: cispo's capped weight alone."""
    return dataclasses.replace(original, fn=lambda *a, eps_low, eps_high, cap=objectives.CISPO_CAP.high, **k: (
        objectives.cispo(*a, eps_low=eps_low, eps_high=cap, **k)))  # fmt: skip


def cispo_cap_as_one_plus_eps(original):
    """CISPO with ε_high read as 1 + ε (verl's two-sided reading) instead of TRL's absolute cap."""
    return dataclasses.replace(original, fn=lambda *a, eps_low, eps_high, **k: objectives.cispo(
        *a, eps_low=eps_low, eps_high=1 + eps_high, **k))  # fmt: skip


def sapo_temperatures_swapped(original):
    return dataclasses.replace(original, fn=functools.partial(objectives.sapo, tau_pos=1.05, tau_neg=1.0))


def luspo_without_length_weight(original):
    """LUSPO's |y_i| weighting dropped: GSPO."""
    return dataclasses.replace(original, fn=functools.partial(objectives.gspo))


def gamma_weights_of_the_mean(original):
    """VESPO's W as GSPO's geometric mean (mean log-ratio) instead of the product ratio (sum)."""

    def broken(log_w, adv, mask, log_rho=None, shape=objectives.VESPO_SHAPE):
        lengths = mask.sum(-1, keepdim=True).clamp(min=1).to(log_w.dtype)
        return original(log_w / lengths, adv, mask, log_rho, shape)

    return broken


def gmpo_plain_clamp(original):
    """GMPO clipping every log-ratio to the band whatever the sign of Â (no pessimistic min/max)."""

    def broken(logp, old_logp, adv, mask, *, eps_low, eps_high, **_):
        mask = mask.bool()
        log_w = tok_log_ratio(logp, old_logp, mask)
        coef = masked_mean(log_w.clamp(-eps_low, eps_high), mask, dim=-1).exp()
        return -(coef * adv).where(mask.any(-1), torch.zeros((), dtype=logp.dtype)).mean(), None

    return dataclasses.replace(original, fn=broken)


# --- the corrections ----------------------------------------------------------------------------------------------

BOUNDS = {"token": (0.96, 1.04), "sequence": (0.85, 1.15)}


def trl_rho(old, samp, mask, mode, lo, hi):
    """A transcription of TRL 1.16 grpo_trainer.py:2660-2703 (exp, then clamp or masked_fill)."""
    diff = torch.nan_to_num((old - samp) * mask, nan=0.0)
    diff = diff.sum(-1, keepdim=True) if mode.startswith("sequence") else diff
    rho = torch.exp(diff)
    if mode.endswith("truncate"):
        return torch.clamp(rho, min=lo, max=hi)
    return rho.masked_fill((rho < (lo if lo is not None else -math.inf)) | (rho > hi), 0.0)


def rho_agrees(mode: str):
    def check(patched: bool) -> bool:
        data = _data(0)
        args = (data["old_per_token_logps"], data["sampling_per_token_logps"], data["completion_mask"], mode,
                *BOUNDS[mode.split("_")[0]])  # fmt: skip
        ours, theirs = corrections.sampler_ratio(*args), trl_rho(*args)
        return ours.shape == theirs.shape and bool(torch.allclose(ours, theirs, rtol=1e-12, atol=1e-12))

    return check


def rho_untruncated(original):
    return lambda old, samp, mask, mode, lo=None, hi=3.0: original(old, samp, mask, mode, None, 1e30)


def rho_mask_as_truncate(original):
    return lambda old, samp, mask, mode, lo=None, hi=3.0: original(old, samp, mask, mode.replace("mask", "truncate"),
                                                                    lo, hi)  # fmt: skip


def rho_sequence_as_geometric_mean(original):
    """The sequence ratio as GSPO's geometric mean (mean log) instead of TRL's product."""

    def broken(old, samp, mask, mode, lo=None, hi=3.0):
        n = mask.sum(-1, keepdim=True).clamp(min=1)
        rho = original(old / n, samp / n, mask, mode, None, 1e30)
        return rho.clamp(lo, hi)

    return broken


def rho_sequence_mask_per_token(original):
    return lambda old, samp, mask, mode, lo=None, hi=3.0: original(old, samp, mask, "token_mask", lo, hi)


def opsm_agrees(patched: bool) -> bool:
    from trl import GRPOTrainer

    data = _data(0)
    adv, mask = data["advantages"], data["completion_mask"]
    ours = corrections.off_policy_keep(adv, data["logp"], data["sampling_per_token_logps"], mask, 0.0)
    theirs = GRPOTrainer.get_off_policy_mask(adv.unsqueeze(1), data["logp"], data["sampling_per_token_logps"], mask,
                                             0.0).squeeze(1)  # fmt: skip
    return bool(torch.equal(ours, theirs.to(ours.dtype)))


def opsm_ignores_the_sign(original):
    """OPSM dropping every high-KL response, whatever the sign of Â (verl's rollout_rs reading)."""
    return lambda adv, logp, samp, mask, threshold: original(-adv.abs() - 1, logp, samp, mask, threshold)


def nb03_soft_weights_never_zero(patched: bool) -> bool:
    """Notebook 03's claim, by its library call: CISPO's, SAPO's and VESPO's weights are > 0 on log w ∈ [−2, 2]."""
    from gspo_lab.gradients import trust_region_weights

    profiles = trust_region_weights([-2.0, 0.0, 1.0, 2.0])
    grpo = profiles.query("objective == 'grpo' and advantage == 'Â > 0' and log_ratio == 2.0")["weight"]
    soft = profiles[profiles["objective"].isin(["cispo", "sapo", "vespo"])]["weight"]
    return bool((grpo == 0).all() and soft.min() > 0)


def sapo_as_hard_clip(original):
    """SAPO's gate replaced by GRPO's hard clip."""
    return dataclasses.replace(original, fn=lambda *a, **k: objectives.grpo(*a, eps_low=0.2, eps_high=0.27, **k))


#: (claim, computes, target, replacement, mutant, check) — rows of tests/test_mutants.py's table
ROWS = [
    ("identity: cispo ≡ TRL loss_type='cispo'", "objectives.cispo vs TRL _compute_loss (bare), seed 0",
     "gspo_lab.objectives.OBJECTIVES['cispo']", cispo_cap_as_one_plus_eps, "ε_max read as 1 + ε_high",
     objective_agrees("cispo")),
    ("identity: cispo_clip ≡ verl compute_policy_loss_cispo", "objectives.cispo_clip vs a transcription of verl "
     "core_algos.py:1743-1769 (token-mean), seed 0", "gspo_lab.objectives.OBJECTIVES['cispo_clip']",
     cispo_clip_one_sided, "the floor 1 − ε_low dropped (TRL's one-sided cap)", cispo_clip_agrees),
    ("identity: cispo_mask ≡ MiniMax-M1 §3.1 masked CISPO", "objectives.cispo_mask vs the per-token reference of "
     "tests/test_cispo_variants.py, seed 0", "gspo_lab.objectives.OBJECTIVES['cispo_mask']", cispo_mask_never_zeroes,
     "a mask that never zeroes (cispo's weight alone)", cispo_mask_agrees),
    ("identity: sapo ≡ TRL loss_type='sapo'", "objectives.sapo vs TRL _compute_loss (bare), seed 0",
     "gspo_lab.objectives.OBJECTIVES['sapo']", sapo_temperatures_swapped, "τ₊ and τ₋ swapped",
     objective_agrees("sapo")),
    ("identity: luspo ≡ TRL loss_type='luspo' (sequence)", "objectives.luspo vs TRL _compute_loss (bare), seed 0",
     "gspo_lab.objectives.OBJECTIVES['luspo']", luspo_without_length_weight, "the |y_i| weight dropped (GSPO)",
     objective_agrees("luspo")),
    ("identity: vespo ≡ TRL loss_type='vespo'", "objectives.vespo vs TRL _compute_loss (bare), seed 0",
     "gspo_lab.objectives.soft.gamma_weights", gamma_weights_of_the_mean, "W as the geometric mean, not the product",
     objective_agrees("vespo")),
    ("identity: gmpo ≡ TRL GMPOTrainer (experimental)", "objectives.gmpo vs GMPOTrainer._compute_loss (bare), seed 0",
     "gspo_lab.objectives.OBJECTIVES['gmpo']", gmpo_plain_clamp, "a plain clamp, not the sign-aware min/max",
     objective_agrees("gmpo")),
    ("identity: ρ token_truncate ≡ TRL", "corrections.sampler_ratio vs grpo_trainer.py:2660-2703",
     "gspo_lab.corrections.sampler_ratio", rho_untruncated, "no truncation", rho_agrees("token_truncate")),
    ("identity: ρ token_mask ≡ TRL", "corrections.sampler_ratio vs grpo_trainer.py:2660-2703",
     "gspo_lab.corrections.sampler_ratio", rho_mask_as_truncate, "masked tokens truncated, not zeroed",
     rho_agrees("token_mask")),
    ("identity: ρ sequence_truncate ≡ TRL", "corrections.sampler_ratio vs grpo_trainer.py:2660-2703",
     "gspo_lab.corrections.sampler_ratio", rho_sequence_as_geometric_mean, "a geometric mean, not the product",
     rho_agrees("sequence_truncate")),
    ("identity: ρ sequence_mask ≡ TRL", "corrections.sampler_ratio vs grpo_trainer.py:2660-2703",
     "gspo_lab.corrections.sampler_ratio", rho_sequence_mask_per_token, "each token masked on its own",
     rho_agrees("sequence_mask")),
    ("identity: OPSM ≡ TRL get_off_policy_mask", "corrections.off_policy_keep vs GRPOTrainer.get_off_policy_mask",
     "gspo_lab.corrections.off_policy_keep", opsm_ignores_the_sign, "the sign of Â ignored", opsm_agrees),
    ("03:soft_weights_never_zero", "gradients.trust_region_weights on log w ∈ {−2, 0, 1, 2}",
     "gspo_lab.objectives.OBJECTIVES['sapo']", sapo_as_hard_clip, "SAPO's gate replaced by a hard clip",
     nb03_soft_weights_never_zero),
]  # fmt: skip
