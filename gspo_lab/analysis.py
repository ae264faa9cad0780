"""Off-policy traces: one real rollout batch, re-scored after each of k = 0…K updates. The notebooks' raw material.

:func:`offpolicy_trace` loads a checkpoint, samples a rollout batch of length-L problems, then takes K optimizer
steps on successive minibatches of that batch (exactly the loop's ``update``) and after each step re-scores *all*
B responses under the new policy — and so it does for probe batches of other lengths sampled from the same π_old.
``probe.logp[k]`` is log π_θk for every response token, ``probe.logp[0]`` is π_old's; k = 1 is the situation of
the 2nd minibatch in the paper's setup (§5.1: 4 minibatches per rollout).

The ratio summaries below are pure functions of a trace; they feed notebook 01 (importance-ratio variance) and 00.
Shapes: K + 1 policies, B responses, T tokens.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, replace

import pandas as pd
import torch
from torch import Tensor

from gspo_lab.config import TrainConfig
from gspo_lab.policy import rollout_logprobs
from gspo_lab.ratios import seq_log_ratio, seq_log_ratio_sum, tok_log_ratio
from gspo_lab.reductions import seq_lengths
from gspo_lab.routing import (
    expert_change_frac,
    expert_change_frac_per_layer,
    experts_used,
    record_routing,
    replay_routing,
)
from gspo_lab.step import collect, init_state, update

__all__ = [
    "routing_change",
    "Probe",
    "OffPolicyTrace",
    "offpolicy_trace",
    "ratio_variance",
    "ratio_samples",
    "token_clip_vs_sequence_ratio",
    "compare_objectives",
    "prefix_ratio_variance",
    "variance_growth",
]


@dataclass
class Probe:
    """One rollout batch sampled from π_old = π_θ0, scored under π_θ0 … π_θK."""

    rollout: object  # gspo_lab.rollout.Rollout
    logp: Tensor  # (K + 1, B, T): logp[k] under the policy after k updates
    mask: Tensor  # (B, T) bool
    adv: Tensor  # (B,)
    rewards: Tensor  # (B,)
    expert_change: list[float]  # K + 1 values: π_θk's routing vs π_old's (0.0 for k = 0; NaN for a dense model)
    expert_change_layers: list[list[float]] | None = None  # K + 1 lists, one value per MoE layer (None: dense)

    @property
    def K(self) -> int:
        return self.logp.shape[0] - 1

    def log_ratios(self, k: int) -> Tensor:
        """(B, T) log w_{i,t} between π_θk and π_old (0 at padding)."""
        return tok_log_ratio(self.logp[k], self.logp[0], self.mask)


@dataclass
class OffPolicyTrace:
    """K updates taken on one rollout batch (``train``), and probe batches of other lengths scored along the way."""

    cfg: TrainConfig
    train: Probe  # the batch the updates were taken on (length cfg.length)
    probes: dict[int, Probe]  # problem size L -> a fresh batch from π_old, never trained on
    states: list[dict]  # K + 1 model state_dicts (θ_0 … θ_K), for gradient analyses at θ_k
    model: torch.nn.Module  # left at θ_K
    tokenizer: object

    @property
    def K(self) -> int:
        return self.train.K


def _score(model, r, is_moe: bool) -> tuple[Tensor, Tensor | None]:
    with torch.no_grad(), record_routing(model) if is_moe else contextlib.nullcontext() as rec:
        logp, _ = rollout_logprobs(model, r)
    return logp, (rec.indices if rec is not None else None)


def _probe(batches, logps, routings) -> Probe:
    r = batches.data
    full_mask = torch.cat([r.prompt_mask, r.response_mask], 1)
    change = [expert_change_frac(routings[0], x, full_mask) if x is not None else math.nan for x in routings]
    layers = None
    if routings[0] is not None:
        layers = [expert_change_frac_per_layer(routings[0], x, full_mask).tolist() for x in routings]
    return Probe(r, torch.stack(logps), r.response_mask, batches.adv, batches.rewards, change, layers)


def offpolicy_trace(
    cfg: TrainConfig, updates: int, *, probe_lengths: tuple[int, ...] = (), keep_states: bool = True, **init_kw
) -> OffPolicyTrace:
    """Take ``updates`` optimizer steps on one rollout batch; score it and fresh probe batches after each step.

    Update k uses minibatch (k − 1) mod M of the training batch (``cfg.minibatches``), the objective
    ``cfg.objective`` and the loop's own :func:`gspo_lab.step.update`. The probes (one batch per length in
    ``probe_lengths``, sampled from π_old before any update) share the *same* policy change, so comparing them
    isolates the effect of response length. ``init_kw`` passes a model/tokenizer instead of ``cfg.checkpoint``.
    """
    if updates < 0:
        raise ValueError(f"updates must be >= 0, got {updates}")
    torch.set_num_threads(cfg.threads)
    state = init_state(cfg, **init_kw)
    batch = collect(state)
    probe_batches = {}
    for length in probe_lengths:
        state.cfg = replace(cfg, length=length)
        probe_batches[length] = collect(state)
    state.cfg = cfg
    everything = {None: batch, **probe_batches}
    logps = {key: [] for key in everything}
    routings = {key: [] for key in everything}
    states = []
    for k in range(updates + 1):
        if k > 0:
            update(state, batch, (k - 1) % cfg.minibatches)
        for key, b in everything.items():
            logp, routing = _score(state.model, b.data, state.is_moe)
            logps[key].append(logp)
            routings[key].append(routing)
        if keep_states:
            states.append({n: t.detach().clone() for n, t in state.model.state_dict().items()})
    probes = {key: _probe(b, logps[key], routings[key]) for key, b in everything.items()}
    return OffPolicyTrace(cfg, probes.pop(None), probes, states, state.model, state.tokenizer)


def ratio_samples(probe: Probe, k: int) -> dict[str, Tensor]:
    """Flat samples at update k: token log w (valid tokens), and per response log s_i and Σ_t log w."""
    logp, old, mask = probe.logp[k], probe.logp[0], probe.mask
    return {
        "tok_log_ratio": tok_log_ratio(logp, old, mask)[mask],
        "seq_log_ratio": seq_log_ratio(logp, old, mask),
        "seq_log_ratio_sum": seq_log_ratio_sum(logp, old, mask),
    }


def ratio_variance(trace: OffPolicyTrace) -> pd.DataFrame:
    """Across responses: Var[Σ_t log w] (the true sequence ratio) and Var[mean_t log w] (GSPO's log s_i).

    One row per (probe length L, k >= 1), with the mean response length; every probe saw the same updates.
    """
    rows = []
    for length, tr in sorted(trace.probes.items()):
        for k in range(1, tr.K + 1):
            s = ratio_samples(tr, k)
            rows.append(
                {
                    "L": length,
                    "response_length": seq_lengths(tr.mask).float().mean().item(),
                    "k": k,
                    "var_sum": s["seq_log_ratio_sum"].var().item(),
                    "var_mean": s["seq_log_ratio"].var().item(),
                    "var_token": s["tok_log_ratio"].var().item(),
                    "expert_change": tr.expert_change[k],
                }
            )
    return pd.DataFrame(rows)


def token_clip_vs_sequence_ratio(probe: Probe, k: int, eps_low: float, eps_high: float) -> dict[str, float]:
    """How token clipping fails to bound the sequence ratio (§3): among responses whose *every* token ratio lies
    inside GRPO's band [1 − ε_low, 1 + ε_high], the fraction whose sequence ratio Π_t w_{i,t} lies outside it,
    and the extreme sequence ratio reached (as a log)."""
    lw = probe.log_ratios(k)
    mask = probe.mask
    inside = ((lw >= math.log1p(-eps_low)) & (lw <= math.log1p(eps_high))) | ~mask
    all_inside = inside.all(-1) & mask.any(-1)
    seq = seq_log_ratio_sum(probe.logp[k], probe.logp[0], mask)
    out = (seq < math.log1p(-eps_low)) | (seq > math.log1p(eps_high))
    n = int(all_inside.sum())
    return {
        "responses_all_tokens_inside": n,
        "frac_sequence_outside": (out & all_inside).sum().item() / max(n, 1),
        "max_abs_log_seq_ratio": seq[all_inside].abs().max().item() if n else 0.0,
    }


def compare_objectives(probe: Probe, k: int, objectives=("grpo", "gspo", "gspo_token")) -> pd.DataFrame:
    """Each objective (paper clip range) on the same (logp after k updates, π_old, Â, mask): loss and statistics."""
    from gspo_lab.objectives import get_objective

    rows = {}
    for name in objectives:
        loss, stats = get_objective(name)(probe.logp[k], probe.logp[0], probe.adv, probe.mask)
        rows[name] = {"loss": loss.item(), **stats.as_dict()}
    return pd.DataFrame.from_dict(rows, orient="index")


def prefix_ratio_variance(probe: Probe, k: int, min_responses: int = 8) -> pd.DataFrame:
    """Var across responses of Σ_{t<=n} log w and of its mean (1/n) Σ_{t<=n} log w, for prefix lengths n.

    The same responses, truncated: the prefix sum is the true sequence log-ratio of the first n tokens
    (:func:`~gspo_lab.ratios.seq_log_ratio_sum` on the truncated mask). The per-token noise level is not constant
    along a response (early tokens of a sort are nearly deterministic), so ``var_token`` (pooled over the prefix's
    tokens) is reported too, with both variances in its units. Rows where fewer than ``min_responses`` responses
    reach length n are dropped.
    """
    logp, old, mask = probe.logp[k], probe.logp[0], probe.mask
    lw = probe.log_ratios(k)
    positions = torch.arange(mask.shape[1])
    rows = []
    for n in range(1, mask.shape[1] + 1):
        reach = mask[:, n - 1]
        if int(reach.sum()) < min_responses:
            break
        s = seq_log_ratio_sum(logp[reach], old[reach], mask[reach] & (positions < n))
        row = {"n": n, "var_sum": s.var().item(), "var_mean": (s / n).var().item(), "responses": int(reach.sum())}
        row["var_token"] = lw[reach, :n].var().item()  # pooled over the prefixes' tokens: per-token noise level
        rows.append(row)
    table = pd.DataFrame(rows)
    # in units of the per-token variance: ≈ n and ≈ 1/n if the token log-ratios were independent
    table["var_sum_per_token_var"] = table["var_sum"] / table["var_token"]
    table["var_mean_per_token_var"] = table["var_mean"] / table["var_token"]
    return table


def variance_growth(probe: Probe, k: int, n_from: int = 4) -> dict[str, float]:
    """How the prefix variances of :func:`prefix_ratio_variance` grow from prefix length ``n_from`` to the longest.

    ``sum_growth``: Var[Σ_{t<=n} log w] / Var_token at the longest prefix over the same at ``n_from`` (≈ n / n_from
    if token noise adds up independently). ``mean_growth``: the same for the length-normalised mean; it is
    sum_growth · (n_from / n)² by definition, reported, not a separate finding. The longest prefix is the longest
    that at least half of the responses reach, so both ends describe (mostly) the same responses.
    """
    table = prefix_ratio_variance(probe, k, min_responses=max(probe.mask.shape[0] // 2, 2))
    first, last = table.loc[table["n"] == n_from].iloc[0], table.iloc[-1]
    return {
        "n_from": n_from,
        "n_to": int(last["n"]),
        "sum_growth": last["var_sum_per_token_var"] / first["var_sum_per_token_var"],
        "mean_growth": last["var_mean_per_token_var"] / first["var_mean_per_token_var"],
    }


def routing_change(cfg: TrainConfig, updates: int = 1) -> pd.DataFrame:
    """GSPO §5.3 made visible: per MoE layer, the share of a rollout batch's valid (token, layer) top-k sets whose
    experts differ from π_old's after ``updates`` updates of ``cfg.objective`` (minibatches in turn).

    ``natural``: the experts π_θ's own forward uses (what GRPO's token ratios compare against π_old's);
    ``replayed``: the experts the forward under Routing Replay actually received (measured at the experts, not
    the router: :func:`gspo_lab.routing.experts_used`) — 0 when the replay reuses π_old's record. One row per
    layer, in model order, and a last row ``all`` over every layer.
    """
    if updates < 1:
        raise ValueError(f"updates must be >= 1, got {updates}")
    torch.set_num_threads(cfg.threads)
    state = init_state(cfg)
    if not state.is_moe:
        raise ValueError(f"routing_change needs an MoE checkpoint, {cfg.checkpoint!r} is dense")
    batch = collect(state)
    r = batch.data
    mask = torch.cat([r.prompt_mask, r.response_mask], 1)
    _, old = _score(state.model, r, True)
    for k in range(updates):
        update(state, batch, k % cfg.minibatches)
    _, natural = _score(state.model, r, True)
    with torch.no_grad(), replay_routing(state.model, old), experts_used(state.model) as used:
        rollout_logprobs(state.model, r)
    layers = [expert_change_frac_per_layer(old, x, mask).tolist() for x in (natural, used.indices)]
    table = pd.DataFrame({"layer": list(range(len(layers[0]))), "natural": layers[0], "replayed": layers[1]})
    total = {
        "layer": "all",
        "natural": expert_change_frac(old, natural, mask),
        "replayed": expert_change_frac(old, used.indices, mask),
    }
    return pd.concat([table, pd.DataFrame([total])], ignore_index=True)
