"""Probes: measurements that need no training run, one cell of a sweep each (``probe = "<name>"`` in a spec).

A probe takes the cell's :class:`~gspo_lab.config.TrainConfig` (checkpoint, task, length, lr, seed, …) and its own
keyword arguments, and returns ``{"summary": {name: float}, "tables": {name: list of records}}``; the summary goes
into the spec's merged table like a training cell's, the tables stay in the cell's result file.

    expert_volatility   finding 3: changed top-k sets after k = 1 … K updates, overall and per MoE layer
    precision           finding 5 (§5.4): bf16 sampler vs fp32 training forward log-probs, token vs sequence
    gradient_noise      finding 6: GRPO's vs GSPO's minibatch-gradient noise as π_old goes stale, per length
    cold_start          finding 2's pooled cold start: a checkpoint's held-out accuracy on many samples, once

Every probe samples from the cell's seed, so a probe cell is as reproducible as a training cell.
"""

from __future__ import annotations

import inspect

import torch

from gspo_lab.config import TrainConfig
from gspo_lab.objectives import GRPO_CLIP, GSPO_CLIP
from gspo_lab.reductions import masked_mean

__all__ = ["PROBES", "probe_params", "run_probe", "expert_volatility", "precision", "gradient_noise", "cold_start"]


def expert_volatility(cfg: TrainConfig, *, updates: int = 4) -> dict:
    """Fraction of (token, layer) top-k expert sets that differ from π_old's after k = 1 … ``updates`` updates.

    One rollout batch of ``cfg`` (its objective, lr, M), the loop's own updates (:func:`gspo_lab.analysis.
    offpolicy_trace`); the routing of the whole batch re-recorded after each update. ``change_k1`` is the
    paper's quantity (§5.3: ~10 % after one update, 48 layers); ``change_kK`` after the last update.
    """
    from gspo_lab.analysis import offpolicy_trace

    trace = offpolicy_trace(cfg, updates, keep_states=False)
    probe = trace.train
    if probe.expert_change_layers is None:
        raise ValueError(f"expert_volatility needs an MoE checkpoint, {cfg.checkpoint!r} is dense")
    layers = probe.expert_change_layers
    rows = [
        {"k": k, "layer": layer, "change": layers[k][layer]}
        for k in range(1, updates + 1)
        for layer in range(len(layers[0]))
    ]
    summary = {
        "change_k1": probe.expert_change[1],
        "change_kK": probe.expert_change[updates],
        "layers": len(layers[0]),
        "change_k1_first_layer": layers[1][0],
        "change_k1_last_layer": layers[1][-1],
    }
    return {
        "summary": summary,
        "tables": {"per_layer": rows, "per_k": [{"k": k, "change": c} for k, c in enumerate(probe.expert_change)]},
    }


def precision(
    cfg: TrainConfig,
    *,
    gspo_eps_low: float = GSPO_CLIP.low,
    gspo_eps_high: float = GSPO_CLIP.high,
    grpo_eps_low: float = GRPO_CLIP.low,
    grpo_eps_high: float = GRPO_CLIP.high,
) -> dict:
    """§5.4: the sampler's log-probs ("inference engine", bf16 autocast, KV cache) vs the training forward (fp32).

    Two rollout batches from the cell's seed: one sampled in fp32 (the floor: the same weights and precision,
    KV cache vs full forward) and one under bf16 autocast; for each, :func:`gspo_lab.precision.mismatch_stats`
    (per token, per sequence length-normalised and summed |Δ|, the fractions already outside each objective's band,
    the ε GSPO would need), prefixed ``fp32_`` / ``bf16_``. Defaults: the paper's clip ranges (§5.1).
    """
    from gspo_lab.precision import mismatch_stats, sampler_mismatch

    eps = dict(
        gspo_eps_low=gspo_eps_low, gspo_eps_high=gspo_eps_high, grpo_eps_low=grpo_eps_low, grpo_eps_high=grpo_eps_high
    )
    summary, tables = {}, {}
    for name in ("fp32", "bf16"):
        m = sampler_mismatch(cfg, name)
        summary.update({f"{name}_{k}": v for k, v in mismatch_stats(m, **eps).items()})
        seq = masked_mean(m.delta, m.mask, dim=-1)
        tables[name] = [
            {"length": int(n), "seq_delta": s} for n, s in zip(m.mask.sum(-1).tolist(), seq.tolist(), strict=True)
        ]
    return {"summary": summary, "tables": tables}


def gradient_noise(
    cfg: TrainConfig, *, updates: int = 3, draws: int = 16, minibatch: int = 32, clipped: bool = False
) -> dict:
    """Relative variance (noise / signal) of GRPO's and GSPO's minibatch gradient at θ_k, k = 0 … ``updates``.

    :func:`gspo_lab.gradients.staleness_noise` on one rollout batch of ``cfg`` (length ``cfg.length``, updates
    with ``cfg.objective``): ``draws`` minibatches of ``minibatch`` rows, the same rows for both objectives and
    every k; with ``clipped`` each objective's paper clip range, else unclipped (Eqs. 10-12 as written, as in
    notebook 02). ``noise_ratio_kK`` = RelVar_GRPO / RelVar_GSPO at the stalest θ (1 at k = 0).
    """
    from gspo_lab.analysis import offpolicy_trace
    from gspo_lab.gradients import UNCLIPPED, staleness_noise

    trace = offpolicy_trace(cfg, updates)
    table = staleness_noise(trace, draws=draws, minibatch=minibatch, seed=cfg.seed, **({} if clipped else UNCLIPPED))
    last = table.loc[updates]
    summary = {
        "noise_ratio_kK": float(last["noise_ratio"]),
        "noise_ratio_kK_lo": float(last["noise_ratio_lo"]),
        "noise_ratio_kK_hi": float(last["noise_ratio_hi"]),
        "rel_variance_grpo_k0": float(table.loc[0, "rel_variance_grpo"]),
        "rel_variance_grpo_kK": float(last["rel_variance_grpo"]),
        "rel_variance_gspo_kK": float(last["rel_variance_gspo"]),
        "mean_length": trace.train.mask.sum(-1).double().mean().item(),
    }
    return {"summary": summary, "tables": {"staleness": table.reset_index().to_dict(orient="records")}}


def cold_start(cfg: TrainConfig, *, samples: int = 16) -> dict:
    """The cold start's held-out accuracy at (``cfg.checkpoint``, ``cfg.length``, ``cfg.temperature``), measured
    once, on the prompts every training run's evaluations use (the first ``cfg.eval_prompts`` of the eval split) ×
    ``samples`` sampled responses from a generator seeded by ``cfg.seed``, and greedy. Pooled over a spec's seeds it
    is the threshold's base of the collapse endpoint v2 (:func:`gspo_lab.experiments.summary.endpoint_v2`), in place
    of each run's own single rollout-0 sample."""
    from gspo_lab.checkpoints import load_checkpoint
    from gspo_lab.evaluate import evaluate
    from gspo_lab.tasks import get_task

    model, tokenizer, _ = load_checkpoint(cfg.checkpoint)
    task, kw = get_task(cfg.task), {"prompts": cfg.eval_prompts, "max_new_tokens": cfg.max_new_tokens or None}
    g = torch.Generator().manual_seed(cfg.seed)
    sampled = evaluate(
        model, tokenizer, task, cfg.length, temperature=cfg.temperature, generator=g, samples=samples, **kw
    )
    greedy = evaluate(model, tokenizer, task, cfg.length, greedy=True, **kw)
    summary = {
        "accuracy_sampled": sampled["eval/accuracy_sampled"],
        "samples": cfg.eval_prompts * samples,
        "truncated_sampled": sampled["eval/truncated_frac_sampled"],
        "length_sampled": sampled["eval/response_length_sampled"],
        "accuracy_greedy": greedy["eval/accuracy_greedy"],
    }
    return {"summary": summary, "tables": {}}


PROBES = {
    "expert_volatility": expert_volatility,
    "precision": precision,
    "gradient_noise": gradient_noise,
    "cold_start": cold_start,
}


def probe_params(name: str) -> set[str]:
    """The keyword arguments probe ``name`` takes (besides the config)."""
    if name not in PROBES:
        raise ValueError(f"probe must be one of {sorted(PROBES)}, got {name!r}")
    return {p.name for p in inspect.signature(PROBES[name]).parameters.values() if p.kind is p.KEYWORD_ONLY}


def run_probe(name: str, cfg: TrainConfig, **kw) -> dict:
    """Run probe ``name`` on ``cfg`` with one torch thread per ``cfg.threads``; checks its keyword arguments."""
    unknown = set(kw) - probe_params(name)
    if unknown:
        raise ValueError(f"probe {name!r} takes {sorted(probe_params(name))}, not {sorted(unknown)}")
    torch.set_num_threads(cfg.threads)
    return PROBES[name](cfg, **kw)
