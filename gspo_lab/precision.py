"""Precision (GSPO paper §5.4): the inference engine's likelihoods against the training engine's, on the same
responses, and what they do to each objective's clipping when π_old is taken from the inference engine.

The toy's "inference engine" is the sampler (KV cache), run in fp32 (the floor: the same weights and precision,
only a different code path) or under bf16 autocast; the "training engine" is the full fp32 forward of the loop's
updates (:func:`gspo_lab.policy.rollout_logprobs`, train mode).

    m = sampler_mismatch(cfg, "bf16")               # Δ = log π_sampler − log π_train per token, (B, T)
    mismatch_stats(m)                               # per token / per sequence (length-normalised, summed) |Δ|
    first_update_clip(m)                            # the clip fractions before any update, π_old = the sampler's
    stale_mismatch(cfg, (0, 4, 8))                  # {k: Δ between the sampler and the trainer k updates later}

Per sequence, GSPO's log s_i at π_θ = π_old is −mean_t Δ (Eq. 7), the true sequence log-ratio −Σ_t Δ. At k = 0
π_θ is still the policy that sampled, so every clipped token there is the engines' disagreement alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import pandas as pd
import torch

from gspo_lab.config import TrainConfig
from gspo_lab.objectives import GRPO_CLIP, GSPO_CLIP, get_objective
from gspo_lab.reductions import masked_mean

__all__ = ["SAMPLERS", "Mismatch", "sampler_mismatch", "batch_composition", "stale_mismatch", "routing_mismatch",
           "mismatch_stats",
           "mismatch_samples", "first_update_clip", "correction_table"]  # fmt: skip

#: the sampler's precision: the name of TrainConfig.old_logp that takes π_old from it
SAMPLERS = {"fp32": "sampler", "bf16": "sampler_bf16"}


@dataclass(frozen=True)
class Mismatch:
    """One rollout batch scored by both engines. Shapes: B responses, T tokens."""

    sampler: str  # "sampler" (fp32) or "sampler_bf16"
    delta: torch.Tensor  # (B, T) float64, log π_sampler − log π_train per valid token, 0 on padding
    mask: torch.Tensor  # (B, T) bool, valid response tokens
    train_logp: torch.Tensor  # (B, T) the training engine's log-probs (π_θ before any update)
    sampler_logp: torch.Tensor  # (B, T) the inference engine's log-probs
    adv: torch.Tensor  # (B,) the batch's group advantages


def sampler_mismatch(cfg: TrainConfig, precision: str = "bf16", *, replay: bool = False) -> Mismatch:
    """Sample one rollout batch of ``cfg`` (its checkpoint, length, temperature, top-k / top-p, seed) with the sampler
    at ``precision`` (a key of :data:`SAMPLERS`) and score its responses with the training engine: over the whole
    vocabulary, or with ``replay`` on the tokens the sampler kept (sampling replay; needs ``cfg.top_k`` or
    ``cfg.top_p`` on). With top-k or top-p and no replay, Δ holds −log of the kept mass at each token."""
    from gspo_lab.policy import rollout_logprobs
    from gspo_lab.step import collect, init_state

    if precision not in SAMPLERS:
        raise ValueError(f"precision must be one of {sorted(SAMPLERS)}, got {precision!r}")
    sampler = SAMPLERS[precision]
    state = init_state(replace(cfg, old_logp=sampler, sampling_replay=replay))
    batch = collect(state)
    data, mask = batch.data, batch.data.response_mask
    state.model.train()
    with torch.no_grad():
        full, _ = rollout_logprobs(state.model, data, replay=replay)
    delta = (data.sampler_logp.double() - full.double()).where(mask, 0.0)
    return Mismatch(sampler, delta, mask, full, data.sampler_logp, batch.adv)


def _micro(data, rows: slice):
    """The scoring inputs of rows ``rows`` of a rollout: prompt ids and mask, response ids and mask."""
    return data.prompt_ids[rows], data.prompt_mask[rows], data.response_ids[rows], data.response_mask[rows]


def batch_composition(cfg: TrainConfig, sizes: tuple[int, int] = (1, 8), precision: str = "bf16") -> Mismatch:
    """The same weights scoring the same responses in micro-batches of ``sizes[0]`` and of ``sizes[1]`` rows (one
    rollout batch of ``cfg``, the trainer's forward in train mode, under bf16 autocast for ``precision="bf16"``):
    Δ = log π (first size) − log π (second size) per token, in a :class:`Mismatch` (``sampler`` names the pair). A
    batch-invariant forward gives Δ = 0; any other Δ is the batch's composition alone."""
    import contextlib

    from gspo_lab.policy import response_logprobs
    from gspo_lab.step import init_state, sample

    if precision not in SAMPLERS or len(sizes) != 2 or min(sizes) < 1:
        raise ValueError(f"precision must be one of {sorted(SAMPLERS)} and sizes two row counts >= 1, got "
                         f"{precision!r}, {sizes!r}")  # fmt: skip
    state = init_state(cfg)
    data = sample(state).data
    state.model.train()
    autocast = torch.autocast("cpu", dtype=torch.bfloat16) if precision == "bf16" else contextlib.nullcontext()
    B = data.response_ids.shape[0]
    scored = []
    with torch.no_grad(), autocast:
        for size in sizes:
            parts = [response_logprobs(state.model, *_micro(data, slice(i, i + size)))[0] for i in range(0, B, size)]
            scored.append(torch.cat(parts).double())
    mask = data.response_mask
    delta = (scored[0] - scored[1]).where(mask, 0.0)
    adv = torch.zeros(B, dtype=torch.float64)  # no update is read here: the clip fractions need none
    return Mismatch(f"{precision} micro-batches {sizes[0]} vs {sizes[1]}", delta, mask, scored[1], scored[0], adv)


def stale_mismatch(cfg: TrainConfig, updates: tuple[int, ...] = (0, 2, 4, 8)) -> dict[int, Mismatch]:
    """A sampler that stays behind while the trainer moves: one rollout batch of ``cfg`` sampled in fp32, then
    ``max(updates)`` optimizer steps of ``cfg``'s objective on its minibatches in turn (``cfg.lr``, …); after k of
    them the trainer scores the same responses. ``{k: Mismatch}`` with Δ = log π_sampler − log π_θk, the drift a
    rollout lag of about k / M batches puts between a behaviour policy and the trainer (k = 0: the fp32 floor).
    π_old is recomputed for the updates (``old_logp = "recompute"``), so the drift is the updates' alone."""
    from gspo_lab.policy import rollout_logprobs
    from gspo_lab.step import collect, init_state, update

    if not updates or any(isinstance(k, bool) or not isinstance(k, int) or k < 0 for k in updates):
        raise ValueError(f"updates must be a non-empty tuple of whole numbers >= 0, got {updates!r}")
    state = init_state(replace(cfg, old_logp="recompute", rollout_lag=0))
    batch = collect(state)
    data, mask = batch.data, batch.data.response_mask
    out = {}
    for k in range(max(updates) + 1):
        if k in updates:
            state.model.train()
            with torch.no_grad():
                full, _ = rollout_logprobs(state.model, data)
            delta = (data.sampler_logp.double() - full.double()).where(mask, 0.0)
            out[k] = Mismatch(f"sampler {k} updates behind", delta, mask, full, data.sampler_logp, batch.adv)
        if k < max(updates):
            update(state, batch, k % cfg.minibatches)
    return out


def routing_mismatch(cfg: TrainConfig, precision: str = "bf16") -> dict:
    """R3 on one rollout batch of an MoE ``cfg``: the sampler at ``precision`` records the experts its own passes
    chose; the fp32 trainer scores the same responses with its own routing and with the sampler's replayed.
    ``{"plain": Mismatch, "r3": Mismatch, "per_layer": (L,) share of the trainer's (token, layer) top-k sets that
    differ from the sampler's, over the positions whose logits score a response token}``. With R3 the rest of Δ
    is arithmetic alone."""
    from gspo_lab.policy import rollout_logprobs
    from gspo_lab.routing import expert_change_frac_per_layer, record_routing, replay_routing
    from gspo_lab.step import collect, init_state

    if precision not in SAMPLERS:
        raise ValueError(f"precision must be one of {sorted(SAMPLERS)}, got {precision!r}")
    state = init_state(replace(cfg, old_logp=SAMPLERS[precision], sampler_routing_replay=True, compile_update=False,
                               routing_replay=False))  # fmt: skip
    if not state.is_moe:
        raise ValueError(f"routing_mismatch needs an MoE checkpoint (experts to replay), got {cfg.checkpoint!r}")
    batch = collect(state)
    data, mask = batch.data, batch.data.response_mask
    state.model.train()
    with torch.no_grad():
        with record_routing(state.model) as rec:
            plain, _ = rollout_logprobs(state.model, data)
        with replay_routing(state.model, data.sampler_routing):
            r3, _ = rollout_logprobs(state.model, data)
    P = data.prompt_ids.shape[1]
    scored = torch.zeros(mask.shape[0], P + mask.shape[1], dtype=torch.bool)  # input positions whose logits score
    scored[:, P - 1 : P - 1 + mask.shape[1]] = mask
    out = {"per_layer": expert_change_frac_per_layer(data.sampler_routing, rec.indices, scored)}
    for name, logp in (("plain", plain), ("r3", r3)):
        delta = (data.sampler_logp.double() - logp.double()).where(mask, 0.0)
        out[name] = Mismatch(f"{data.sampler_logp.dtype} sampler, {name}", delta, mask, logp, data.sampler_logp,
                             batch.adv)  # fmt: skip
    return out


def _quantiles(x: torch.Tensor, prefix: str) -> dict:
    x = x.abs().double()
    return {
        f"{prefix}_mean": x.mean().item(),
        f"{prefix}_p99": torch.quantile(x, 0.99).item(),
        f"{prefix}_max": x.max().item(),
    }


def _outside(log_ratio: torch.Tensor, eps_low: float, eps_high: float) -> float:
    """The share of ``log_ratio`` outside the band [log(1 − ε_low), log(1 + ε_high)]."""
    return ((log_ratio < math.log1p(-eps_low)) | (log_ratio > math.log1p(eps_high))).double().mean().item()


def mismatch_stats(
    m: Mismatch,
    *,
    gspo_eps_low: float = GSPO_CLIP.low,
    gspo_eps_high: float = GSPO_CLIP.high,
    grpo_eps_low: float = GRPO_CLIP.low,
    grpo_eps_high: float = GRPO_CLIP.high,
) -> dict:
    """|Δ| per token (``tok``), per sequence length-normalised (``seq``: GSPO's log s_i) and summed (``seqsum``):
    mean, p99, max; ``tok_outside_grpo``: tokens whose ratio already lies outside GRPO's band; ``seq_outside_gspo``:
    sequences outside GSPO's; ``gspo_eps_needed_p99``: the (symmetric, log-space) ε that keeps 99 % of sequences
    inside GSPO's band; ``mean_length``. Defaults: the paper's clip ranges (§5.1)."""
    delta, mask = m.delta, m.mask
    seq = masked_mean(delta, mask, dim=-1)
    seqsum = delta.sum(-1)
    has = mask.any(-1)
    tok = -delta[mask]
    return {
        **_quantiles(delta[mask], "tok"),
        **_quantiles(seq[has], "seq"),
        **_quantiles(seqsum[has], "seqsum"),
        "tok_outside_grpo": ((tok < math.log1p(-grpo_eps_low)) | (tok > math.log1p(grpo_eps_high)))
        .double()
        .mean()
        .item(),
        "seq_outside_gspo": ((-seq[has] < math.log1p(-gspo_eps_low)) | (-seq[has] > math.log1p(gspo_eps_high)))
        .double()
        .mean()
        .item(),
        "gspo_eps_needed_p99": torch.quantile(seq[has].abs(), 0.99).item(),
        "mean_length": mask.sum(-1).double().mean().item(),
    }


def first_update_clip(m: Mismatch, objectives: tuple[str, ...] = ("grpo", "gspo")) -> dict[str, dict]:
    """Per objective (its paper clip range), the clip fractions of the first update (k = 0) when π_old's log-probs
    are the sampler's and π_θ is the training engine's: ``{name: {"clip/token_frac": …, "clip/seq_frac": …}}``."""
    out = {}
    for name in objectives:
        _, stats = get_objective(name)(m.train_logp, m.sampler_logp, m.adv, m.mask)
        out[name] = {"clip/token_frac": stats.clip_token_frac, "clip/seq_frac": stats.clip_seq_frac}
    return out


def mismatch_samples(m: Mismatch) -> dict:
    """``{"token": |Δ| per valid token, "sequence": |mean_t Δ| per response}`` as numpy arrays (for plots)."""
    seq = masked_mean(m.delta, m.mask, dim=-1)[m.mask.any(-1)]
    return {"token": m.delta[m.mask].abs().numpy(), "sequence": seq.abs().numpy()}


def correction_table(m: Mismatch, bands: dict[str, tuple[float | None, float]]) -> pd.DataFrame:
    """What each of TRL's four sampler–trainer correction modes does to one batch (:mod:`gspo_lab.corrections`):
    ρ = π_train / π_sampler per token or per sequence, for each band name → (clip_min, clip_max); per row the share
    of valid tokens masked (ρ set to 0) or truncated, the mean applied ρ, and GRPO's and GSPO's loss at π_θ = π_train
    with the correction against without it (both objectives at their paper ε)."""
    from gspo_lab.corrections import MODES, correction_stats, sampler_ratio

    rows = []
    plain = {n: get_objective(n)(m.train_logp, m.train_logp, m.adv, m.mask)[0].item() for n in ("grpo", "gspo")}
    for band, (lo, hi) in bands.items():
        for mode in MODES:
            rho = sampler_ratio(m.train_logp, m.sampler_logp, m.mask, mode, lo, hi)
            stats = correction_stats(rho, None, m.train_logp, m.sampler_logp, m.mask, mode, lo, hi)
            row = {"band": band, "mode": mode, **{k.split("/")[1]: v for k, v in stats.items()}}
            for name in ("grpo", "gspo"):
                loss = get_objective(name)(m.train_logp, m.train_logp, m.adv, m.mask, sampler_ratio=rho)[0].item()
                row[f"{name}_loss_change"] = loss - plain[name]
            rows.append(row)
    return pd.DataFrame(rows)
