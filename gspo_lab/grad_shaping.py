"""What happens to a gradient between ``backward()`` and the optimizer step: per-group norms, the norm caps (absolute
and relative), skipping an update, the direction × norm mix, and how far a step stands out for AdamW.

    groups = param_groups(model)                       # {"embed": [...], "attn": [...], "router": [...], ...}
    norms = group_norms(groups)                        # pre-clip gradient norm per group (logged: grad/norm_<group>)
    cap = relative_cap(previous_norms, factor=3.0)     # factor × the median of the last RELATIVE_CAP_WINDOW norms
    own, other, cos = mix_direction_norm(params, other_grads)   # own direction, the other gradient's norm
    peaks = adam_peaks(optimizer, groups)              # after the step: largest |g| / √v̂ per group (adam/peak_<group>)

These serve issue 17's question — *why does a grad-norm cap protect GRPO?* — by separating the size of an update from
its content. Under AdamW a common rescaling of every gradient changes nothing (Adam is scale-invariant); a cap acts only
on the steps it binds, by shrinking their share of the moment estimates m (β1 = 0.9) and v (β2 = 0.999). A spike g_s
much larger than the typical gradient sets, coordinate-wise, m ≈ 0.1 g_s and v ≈ 0.001 g_s², so the next steps move
≈ 0.1 / √0.001 ≈ 3.2 × lr per coordinate along the spike's direction (decaying as 0.9^k / 0.9995^k) and every other
direction is damped for ~1 / (1 − β2) = 1000 steps — whatever the spike's size, once it dominates v.
:func:`adam_peaks` logs |g| / √v̂, the quantity that says whether a step dominated v.

Departures and choices, numbered:
    1. Parameter groups are read from transformers' Qwen3 parameter names (:data:`GROUP_RULES`); a parameter no rule
       names is ``norm`` (the RMSNorm weights).
    2. The relative cap's window holds the run's last ``RELATIVE_CAP_WINDOW`` pre-clip norms (64 = 4 rollouts at
       M = 16) and acts from the ``RELATIVE_CAP_MIN`` th update on (16: one rollout at M = 16); before that the update
       is not capped by it. Declared in data/specs/f10_shrink_skip.toml before its runs.
    3. :func:`mix_direction_norm` rescales the applied gradient to the other objective's norm; a zero gradient stays
       zero (all groups tied: both objectives' gradients are 0).
"""

from __future__ import annotations

import math
import statistics

import torch

__all__ = [
    "GROUPS",
    "GROUP_RULES",
    "RELATIVE_CAP_WINDOW",
    "RELATIVE_CAP_MIN",
    "param_groups",
    "group_norms",
    "relative_cap",
    "total_norm",
    "mix_direction_norm",
    "adam_peaks",
    "SPIKE_MODES",
    "spike_step",
]

#: (substring of a parameter's name, its group), first match wins; no match: "norm" (numbered note 1)
GROUP_RULES = (
    ("embed_tokens", "embed"),
    ("lm_head", "lm_head"),
    (".mlp.gate.", "router"),  # Qwen3MoeTopKRouter's weight; the dense MLP's gate_proj is "mlp" below
    (".mlp.", "mlp"),  # the experts of an MoE layer, the MLP of a dense one
    (".self_attn.", "attn"),
)
GROUPS = ("embed", "lm_head", "router", "mlp", "attn", "norm")
#: the relative cap's window of previous pre-clip norms, and the updates seen before it acts (numbered note 2)
RELATIVE_CAP_WINDOW = 64
RELATIVE_CAP_MIN = 16
_TINY = 1e-30  # guards v = 0 in adam_peaks (there g = 0 too)
#: what a spike (an update above grad_skip) does instead of being skipped (TrainConfig.spike; issue 22, item 4)
SPIKE_MODES = {
    "state_only": "AdamW's moments take the gradient; the parameters do not move (the step runs at lr 0)",
    "step_only": "the parameters take AdamW's step; its moments and step count are put back after it",
    "reset": "the parameters take AdamW's step, then its moments and step count are zeroed (SPAM-style reset)",
    "random": "the gradient's direction is replaced by a random one of equal norm, then the step",
}


def param_groups(model: torch.nn.Module) -> dict[str, list[torch.nn.Parameter]]:
    """The trainable parameters by group (:data:`GROUPS`; a dense model has no ``router``)."""
    out: dict[str, list] = {}
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        group = next((g for key, g in GROUP_RULES if key in f".{name}."), "norm")
        out.setdefault(group, []).append(p)
    return out


def total_norm(tensors) -> float:
    """The L2 norm over every element of ``tensors`` (None entries skipped)."""
    sq = [t.detach().double().pow(2).sum() for t in tensors if t is not None]
    return math.sqrt(float(torch.stack(sq).sum())) if sq else 0.0


@torch.no_grad()
def group_norms(groups: dict[str, list[torch.nn.Parameter]]) -> dict[str, float]:
    """The L2 norm of each group's current ``.grad`` (before any clipping), accumulated in float64."""
    out = {}
    for g, params in groups.items():
        norms = [torch.linalg.vector_norm(p.grad, dtype=torch.float64) for p in params if p.grad is not None]
        out[g] = float(torch.stack(norms).square().sum().sqrt()) if norms else 0.0
    return out


def relative_cap(previous_norms: list[float], factor: float) -> float:
    """``factor`` × the median of the last :data:`RELATIVE_CAP_WINDOW` pre-clip norms; ``inf`` (no cap) while fewer
    than :data:`RELATIVE_CAP_MIN` are known (numbered note 2). Non-finite norms are not in the window."""
    if not factor > 0:
        raise ValueError(f"factor must be > 0, got {factor}")
    window = [x for x in previous_norms[-RELATIVE_CAP_WINDOW:] if math.isfinite(x)]
    if len(previous_norms) < RELATIVE_CAP_MIN or not window:
        return math.inf
    return factor * statistics.median(window)


def mix_direction_norm(params: list[torch.nn.Parameter], other_grads: list[torch.Tensor | None]):
    """Rescale every ``p.grad`` in place so the gradient keeps its direction and takes the norm of ``other_grads``
    (the other objective's gradient of the same minibatch, one entry per parameter).

    Returns (own norm, other norm, cosine between the two gradients; nan when either is zero)."""
    if len(params) != len(other_grads):
        raise ValueError(f"other_grads must hold one entry per parameter ({len(params)}), got {len(other_grads)}")
    own, other = total_norm(p.grad for p in params), total_norm(other_grads)
    dot = sum(
        float((p.grad.double() * g.double()).sum())
        for p, g in zip(params, other_grads, strict=True)
        if p.grad is not None and g is not None
    )
    cos = dot / (own * other) if own > 0 and other > 0 else math.nan
    scale = other / own if own > 0 else 0.0
    for p in params:
        if p.grad is not None:
            p.grad.mul_(scale)
    return own, other, cos


@torch.no_grad()
def adam_peaks(optimizer: torch.optim.Optimizer, groups: dict[str, list[torch.nn.Parameter]]) -> dict[str, float]:
    """After an AdamW step: per group, the largest |g| / √v̂ over its coordinates, with g the gradient the step used
    and v̂ = v / (1 − β2^t) the bias-corrected second moment that includes it (Adam's eps left out; a coordinate with
    v = 0 had g = 0 and counts 0). Its bound √((1 − β2^t) / (1 − β2)) is reached when g dominates v: 1 at step 1,
    9.8 at step 100, 31.6 in the limit (β2 = 0.999). Computed as √(max g² / v · (1 − β2^t)): no square roots over
    the coordinates."""
    beta2 = {id(p): pg["betas"][1] for pg in optimizer.param_groups for p in pg["params"]}
    out = {}
    for g, params in groups.items():
        peak_sq = 0.0
        for p in params:
            state = optimizer.state.get(p)
            if p.grad is None or not state or "exp_avg_sq" not in state:
                continue
            ratio_sq = float(p.grad.square().div_(state["exp_avg_sq"].clamp_min(_TINY)).max())
            peak_sq = max(peak_sq, ratio_sq * (1 - beta2[id(p)] ** float(state["step"])))
        out[g] = math.sqrt(peak_sq)
    return out


@torch.no_grad()
def spike_step(optimizer: torch.optim.Optimizer, params: list[torch.nn.Parameter], mode: str, seed: int) -> None:
    """The optimizer step of a spike under ``mode`` (:data:`SPIKE_MODES`); ``seed`` draws ``random``'s direction (a
    standard normal vector over every gradient coordinate, rescaled to the gradient's norm: seeded per update, so
    a resumed run draws the same one)."""
    if mode not in SPIKE_MODES:
        raise ValueError(f"mode must be one of {sorted(SPIKE_MODES)}, got {mode!r}")
    live = [p for p in params if p.grad is not None]
    if mode == "random":
        gen = torch.Generator().manual_seed(seed)
        noise = [torch.randn(p.grad.shape, generator=gen, dtype=p.grad.dtype) for p in live]
        scale = total_norm(p.grad for p in live) / max(total_norm(noise), _TINY)
        for p, z in zip(live, noise, strict=True):
            p.grad.copy_(z.mul_(scale))
    if mode == "state_only":
        lrs = [pg["lr"] for pg in optimizer.param_groups]
        for pg in optimizer.param_groups:
            pg["lr"] = 0.0
        optimizer.step()
        for pg, lr in zip(optimizer.param_groups, lrs, strict=True):
            pg["lr"] = lr
        return
    saved = {id(p): {k: v.clone() for k, v in optimizer.state[p].items()} for p in live if optimizer.state.get(p)}
    optimizer.step()
    if mode == "reset":  # the step taken, AdamW starts afresh: moments and step count zeroed (SPAM's reset)
        for p in live:
            for key in ("exp_avg", "exp_avg_sq", "step"):
                optimizer.state[p][key].zero_()
    if mode == "step_only":  # put the moments back; a parameter's first step leaves no state behind either
        for p in live:
            if id(p) in saved:
                for k, v in saved[id(p)].items():
                    optimizer.state[p][k].copy_(v)
            else:
                optimizer.state.pop(p, None)
