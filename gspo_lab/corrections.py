"""Sampler–trainer corrections: the importance ratio between the trainer's π_old and the sampler's own log-probs
(truncated or masked, per token or per sequence), and off-policy sequence masking (OPSM).

The sampler (the inference engine) and the trainer score the same tokens with different arithmetic — bf16 against
fp32 here, vLLM's kernels against the training forward in production — so π_old recomputed by the trainer is not the
distribution the responses were drawn from. TRL 1.16 corrects for it by multiplying every token's loss by

    ρ = π_old / π_sampler,    per token: exp(log π_old − log π_sampler);  per sequence: exp(Σ_t (…)), a *product*,

truncated to [clip_min, clip_max] (TIS: ``*_truncate``) or set to 0 outside it (MIS / IcePop: ``*_mask``)
(``vllm_importance_sampling_mode``, grpo_trainer.py:2659-2707; applied at 3146-3147). TRL computes ρ only with vLLM;
this module re-implements it from that code, and tests/test_trl_successors.py checks the multiplication inside TRL's
real ``_compute_loss`` with the ρ computed here. OPSM (DeepSeek-V3.2, arXiv 2512.02556; TRL
``off_policy_mask_threshold``, grpo_trainer.py:2945-2968) drops a whole response whose Â < 0 when its mean
log(π_sampler / π_θ) exceeds δ.

Geometric variants (issue 50, item 3), not in TRL: ``sequence_geo_mask`` is SkyRL's geometric sequence mask
(``off_policy_correction.sequence_mask_metric = "geometric"``, skyrl ``compute_sequence_mask``): the response's
*geometric mean* ratio exp(mean_t log ρ_t) against [clip_min, clip_max], a 0/1 factor (SkyRL multiplies its loss mask,
no importance weight), default bounds :data:`SKYRL_GEO_BOUNDS`; ``sequence_geo_truncate`` clamps that geometric mean
into the bounds and weighs the response by it, the geometric twin of ``sequence_truncate``. A product ρ grows with
the response's length for the same per-token drift; the geometric mean does not.

Deviations from TRL, declared:
    1. ``clip_max`` must be a finite number > 0 in every mode (TRL allows None for the mask modes, where an
       overflowing ρ then stays inf); TRL's default is 3.0. ρ is computed in log space: exp(clamp(log ρ)) for the
       truncate modes (TRL: clamp(exp(log ρ)); equal up to rounding), so a long divergent response never gives inf.
    2. OPSM reads the sampler's own log-probs; TRL reads vLLM's when generation returned them, else π_old (3073).

Shapes: B sequences, T tokens; log-probs (B, T), mask (B, T) bool, adv (B,).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from gspo_lab.reductions import masked_mean
from gspo_lab.validate import check_finite, check_float_tensor, check_mask, check_same_shape

__all__ = [
    "MODES",
    "GEO_MODES",
    "IS_CLIP_MAX",
    "SKYRL_GEO_BOUNDS",
    "check_correction",
    "sampler_ratio",
    "off_policy_keep",
    "correction_stats",
    "masked_by_length",
    "masked_at_length",
]

#: TRL 1.16's ``vllm_importance_sampling_mode`` values (grpo_config.py:934); TRL's default is "sequence_mask"
MODES = ("token_truncate", "token_mask", "sequence_truncate", "sequence_mask")
#: the geometric variants (module docstring); not TRL's
GEO_MODES = ("sequence_geo_truncate", "sequence_geo_mask")
#: TRL 1.16's ``vllm_importance_sampling_clip_max`` default (grpo_config.py:947)
IS_CLIP_MAX = 3.0
#: SkyRL's ``geo_mask_low`` / ``geo_mask_high`` defaults (skyrl OffPolicyCorrectionConfig, commit a956457): "recommended
#: ~0.99-1.01; MoE models may need a wider range"
SKYRL_GEO_BOUNDS = (0.99, 1.01)


def check_correction(mode: str, clip_min: float | None, clip_max: float) -> None:
    """A valid mode and bounds: 0 < clip_min < clip_max < ∞ (clip_min None = no lower bound)."""
    if mode not in MODES + GEO_MODES:
        raise ValueError(f"mode must be one of {MODES} (TRL's vllm_importance_sampling_mode) or {GEO_MODES}, got "
                         f"{mode!r}")  # fmt: skip
    if isinstance(clip_max, bool) or not isinstance(clip_max, (int, float)) or not (0 < clip_max < math.inf):
        raise ValueError(f"clip_max must be a finite number > 0 (TRL's default {IS_CLIP_MAX}), got {clip_max!r}")
    if clip_min is not None and (
        isinstance(clip_min, bool) or not isinstance(clip_min, (int, float)) or not (0 < clip_min < clip_max)
    ):
        raise ValueError(f"clip_min must be None or a number in (0, clip_max = {clip_max}), got {clip_min!r}")


@torch.no_grad()
def sampler_ratio(
    old_logp: Tensor, sampler_logp: Tensor, mask: Tensor, mode: str, clip_min: float | None = None,
    clip_max: float = IS_CLIP_MAX,
) -> Tensor:  # fmt: skip
    """ρ = π_old / π_sampler after truncation or masking, detached: (B, T) for ``token_*``, (B, 1) for ``sequence_*``.

    TRL 1.16 grpo_trainer.py:2660-2703: log ρ = (log π_old − log π_sampler)·m per token (NaN → 0: a token the sampler
    could not score gets ρ = 1), summed over the response for the sequence modes; ``*_truncate`` clamps ρ to
    [clip_min, clip_max], ``*_mask`` sets ρ to 0 where it lies outside. Padding has ρ = 1 (token modes).
    """
    check_correction(mode, clip_min, clip_max)
    check_float_tensor("old_logp", old_logp, 2)
    check_float_tensor("sampler_logp", sampler_logp, 2)
    check_same_shape("sampler_logp", sampler_logp, "old_logp", old_logp)
    mask = check_mask(mask, old_logp.shape)
    check_finite("old_logp", old_logp, mask)
    log_rho, outside = _log_rho(old_logp, sampler_logp, mask, mode, clip_min, clip_max)
    if mode.endswith("truncate"):
        return log_rho.clamp(-math.inf if clip_min is None else math.log(clip_min), math.log(clip_max)).exp()
    if mode == "sequence_geo_mask":  # SkyRL's: a 0/1 factor, no weight
        return (~outside).to(log_rho.dtype)
    return log_rho.clamp(max=math.log(clip_max)).exp().masked_fill(outside, 0.0)


def _log_rho(old_logp, sampler_logp, mask, mode, clip_min, clip_max) -> tuple[Tensor, Tensor]:
    """(log ρ before truncation or masking, where it lies outside [clip_min, clip_max]): (B, T) per token, (B, 1)
    per sequence (a sum over the response); NaN differences (unscored tokens) and padding count 0."""
    dtype = torch.float64 if torch.float64 in (old_logp.dtype, sampler_logp.dtype) else torch.float32
    diff = old_logp.to(dtype) - sampler_logp.to(dtype)
    diff = torch.nan_to_num(diff, nan=0.0).where(mask, diff.new_zeros(()))
    if mode in GEO_MODES:  # the geometric mean over valid tokens, the length clamped to >= 1 (SkyRL's)
        log_rho = diff.sum(-1, keepdim=True) / mask.sum(-1, keepdim=True).clamp(min=1).to(dtype)
    else:
        log_rho = diff.sum(-1, keepdim=True) if mode.startswith("sequence") else diff
    log_min = -math.inf if clip_min is None else math.log(clip_min)
    return log_rho, (log_rho < log_min) | (log_rho > math.log(clip_max))


@torch.no_grad()
def off_policy_keep(adv: Tensor, logp: Tensor, sampler_logp: Tensor, mask: Tensor, threshold: float) -> Tensor:
    """OPSM's keep mask (B,): 1 where Â_i >= 0 or mean_t (log π_sampler − sg[log π_θ]) <= δ, else 0.

    TRL 1.16 ``GRPOTrainer.get_off_policy_mask`` (grpo_trainer.py:2945-2968): both conditions inclusive, the mean over
    valid tokens with the length clamped to >= 1, NaN log-probs (unscored) count 0. ``threshold``: δ (TRL's help
    suggests 0.5). adv: (B,); logp, sampler_logp: (B, T); mask: (B, T).
    """
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not math.isfinite(threshold):
        raise ValueError(f"threshold must be a finite number (OPSM's δ; TRL suggests 0.5), got {threshold!r}")
    check_float_tensor("adv", adv, 1)
    check_same_shape("sampler_logp", sampler_logp, "logp", logp)
    mask = check_mask(mask, logp.shape)
    if adv.shape[0] != logp.shape[0]:
        raise ValueError(f"adv must have shape (B,) = ({logp.shape[0]},), got {tuple(adv.shape)}")
    kl = torch.nan_to_num(sampler_logp.detach() - logp.detach(), nan=0.0)
    avg_kl = masked_mean(kl, mask, dim=-1)
    return ((adv >= 0) | (avg_kl <= threshold)).to(logp.dtype)


@torch.no_grad()
def correction_stats(
    rho: Tensor | None, keep: Tensor | None, old_logp: Tensor, sampler_logp: Tensor, mask: Tensor, mode: str | None,
    clip_min: float | None = None, clip_max: float = IS_CLIP_MAX,
) -> dict[str, float]:  # fmt: skip
    """The ``correction/*`` metrics of one minibatch (keys in :data:`gspo_lab.metrics.CATALOGUE`)."""
    mask = check_mask(mask, old_logp.shape)
    out = {}
    diff = (old_logp.double() - sampler_logp.double()).nan_to_num(nan=0.0)
    out["correction/logp_diff_mean"] = masked_mean(diff.abs(), mask, dim=None).item()
    if rho is not None:
        rho_tok = rho.double().expand(mask.shape)
        _, outside = _log_rho(old_logp.double(), sampler_logp.double(), mask, mode, clip_min, clip_max)
        outside = mask & outside.expand(mask.shape)
        masked = outside if mode.endswith("mask") else torch.zeros_like(outside)
        out["correction/rho_mean"] = masked_mean(rho_tok, mask, dim=None).item()
        out["correction/masked_frac"] = masked_mean(masked.double(), mask, dim=None).item()
        out["correction/truncated_frac"] = masked_mean((outside & ~masked).double(), mask, dim=None).item()
    if keep is not None:
        out["correction/opsm_dropped_frac"] = (1 - keep.double()).mean().item()
    return out


@torch.no_grad()
def masked_by_length(old_logp: Tensor, sampler_logp: Tensor, mask: Tensor, modes: dict, edges) -> list[dict]:
    """The share of responses each sequence mask drops, per response-length bin: the length bias of a product mask.

    ``modes``: {name: (mode, clip_min, clip_max)} of ``sequence_mask`` / ``sequence_geo_mask``; ``edges``: ascending
    bin edges in tokens, a response of length n in the bin [edges[j], edges[j + 1]). Returns one row per (bin, name):
    ``{"bin", "name", "responses", "masked"}`` (``masked`` None for an empty bin)."""
    mask = check_mask(mask, old_logp.shape)
    lengths = mask.sum(-1)
    dropped = {n: sampler_ratio(old_logp, sampler_logp, mask, *args).reshape(-1) == 0 for n, args in modes.items()}
    rows = []
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        sel = (lengths >= lo) & (lengths < hi)
        n = int(sel.sum())
        for name, d in dropped.items():
            rows.append({"bin": f"{lo}-{hi - 1}", "name": name, "responses": n,
                         "masked": float(d[sel].double().mean()) if n else None})  # fmt: skip
    return rows


@torch.no_grad()
def masked_at_length(
    old_logp: Tensor, sampler_logp: Tensor, mask: Tensor, modes: dict, lengths,
    generator: torch.Generator | None = None,
) -> list[dict]:  # fmt: skip
    """The share of responses each sequence mask drops when it reads n of a response's tokens, for each n in
    ``lengths``: n tokens drawn at random (without replacement, ``generator``) from each response with at least
    max(lengths) valid tokens, the same responses at every n. Every n then sees the same per-token drift (the draw is
    exchangeable; a prefix would not be: the first tokens of a response can drift less than the last), so a mask
    whose rate moves with n is biased by length alone. ``modes`` as in :func:`masked_by_length`. One row per
    (n, name): ``{"length", "name", "responses", "masked"}`` (``masked`` None when no response is that long)."""
    mask = check_mask(mask, old_logp.shape)
    if not lengths or any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in lengths):
        raise ValueError(f"lengths must be whole numbers of tokens >= 1, got {lengths!r}")
    keys = torch.rand(mask.shape, generator=generator).masked_fill(~mask, 2.0)  # padding sorts last
    rank = keys.argsort(-1).argsort(-1)  # each valid token's place in a random order of its response
    long_enough = mask.sum(-1) >= max(lengths)
    k = int(long_enough.sum())
    rows = []
    for n in lengths:
        for name, args in modes.items():
            dropped = sampler_ratio(old_logp, sampler_logp, mask & (rank < n), *args).reshape(-1) == 0
            rows.append({"length": n, "name": name, "responses": k,
                         "masked": float(dropped[long_enough].double().mean()) if k else None})  # fmt: skip
    return rows
