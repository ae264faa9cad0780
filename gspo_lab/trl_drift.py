"""The policy's drift from π_old, logged by TRL 1.16's GRPOTrainer: ``drift/kl_k3``, ``drift/kl_k1``,
``drift/outside_band_frac`` per optimizer step (issue 37).

What TRL 1.16 logs near it (trl/trainer/grpo_trainer.py of the installed 1.16.0; w = π_θ / π_old per token):

* ``kl`` (3267-3268): k3 of KL(π_θ‖π_ref) to the *reference* model (3097-3105), only when ``beta != 0``.
* ``clip_ratio/{low,high,region}_mean`` (3272-3279), hard-clip loss types only: the share of tokens whose clip binds
  for the sign of Â (w < 1 − ε_low with Â < 0; w > 1 + ε_high with Â > 0), over the completion mask at token level,
  over all B sequences at sequence level (``global_masked_mean``, 3259-3265). A token that drifted the other way
  (w > 1 + ε_high with Â < 0) is not counted; ``clip_ratio/low_min``, ``high_max`` (3280-3283) are per-sequence
  extremes of the same shares. ``cispo_clip_ratio`` (3284-3286): w > ε_high (an absolute cap) with Â > 0.
  ``vespo/phi_seq_mean`` (3287-3288): the mean Gamma weight φ of Π_t w. SAPO logs nothing.
* ``sampling/*`` (2860-2896): π_old against the vLLM sampler's log-probs, not π_θ against π_old.

None of them is a sign-blind measure of how far π_θ has moved from π_old. verl (core_algos.py,
``compute_policy_loss_*``) logs ``actor/ppo_kl`` = masked_mean(old − new log-prob) over the response tokens, a k1
estimate of KL(π_old‖π_θ) that can be negative; ``actor/pg_clipfrac``, the share of tokens where the clipped term
wins (Â-signed as TRL's; under CISPO, w outside the band whatever Â; 0 under SAPO); ``actor/pg_clipfrac_lower``,
dual-clip's share (Â < 0, w > clip_ratio_c; 0 under GSPO, CISPO, SAPO).

This module adds the kit's numbers (gspo_lab.metrics: ``kl/k3``, ``kl/k1``, ``clip/token_frac_outside``) to TRL's
logs, over the mask TRL's loss uses (``completion_mask`` × ``tool_mask``, 3027):

    drift/kl_k3            mean of w − 1 − log w   KL(π_old‖π_θ), k3 (Schulman 2020): >= 0, the kit's kl/k3
    drift/kl_k1            mean of −log w          the same KL, k1: verl's actor/ppo_kl (unclamped)
    drift/outside_band_frac  share with w outside [1 − ε_low, 1 + ε_high], any Â: the kit's clip/token_frac_outside

The hook: :class:`DriftLoggingMixin` overrides ``_compute_loss`` (3020), the one place where ``per_token_logps`` and
``old_per_token_logps`` meet, and calls TRL's unchanged; it overrides ``_get_per_token_logps_and_entropies`` (1419)
only to keep a detached reference to the log-probs that call returns inside ``_compute_loss`` (3030), so the drift is
read from the very tensors the loss used, with no second forward. The metrics are computed under ``no_grad`` after
the loss is built, from detached tensors, without RNG: the returned loss, its graph and the training trajectory are
TRL's bit for bit (tests/test_trl_drift.py). Metrics go to ``self._metrics[mode]`` as TRL's own (reduced across
processes like ``global_masked_mean``); ``log`` (3302-3311) averages them over the micro-batches of a logging window.

On-policy TRL skips π_old (``old_per_token_logps`` is None when ``gradient_accumulation_steps`` is a multiple of
``steps_per_generation × num_iterations`` and vLLM's correction is off, 2642-2657) and uses
``per_token_logps.detach()`` (3065-3066): w ≡ 1, so every drift metric is logged as exactly 0, by construction.

Shapes: B sequences, T tokens.
"""

from __future__ import annotations

import functools

import torch
from torch import Tensor

from gspo_lab.ratios import tok_log_ratio
from gspo_lab.reductions import masked_sum
from gspo_lab.validate import check_clip_range, check_float_tensor, check_mask, check_same_shape

__all__ = ["DRIFT_KEYS", "BAND_LOSS_TYPES", "drift_totals", "drift_metrics", "resolve_band", "DriftLoggingMixin"]

#: The keys this module appends to TRL's ``_metrics[mode]``, in :func:`drift_totals`' order.
DRIFT_KEYS = ("drift/kl_k3", "drift/kl_k1", "drift/outside_band_frac")
#: TRL 1.16's loss types whose ``[1 − epsilon_low, 1 + epsilon_high]`` is a band on the ratio (3112-3120).
BAND_LOSS_TYPES = ("grpo", "bnpo", "dr_grpo", "dapo", "luspo")


def k3_per_token(log_w: Tensor) -> Tensor:
    """k3 = w − 1 − log w at each token, from log w: (B, T) -> (B, T); expm1 keeps it exact near w = 1."""
    return torch.expm1(log_w) - log_w


@torch.no_grad()
def drift_totals(logp: Tensor, old_logp: Tensor, mask: Tensor, band: tuple[float, float]) -> Tensor:
    """Sums over valid tokens, for a mean across processes: (Σ k3, Σ k1, Σ outside, n valid tokens).

    Args:
        logp: (B, T) log π_θ of the sampled tokens; old_logp: (B, T) log π_old; anything (junk, ±inf) at padding.
        mask: (B, T) 0/1 or bool, 1 at the tokens TRL's loss counts.
        band: (ε_low, ε_high): the band [1 − ε_low, 1 + ε_high] on w.
    Returns:
        (4,) float64 (float32 on MPS, which has no float64).
    """
    check_float_tensor("logp", logp, 2)
    check_float_tensor("old_logp", old_logp, 2)
    check_same_shape("old_logp", old_logp, "logp", logp)
    eps_low, eps_high = check_clip_range(*band)
    valid = check_mask(mask, logp.shape)
    dt = torch.float32 if logp.device.type == "mps" else torch.float64
    log_w = tok_log_ratio(logp.detach().to(dt), old_logp.detach().to(dt), valid)  # 0 at padding
    tok_w = log_w.exp()
    outside = (tok_w < 1 - eps_low) | (tok_w > 1 + eps_high)
    sums = [masked_sum(x, valid, dim=None) for x in (k3_per_token(log_w), -log_w, outside.to(dt))]
    return torch.stack([*sums, valid.sum().to(dt)])


def drift_metrics(logp: Tensor, old_logp: Tensor, mask: Tensor, band: tuple[float, float]) -> dict[str, float]:
    """{key of :data:`DRIFT_KEYS`: mean over valid tokens}; 0 with no valid token. Arguments: :func:`drift_totals`."""
    return _means(drift_totals(logp, old_logp, mask, band))


def _means(totals: Tensor) -> dict[str, float]:
    return dict(zip(DRIFT_KEYS, (totals[:-1] / totals[-1].clamp(min=1)).tolist(), strict=True))


def resolve_band(
    band: tuple[float, float] | None, loss_type: str, level: str, epsilon_low: float, epsilon_high: float
) -> tuple[float, float]:
    """The band of ``drift/outside_band_frac``: ``band`` if given, else the trainer's (ε_low, ε_high) where TRL reads
    them as a band on the token ratio w (a hard-clip loss type at ``importance_sampling_level="token"``).

    Elsewhere the trainer's ε mean something else (CISPO: ε_high is an absolute cap, 3110; SAPO, VESPO: unused; at
    sequence level: a band on s_i, GSPO's ~700× narrower), and a silent default would log a number that reads like
    the kit's and is not: a ValueError asks for the band instead.
    """
    if band is not None:
        return check_clip_range(*band)
    if loss_type in BAND_LOSS_TYPES and level == "token":
        return check_clip_range(epsilon_low, epsilon_high)
    raise ValueError(
        f"drift_band: with loss_type={loss_type!r} at importance_sampling_level={level!r} TRL's epsilon_low/"
        f"epsilon_high ({epsilon_low}, {epsilon_high}) are not a band on the token ratio; pass drift_band="
        "(eps_low, eps_high) explicitly, e.g. (0.2, 0.27), GRPO's band (gspo_lab.GRPO_CLIP), the kit's reference"
    )


class DriftLoggingMixin:
    """Mix in before ``trl.GRPOTrainer`` (or a subclass of it): logs :data:`DRIFT_KEYS` from each ``_compute_loss``.

    ``drift_band``: (ε_low, ε_high) of ``drift/outside_band_frac``; None = the trainer's (:func:`resolve_band`).
    ``DriftLoggingGRPOTrainer`` (this module's attribute, built on first use) is ``(DriftLoggingMixin, GRPOTrainer)``.
    """

    def __init__(self, *args, drift_band: tuple[float, float] | None = None, **kwargs):
        self._drift_seen: list[Tensor] | None = None  # a list only while _compute_loss runs
        super().__init__(*args, **kwargs)
        self.drift_band = resolve_band(
            drift_band, self.loss_type, self.importance_sampling_level, self.epsilon_low, self.epsilon_high
        )

    def _get_per_token_logps_and_entropies(self, *args, **kwargs):
        out = super()._get_per_token_logps_and_entropies(*args, **kwargs)
        if self._drift_seen is not None:
            self._drift_seen.append(out[0].detach())  # a view: the loss's graph is untouched
        return out

    def _compute_loss(self, model, inputs):
        self._drift_seen = seen = []
        try:
            loss = super()._compute_loss(model, inputs)
        finally:
            self._drift_seen = None
        if len(seen) != 1:
            raise RuntimeError(
                f"{type(self).__name__}: _compute_loss computed its log-probs {len(seen)} times through the class's "
                "_get_per_token_logps_and_entropies (expected once, TRL 1.16's grpo_trainer.py:3030); was it replaced "
                "on the instance? Patch it on the class, so the drift is read from the log-probs the loss used"
            )
        self._log_drift(seen[0], inputs)
        return loss

    @torch.no_grad()
    def _log_drift(self, per_token_logps: Tensor, inputs: dict) -> None:
        mask = inputs["completion_mask"]
        if "tool_mask" in inputs:
            mask = mask * inputs["tool_mask"]
        old = inputs.get("old_per_token_logps")
        old = per_token_logps if old is None else old  # as TRL (3066): on-policy, w ≡ 1 and every drift is 0
        totals = self.accelerator.reduce(drift_totals(per_token_logps, old, mask, self.drift_band), reduction="sum")
        mode = "train" if self.model.training else "eval"
        for key, value in _means(totals).items():
            self._metrics[mode][key].append(value)


@functools.cache
def _grpo_trainer_class() -> type:
    from trl import GRPOTrainer  # lazily: importing gspo_lab never imports TRL

    doc = "TRL's GRPOTrainer that also logs drift/* (gspo_lab.trl_drift.DriftLoggingMixin)."
    return type("DriftLoggingGRPOTrainer", (DriftLoggingMixin, GRPOTrainer), {"__module__": __name__, "__doc__": doc})


def __getattr__(name: str):
    if name == "DriftLoggingGRPOTrainer":
        return _grpo_trainer_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
