"""Mutants: for every notebook claim and every paper identity, a deliberately broken implementation that makes it fail.

A claim that still passes when the code it is about is broken checks nothing. :data:`MUTANTS` is one table: each
row names a claim, the library function that computes it (the same function the notebook calls, at small
parameters on the ``sweep-sort`` checkpoint, pinned seed), the piece to break (patched with pytest's
``monkeypatch`` where the code looks it up) and the broken replacement. The test runs the claim's computation
without and with the mutant and asserts the verdict flips from pass to fail. A crash is not a flip: nothing is
caught, the claim's own boolean is asserted.

    python tests/test_mutants.py --table     # run every row, print the claim → mutant → verdict table (Markdown)
"""

from __future__ import annotations

import copy
import functools
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import pytest
import torch

import gspo_lab.advantages as advantages
import gspo_lab.objectives as objectives
from gspo_lab.analysis import compare_objectives, offpolicy_trace, token_clip_vs_sequence_ratio, variance_growth
from gspo_lab.clipping import clip_runs, clip_summary
from gspo_lab.config import TrainConfig
from gspo_lab.gradients import (
    UNCLIPPED,
    gspo_token_identity,
    on_policy_gradient_gap,
    per_token_advantages,
    token_grad_weights,
    weight_profile,
)
from gspo_lab.objectives import GRPO_CLIP, GSPO_CLIP, OBJECTIVES
from gspo_lab.policy import rollout_logprobs
from gspo_lab.ratios import seq_log_ratio, seq_log_ratio_sum, tok_log_ratio
from gspo_lab.reductions import masked_sum
from gspo_lab.routing import record_routing, replay_routing
from gspo_lab.step import collect, init_state, update
from gspo_lab.tasks import get_task

import gspo_record.f2.search as f2_search  # isort: skip
import gspo_record.f2.remeasure as f2_remeasure  # isort: skip
import gspo_record.f10.why as f10_why  # isort: skip
import gspo_record.f11.successors as f11_successors  # isort: skip
import gspo_record.page  # noqa: F401  # isort: skip  (every rule registered)
import gspo_record.rules as rules  # isort: skip
from gspo_record.statements import Count  # isort: skip

# --- the broken pieces ------------------------------------------------------------------------------------------


def gspo_token_log_ratio_no_sg_s(logp, old_logp, mask):
    """Eq. 14 without sg[s_i]: log s_i keeps its gradient, so every token's gradient gets ∇ log s_i added."""
    out = seq_log_ratio(logp, old_logp, mask).unsqueeze(-1) + (logp - logp.detach())
    return out.where(mask, out.new_zeros(()))


def gspo_token_log_ratio_no_sg_pi(logp, old_logp, mask):
    """Eq. 14 without sg[π_θ(y_{i,t})] in the denominator: π/π = 1, the value of s_i with no gradient at all."""
    out = seq_log_ratio(logp, old_logp, mask).detach().unsqueeze(-1) + (logp - logp)
    return out.where(mask, out.new_zeros(()))


def tok_log_ratio_as_sequence(logp, old_logp, mask):
    """GRPO clipping the sequence ratio: every token of response i gets log s_i instead of its own log w_{i,t}."""
    out = seq_log_ratio(logp, old_logp, mask).unsqueeze(-1).expand_as(logp)
    return out.where(mask, out.new_zeros(()))


def masked_mean_over_padded_length(x, mask, dim=-1):
    """Padding leaking into the length normalisation: divides by the padded length T, not by |y_i|."""
    return masked_sum(x, mask, dim) / (mask.numel() if dim is None else mask.shape[dim])


def advantages_additive_guard(rewards, group_size, **_):
    """verl's guard: (r − mean) / (std + 1e-6), no exact zero, so float residue in a group becomes an advantage."""
    groups = rewards.to(torch.float64).view(-1, group_size)
    adv = (groups - groups.mean(-1, keepdim=True)) / (groups.std(-1, keepdim=True) + 1e-6)
    return adv.reshape(-1), None


def old_logp_is_current(get_objective):
    """A loop that reuses π_θ as π_old: every objective is called with old_logp = logp.detach() (all ratios 1)."""

    def patched(name):
        spec = get_objective(name)
        return lambda logp, old_logp, adv, mask, **kw: spec(logp, logp.detach(), adv, mask, **kw)

    return patched


def with_clip(name: str, clip):
    """The registry entry ``name`` with another objective's clip range (e.g. GSPO run with GRPO's ε: the pitfall)."""
    return replace(OBJECTIVES[name], clip=clip)


# --- the claims' computations (library functions, small parameters, pinned seed) -----------------------------

TRACE_CFG = TrainConfig(
    checkpoint="sweep-sort", length=12, prompts_per_rollout=8, group_size=8, minibatches=4, objective="grpo", seed=0
)
CLIP_CFG = replace(TRACE_CFG, prompts_per_rollout=4, group_size=8, rollouts=2, lr=3e-5)


@functools.cache
def _trace():
    """One off-policy trace (3 updates, a length-20 probe): raw material of the notebook claims, built unpatched."""
    return offpolicy_trace(TRACE_CFG, 3, probe_lengths=(20,))


@functools.cache
def _clip_summary_unpatched():
    return clip_summary(clip_runs(CLIP_CFG, ("grpo", "gspo"), progress=False))


def _clip_summary(patched: bool):
    return clip_summary(clip_runs(CLIP_CFG, ("grpo", "gspo"), progress=False)) if patched else _clip_summary_unpatched()


def nb00_on_policy_gradients_equal(patched: bool) -> bool:
    return on_policy_gradient_gap(_trace(), minibatch=16)["rel_gap"] <= 1e-4


def nb00_gspo_token_equals_gspo(patched: bool) -> bool:
    table = compare_objectives(_trace().train, 1)
    return abs(table.loc["gspo_token", "loss"] - table.loc["gspo", "loss"]) <= 1e-6


def nb00_gspo_clips_more(patched: bool) -> bool:
    clip = compare_objectives(_trace().train, 1)["clip/token_frac"]
    return clip["gspo"] - clip["grpo"] >= 0.1


def nb01_sum_grows(patched: bool) -> bool:
    return variance_growth(_trace().probes[20], 3, n_from=4)["sum_growth"] >= 3.0


def nb01_token_clip_unbounded(patched: bool) -> bool:
    bound = token_clip_vs_sequence_ratio(_trace().probes[20], 3, GRPO_CLIP.low, GRPO_CLIP.high)
    return bound["frac_sequence_outside"] > 0.0


def nb02_gspo_token_identity(patched: bool) -> bool:
    trace = _trace()
    out = gspo_token_identity(trace, 3, per_token_advantages(trace.train, get_task("sort")), minibatch=16, **UNCLIPPED)
    return out["max_abs_diff_sequence_adv"] <= 1e-6


def nb02_grpo_unequal_weights(patched: bool) -> bool:
    probe = _trace().probes[20]
    weights = token_grad_weights("grpo", probe.logp[3], probe.logp[0], probe.adv, probe.mask)
    return weight_profile(weights, probe.adv, probe.mask)["within_response_std"].mean() > 1e-4


def nb03_grpo_clips(patched: bool) -> bool:
    return _clip_summary(patched).loc["grpo", "clip/token_frac"] > 0.0


def nb03_gspo_clips_10x(patched: bool) -> bool:
    summary = _clip_summary(patched)
    gspo, grpo = summary.loc["gspo", "clip/token_frac"], summary.loc["grpo", "clip/token_frac"]
    return grpo > 0 and gspo / grpo >= 10.0


def nb03_grpo_rarely_clips(patched: bool) -> bool:
    return _clip_summary(patched).loc["grpo", "clip/token_frac"] <= 0.05


ROUTING_CFG = replace(TRACE_CFG, prompts_per_rollout=4, lr=1e-3)


@functools.cache
def _routing_unpatched():
    from gspo_lab.analysis import routing_change

    return routing_change(ROUTING_CFG, updates=1)


def _routing(patched: bool):
    from gspo_lab.analysis import routing_change

    table = routing_change(ROUTING_CFG, updates=1) if patched else _routing_unpatched()
    return table[table["layer"] == "all"].iloc[0]


def nb04_routing_moves(patched: bool) -> bool:
    return _routing(patched)["natural"] > 0.0


def nb04_replay_exact(patched: bool) -> bool:
    return _routing(patched)["replayed"] <= 0.0


def update_that_never_steps(state, batch, m):
    """An update that computes nothing and moves no weight."""
    return {}


def replay_another_record(replay):
    """Routing Replay fed the record of the next response in the batch (a misaligned cache)."""
    return lambda model, indices: replay(model, indices.roll(1, dims=0))


def _precursor_runs() -> list[dict]:
    """Synthetic per-rollout runs: 4 collapse at rollout 30 with a signal up 10x from rollout 12; 4 stable, two of
    them with a transient reward dip (rollouts 20-24) and no signal."""

    def run(collapse, spike, dip=False):
        reward = [0.05 if (collapse and t >= 30) or (dip and 20 <= t < 25) else 0.5 for t in range(40)]
        return {"reward/mean:mean": reward, "s": [10.0 if spike and t >= 12 else 1.0 for t in range(40)]}

    return [run(True, True) for _ in range(4)] + [run(False, False, dip=i < 2) for i in range(4)]


def precursors_rising_signal_warns(patched: bool) -> bool:
    from gspo_lab.precursors import AlarmRule, score

    row = score(_precursor_runs(), [AlarmRule("s", 3.0)]).iloc[0]
    return row["warned"] == row["collapsing"] == 4 and row["false_alarms"] == 0 and row["stable"] == 4


def onset_without_tail(reward):
    """A collapse onset at the first rollout below half the start, whether or not the reward comes back."""
    import numpy as np

    r = np.asarray(reward, dtype=float)
    below = np.flatnonzero(r[5:] < 0.5 * r[:5].mean())
    return int(below[0]) + 5 if len(below) else None


PRECISION_CFG = replace(TRACE_CFG, prompts_per_rollout=8)


def _mismatch(precision: str):
    from gspo_lab.precision import sampler_mismatch

    return sampler_mismatch(PRECISION_CFG, precision)


def nb05_bf16_mismatch_real(patched: bool) -> bool:
    from gspo_lab.precision import mismatch_stats

    return mismatch_stats(_mismatch("bf16"))["tok_mean"] / mismatch_stats(_mismatch("fp32"))["tok_mean"] >= 100.0


def nb05_seq_tail_lighter(patched: bool) -> bool:
    from gspo_lab.precision import mismatch_stats

    stats = mismatch_stats(_mismatch("bf16"))
    return stats["seq_p99"] / stats["tok_p99"] < 1.0


def nb05_gspo_clips_before_any_update(patched: bool) -> bool:
    from gspo_lab.precision import first_update_clip

    return first_update_clip(_mismatch("bf16"))["gspo"]["clip/token_frac"] >= 0.05


def _topk(replay: bool):
    from gspo_lab.precision import sampler_mismatch

    return sampler_mismatch(replace(PRECISION_CFG, top_k=2), "fp32", replay=replay)


def nb05_topk_biases_gspo(patched: bool) -> bool:
    from gspo_lab.precision import first_update_clip

    return first_update_clip(_topk(False))["gspo"]["clip/token_frac"] >= 0.1


def nb05_replay_restores_ratio_one(patched: bool) -> bool:
    return float(_topk(True).delta.abs().max()) <= 1e-4


def nb05_batch_composition_small(patched: bool) -> bool:
    from gspo_lab.precision import batch_composition, mismatch_stats, sampler_mismatch

    composition = mismatch_stats(batch_composition(PRECISION_CFG, (1, 8), "bf16"))["seq_outside_gspo"]
    return composition / mismatch_stats(sampler_mismatch(PRECISION_CFG, "bf16"))["seq_outside_gspo"] <= 0.25


def micro_reversed(original):
    """Micro-batches reassembled in the wrong order: each micro-batch's rows scored, then concatenated reversed."""

    def micro(data, rows):
        ids, pmask, rids, rmask = original(data, rows)
        flip = torch.arange(ids.shape[0] - 1, -1, -1)
        return ids, pmask, rids[flip], rmask[flip]

    return micro


def renormalised_not(logp_all, keep):
    """A top-k sampler that returns its kept tokens' log-probs as they were, not renormalised over them."""
    return logp_all.masked_fill(~keep, -torch.inf)


def logprobs_ignoring_replay(original):
    """A trainer that scores the whole vocabulary whatever the replay flag says (sampling replay not applied)."""

    def rollout_logprobs(*args, replay=False, **kwargs):
        return original(*args, **kwargs)

    return rollout_logprobs


def nb05_grpo_barely_clips_before_any_update(patched: bool) -> bool:
    from gspo_lab.precision import first_update_clip

    return first_update_clip(_mismatch("bf16"))["grpo"]["clip/token_frac"] <= 0.01


@functools.cache
def _lag_table():
    from gspo_record.f12.curves import lag_curves

    return lag_curves(seeds="search")


def _lag_late() -> tuple[dict, dict]:
    """Notebook 05's stale and synchronous late means (at the largest stored lag and at lag 0)."""
    from gspo_record.f12.curves import lag_readout, stored_lags

    numbers = lag_readout(_lag_table(), stored_lags(_lag_table())[-1])
    return numbers["lag"], numbers["zero"]


def nb05_stale_spread_grows(patched: bool) -> bool:
    stale, sync = _lag_late()
    key = "ratio/tok_log_std:mean"
    return stale["grpo/behaviour"][key] / sync["grpo/behaviour"][key] >= 2.0


def nb05_gspo_clips_stale_tokens(patched: bool) -> bool:
    stale, sync = _lag_late()
    key = "clip/token_frac:mean"
    return stale["gspo/behaviour"][key] - sync["gspo/behaviour"][key] >= 0.2


def nb05_gspo_clip_rises_in_both_units(patched: bool) -> bool:
    from gspo_lab.experiments.store import cached
    from gspo_record.f12.clip_lag import at, clip_by_lag

    with cached():
        table = clip_by_lag()
    top = int(table["lag"].max())
    gaps = [at(table, "gspo/behaviour", top, u)["lo"] - at(table, "gspo/behaviour", 0, u)["hi"] for u in ("tokens",
            "responses")]  # fmt: skip
    return min(gaps) >= 0.1


def runs_all_from_lag_zero(original):
    """Finding 12's runs with every lag's rows replaced by the synchronous (lag-0) runs (the lag ignored)."""

    def runs():
        import pandas as pd

        t = original()
        zero = t[t["lag"] == 0]
        return pd.concat([zero.assign(lag=d) for d in sorted(set(t["lag"]))], ignore_index=True)

    return runs


def _design_readouts() -> dict:
    """Notebook 06's readouts (gspo_lab.design.readout) on the trace's training batch after its 3 updates."""
    from gspo_lab.design import PRESETS, readout

    p = _trace().train
    return {n: readout(PRESETS[n].design, p.logp[3], p.logp[0], p.adv, p.mask) for n in ("GRPO", "CISPO (TRL)", "SAPO")}


def nb06_soft_bounds_keep_out_of_band(patched: bool) -> bool:
    r = _design_readouts()
    return min(r["CISPO (TRL)"]["kept"], r["SAPO"]["kept"]) >= 0.9


def nb06_grpo_drops_out_of_band(patched: bool) -> bool:
    return _design_readouts()["GRPO"]["kept"] <= 0.4


def nb06_presets_equal_library(patched: bool) -> bool:
    from gspo_lab.design import preset_gap

    p = _trace().train
    return max(preset_gap(p.logp[3], p.logp[0], p.adv, p.mask).values()) <= 1e-9


def nb06_soft_bounds_collapse_under_cap(patched: bool) -> bool:
    from gspo_lab.experiments.store import cached
    from gspo_record.f11.dies import collapsed_share, death_table

    with cached():
        return collapsed_share(death_table(), "(b)", ("cispo", "sapo")) >= 0.8


def term_that_masks_soft_bounds(original):
    """A cap and a gate that zero the tokens outside the ε band, as MiniMax-M1's mask does (what they never do)."""

    def term(d, log_r, adv, logp, mask):
        return original(replace(d, bound="mask") if d.bound in ("cap", "gate") else d, log_r, adv, logp, mask)

    return term


def clip_that_never_binds(log_r, adv, eps_low, eps_high, clip_c=None):
    """The clipped surrogate without its clip: r Â, plain importance sampling."""
    return log_r.exp() * adv


def _lag_zero_rows(table, lag):
    """The mutant's reading: every lag's late means from the lag-0 runs (the lag ignored)."""
    return table[table["lag"] == 0]


# --- the paper's identities (unit tier: a bigram policy, hand-built batch) -------------------------------------


def _bigram_batch():
    from conftest import BigramPolicy  # tests/conftest.py, on sys.path under pytest and when run as a script

    g = torch.Generator().manual_seed(1)
    policy, B, T = BigramPolicy(), 8, 9
    tokens = torch.randint(0, 7, (B, T + 1), generator=g)
    mask = torch.arange(T)[None, :] < torch.tensor([9, 3, 5, 1, 7, 9, 2, 6])[:, None]
    with torch.no_grad():
        old_logp = policy(tokens) + 0.2 * torch.randn(B, T, generator=g, dtype=torch.float64)
    return policy, tokens, old_logp, mask


def _param_grad(name, policy, tokens, old_logp, adv, mask, **eps):
    policy.zero_grad()
    loss, _ = objectives.get_objective(name)(policy(tokens), old_logp, adv, mask, **eps)
    loss.backward()
    return loss.detach(), policy.W.grad.clone()


def unit_gspo_token_equals_gspo(patched: bool) -> bool:
    policy, tokens, old_logp, mask = _bigram_batch()
    adv, _ = advantages.group_advantages(torch.tensor([1.0, 0, 0, 1, 0, 0, 1, 1], dtype=torch.float64), 4)
    eps = dict(eps_low=0.05, eps_high=0.05)  # a band that clips some responses and not others
    (l1, g1), (l2, g2) = (_param_grad(n, policy, tokens, old_logp, adv, mask, **eps) for n in ("gspo", "gspo_token"))
    return bool((l1 - l2).abs() <= 1e-12 and (g1 - g2).abs().max() <= 1e-12)


def unit_on_policy_gradients_coincide(patched: bool) -> bool:
    policy, tokens, _, mask = _bigram_batch()
    with torch.no_grad():
        on_policy = policy(tokens)
    adv, _ = advantages.group_advantages(torch.tensor([1.0, 0, 0, 1, 0, 0.5, 1, 1], dtype=torch.float64), 4)
    _, g_grpo = _param_grad("grpo", policy, tokens, on_policy, adv, mask)
    _, g_gspo = _param_grad("gspo", policy, tokens, on_policy, adv, mask)
    return bool((g_grpo - g_gspo).abs().max() <= 1e-12)


def unit_padding_never_changes_s(patched: bool) -> bool:
    _, _, old_logp, mask = _bigram_batch()
    logp = old_logp + 0.1 * torch.randn(old_logp.shape, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    pad = torch.full((mask.shape[0], 3), 123.0, dtype=torch.float64)
    mask_p = torch.cat([mask, torch.zeros(mask.shape[0], 3, dtype=torch.bool)], 1)
    padded = seq_log_ratio(torch.cat([logp, pad], 1), torch.cat([old_logp, -pad], 1), mask_p)
    return bool((padded - seq_log_ratio(logp, old_logp, mask)).abs().max() <= 1e-12)


def unit_zero_variance_group_zero_gradient(patched: bool) -> bool:
    policy, tokens, old_logp, mask = _bigram_batch()
    rewards = torch.tensor([0.1 + 0.2, 0.3, 0.3, 0.3, 0, 1, 0, 1], dtype=torch.float64)  # group 0: float residue only
    adv, _ = advantages.group_advantages(rewards, 4)
    logp = policy(tokens).detach().requires_grad_()
    loss, _ = objectives.get_objective("gspo")(logp, old_logp, adv, mask, eps_low=0.5, eps_high=0.5)
    loss.backward()
    return bool(torch.count_nonzero(logp.grad[:4]) == 0 and torch.count_nonzero(logp.grad[4:]) > 0)


def unit_advantages_unit_std(patched: bool) -> bool:
    adv, _ = advantages.group_advantages(torch.tensor([1.0, 0, 0, 0, 1, 1, 0, 1]), 4)
    groups = adv.view(-1, 4).double()
    return bool(groups.mean(-1).abs().max() <= 1e-6 and (groups.std(-1) - 1).abs().max() <= 1e-6)


def unit_routing_replay_uses_old_experts(patched: bool) -> bool:
    """The loop's update under Routing Replay computes exactly the log-probs of a forward through π_old's experts."""
    state = init_state(replace(TRACE_CFG, prompts_per_rollout=4, routing_replay=True, lr=3e-2, grad_clip=None))
    state.ratios = []
    batch = collect(state)
    update(state, batch, 0)  # a large step: the router's choice moves
    before = copy.deepcopy(state.model)
    update(state, batch, 1)
    rows = batch.minibatches[1]
    with torch.no_grad(), replay_routing(before, batch.old_routing[1]):
        replayed = rollout_logprobs(before, batch.data, rows)[0]
    with torch.no_grad(), record_routing(before) as natural:
        rollout_logprobs(before, batch.data, rows)
    assert not torch.equal(natural.indices, batch.old_routing[1]), "the step did not move the routing: no test"
    mask = state.ratios[-1]["mask"]
    used = state.ratios[-1]["tok_log_ratio"] + batch.old_logp[1]
    return bool((used - replayed).where(mask, 0.0).abs().max() <= 1e-5)


# --- the findings page's verdict rules (their cases in tests/test_rules.py; broken pieces below) -------------------


def sign_of_mean(values, bounds=None) -> int:
    """interval_sign without the interval: the sign of the mean decides (a difference of noise reads as an effect)."""
    values = [float(v) for v in values]
    return 0 if not values else int(np.sign(np.mean(values)))


def collapsed_survivors(k: int, n: int):
    """The shared collapse count made of the runs that survived (the collapsed column read the wrong way round)."""
    from gspo_record.f2.collapse import Count

    return Count(n - k, n, rules.COLLAPSES_AT_LEAST, rules.STABLE_AT_MOST)


def map_verdict_by_counts(points):
    """The map's rule comparing collapsed counts, not fractions (arms with different seed counts compared raw)."""
    if (points["k"]["gspo"] > points["k"]["grpo"]).any():
        return f2_search.MAP.verdict("mixed")
    return f2_search.MAP.verdict("boundary" if points["k"]["gspo"].sum() > 0 else "immune")


def separation_by_means(variant, base) -> int:
    """Finding 3's separation read from the means alone (the ±10 % reading the page used to make, without a band)."""
    return 1 if variant.mean() > base.mean() else (-1 if variant.mean() < base.mean() else 0)


def premise_without_floor(o):
    """§5.4's premise checked on the bf16 mismatch alone, ignoring whether the fp32 floor is as large (one cold
    start's reading of its two intervals)."""
    return "above" if o["bf16"] == "above" else ("below" if o["bf16"] == "below" else "mixed")


def confirm_any_sign(o):
    """A confirmation that counts any interval excluding 0 on the fresh seeds, whatever its sign."""
    if o["first seeds"] == "none":
        return "nothing"
    return "confirmed" if o["fresh seeds"] != "none" else "not"


def qualifies_at_the_shortest_length_only(shortest, gspo):
    """f6c.regime's criterion without its second half: GSPO's collapses at the longer lengths are not read."""
    return "qualifies" if shortest == "at_most" else "fails"


def trend_without_interval(table, x="length", y="noise_ratio_kK"):
    """The slope of ``y`` against log2(``x``) with no interval: its sign decides."""
    slope = float(np.polyfit(np.log2(table[x].to_numpy(float)), table[y].to_numpy(float), 1)[0])
    return slope, slope, slope


def bootstrap_without_resampling(values, bounds=None):
    """An "interval" that is the mean twice."""
    m = float(np.mean(list(values)))
    return m, m


def position_before_issue_35(d_grpo: str, d_gspo: str) -> str:
    """f11.position as read until issue 35: "like GRPO" checked before "below GRPO", so an objective below both read
    "like GRPO (below GSPO, not shown above GRPO)" beside an interval below GRPO (on the intervals' outcomes)."""
    if d_gspo == "above":
        return "above_gspo"
    if d_grpo == "above":
        return "gspo_like" if d_gspo == "none" else "between"
    if d_gspo == "below":
        return "grpo_like"
    return "below_grpo" if d_grpo == "below" else "unresolved"


def version_3_interval(values, bounds=None) -> tuple[float, float]:
    """Stats version 3's bootstrap-t interval in place of the page's on the declared range (see version_3_sign)."""
    from gspo_lab.experiments.stats import bootstrap_t_ci

    return bootstrap_t_ci(list(values))


def version_3_sign(values, bounds=None) -> int:
    """Stats version 3's bootstrap-t sign in place of the page's interval on the declared range (a reading whose spec
    declared Student-t, read from version 4 with transformed t): it reads the t-edge case (tests/test_rules.py's EDGE,
    all seeds above 0, transformed t and Student-t across 0) as above 0."""
    from gspo_lab.experiments.stats import bootstrap_t_ci

    lo, hi = bootstrap_t_ci(list(values))
    return 1 if lo > 0 else (-1 if hi < 0 else 0)


def robust_by_rule_name(declared, two):
    """Robustness judged by the verdicts' rule names instead of their outcomes: never flips."""
    return f2_remeasure.ROBUST.verdict("same" if declared.rule == two.rule else "flips")


def two_by_two_any(o: dict) -> str:
    """The 2×2 read with *any* instead of *both* norm (direction) effects above 0 (on its effects' outcomes)."""
    norm = any(v == "above" for k, v in o.items() if k.startswith("norm"))
    direction = any(v == "above" for k, v in o.items() if k.startswith("direction"))
    return {(True, True): "both", (True, False): "size", (False, True): "content", (False, False): "neither"}[
        (norm, direction)
    ]


def account_two_by_two_only(two_by_two: str, skip_shrink: str, relative: str) -> str:
    """f10.account reading content from the 2×2 alone (on its parts' outcomes)."""
    size, content = two_by_two in ("size", "both"), two_by_two in ("content", "both")
    return {(True, True): "both", (True, False): "size", (False, True): "content", (False, False): "neither"}[
        (size, content)
    ]


#: an interval's outcome for the difference taken the other way round
_OTHER_WAY = {"above": "below", "below": "above", "none": "none"}


def mean_point(values, bounds=None) -> tuple[float, float]:
    """The mean as its own interval: a difference read by the sign of its mean (no interval)."""
    m = float(sum(values) / len(values))
    return m, m


def _rule_check(rule: str, what: str):
    def check(patched: bool) -> bool:
        import test_rules

        return test_rules.outcome_of(rule, what) == test_rules.expected(rule, what)

    return check


def _rule(rule, what, target, replacement, mutant):
    return Mutant(f"rule: {rule}", f"findings rule on the synthetic case '{what}' (tests/test_rules.py)", target,
                  replacement, mutant, _rule_check(rule, what))  # fmt: skip


RULE_MUTANTS: list = []  # filled below, after the Mutant dataclass


def nb05_product_mask_biased_by_length(patched: bool) -> bool:
    from gspo_lab.corrections import masked_at_length
    from gspo_lab.precision import stale_mismatch

    cfg = TrainConfig(checkpoint="sweep-addfmt-L7", task="add_format", length=7, prompts_per_rollout=32, group_size=8,
                      minibatches=8, lr=3e-5, seed=0)  # fmt: skip
    m = stale_mismatch(cfg, (8,))[8]
    matched = 3.0 ** (1 / 64)
    modes = {"product": ("sequence_mask", 1 / 3, 3.0), "geometric": ("sequence_geo_mask", 1 / matched, matched)}
    rows = masked_at_length(m.train_logp, m.sampler_logp, m.mask, modes, [8, 64], torch.Generator().manual_seed(0))
    rate = {(r["length"], r["name"]): r["masked"] for r in rows}
    rise = {n: rate[(64, n)] - rate[(8, n)] for n in modes}
    return rise["product"] - rise["geometric"] >= 0.03


def product_read_as_mean(original):
    def broken(old, sampler, mask, mode, clip_min, clip_max):
        return original(
            old, sampler, mask, "sequence_geo_mask" if mode == "sequence_mask" else mode, clip_min, clip_max
        )

    return broken


def nb02_kl_weight_adds_k3(patched: bool) -> bool:
    from gspo_lab.gradients import kl_weight_report

    return kl_weight_report(replace(TRACE_CFG, beta=0.04, lr=3e-5), 1)["identity"] <= 1e-4


def kl_weight_dropped(original):
    def broken(logp, ref_logp, mask, *, old_logp=None, level="token"):
        return original(logp, ref_logp, mask)

    return broken


def nb05_r3_removes_routing_mismatch(patched: bool) -> bool:
    from gspo_lab.precision import mismatch_stats, routing_mismatch

    out = routing_mismatch(TrainConfig(checkpoint="moe-sort", length=12, prompts_per_rollout=32, group_size=8), "bf16")
    return mismatch_stats(out["r3"])["tok_mean"] / mismatch_stats(out["plain"])["tok_mean"] <= 0.98


def replay_that_records(original):
    from gspo_lab.routing import record_routing

    return lambda model, indices: record_routing(model)


# --- the one table -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mutant:
    claim: str  # notebook:claim name, or "identity: …" for a unit-tier paper identity
    computes: str  # what the check computes, via which library function
    target: str  # "module.attr" (setattr) or "module.DICT[key]" (setitem), where the code looks the piece up
    replacement: Callable  # (original) -> the broken piece
    mutant: str  # what is broken, in words
    check: Callable[[bool], bool]  # the claim's verdict; the argument says whether a mutant is active


def _same(new):
    return lambda _original: new


MUTANTS: list[Mutant] = [
    Mutant("00:on_policy_gradients_equal", "gradients.on_policy_gradient_gap ≤ 1e-4 (∇θ grpo, gspo, gspo_token at θ_0)",
           "gspo_lab.objectives.sequence.seq_log_ratio", _same(seq_log_ratio_sum),
           "GSPO without the 1/|y_i| of Eq. 7 (sum of token log-ratios)", nb00_on_policy_gradients_equal),
    Mutant("00:gspo_token_equals_gspo", "analysis.compare_objectives: |loss GSPO-token − GSPO| ≤ 1e-6, 1 update",
           "gspo_lab.objectives.sequence.gspo_token_log_ratio", _same(tok_log_ratio),
           "GSPO-token built from the token ratio w_{i,t} instead of sg[s_i]·π/sg[π]", nb00_gspo_token_equals_gspo),
    Mutant("00:gspo_clips_more", "analysis.compare_objectives: clip/token_frac GSPO − GRPO ≥ 0.1 after 1 update",
           "gspo_lab.objectives.OBJECTIVES['gspo']", _same(with_clip("gspo", GRPO_CLIP)),
           "GSPO run with GRPO's ε = (0.2, 0.27) (the pitfall)", nb00_gspo_clips_more),
    Mutant("01:sum_grows", "analysis.variance_growth: Var[Σ_{t≤n} log w]/Var_tok ≥ 3× from n = 4 (L = 20)",
           "gspo_lab.analysis.seq_log_ratio_sum", _same(seq_log_ratio),
           "the true sequence ratio taken as GSPO's mean log-ratio", nb01_sum_grows),
    Mutant("01:token_clip_unbounded", "analysis.token_clip_vs_sequence_ratio: Π w outside for some in-band responses",
           "gspo_lab.analysis.seq_log_ratio_sum", _same(seq_log_ratio),
           "the true sequence ratio taken as GSPO's mean log-ratio", nb01_token_clip_unbounded),
    Mutant("02:gspo_token_identity", "gradients.gspo_token_identity: max |∇ GSPO-token − ∇ GSPO| ≤ 1e-6 at θ_3",
           "gspo_lab.objectives.sequence.gspo_token_log_ratio", _same(gspo_token_log_ratio_no_sg_s),
           "GSPO-token without the stop-gradient sg[s_i] of Eq. 14", nb02_gspo_token_identity),
    Mutant("02:grpo_unequal_weights", "gradients.token_grad_weights + weight_profile: GRPO within-response std > 1e-4",
           "gspo_lab.objectives.clipped_token.tok_log_ratio", _same(tok_log_ratio_as_sequence),
           "GRPO clipping and weighting by the sequence ratio s_i", nb02_grpo_unequal_weights),
    Mutant("03:grpo_clips", "clipping.clip_runs + clip_summary: GRPO clip/token_frac > 0 (updates k ≥ 1)",
           "gspo_lab.step.get_objective", old_logp_is_current,
           "a loop that reuses π_θ as π_old (old_logp = logp.detach())", nb03_grpo_clips),
    Mutant("03:gspo_clips_10x", "clipping.clip_runs + clip_summary: GSPO / GRPO clip/token_frac ≥ 10, GRPO > 0",
           "gspo_lab.objectives.OBJECTIVES['gspo']", _same(with_clip("gspo", GRPO_CLIP)),
           "GSPO run with GRPO's ε = (0.2, 0.27) (the pitfall)", nb03_gspo_clips_10x),
    Mutant("03:grpo_rarely_clips", "clipping.clip_runs + clip_summary: GRPO clip/token_frac ≤ 0.05",
           "gspo_lab.objectives.OBJECTIVES['grpo']", _same(with_clip("grpo", GSPO_CLIP)),
           "GRPO run with GSPO's ε = (3e-4, 4e-4)", nb03_grpo_rarely_clips),
    Mutant("04:routing_moves", "analysis.routing_change: share of top-k sets changed after one update > 0",
           "gspo_lab.analysis.update", _same(update_that_never_steps), "an update that never steps",
           nb04_routing_moves),
    Mutant("04:replay_exact", "analysis.routing_change: share changed under Routing Replay (at the experts) = 0",
           "gspo_lab.analysis.replay_routing", replay_another_record,
           "Routing Replay fed another response's record", nb04_replay_exact),
    Mutant("precursors: a signal rising 18 rollouts ahead warns every collapse, no stable run",
           "precursors.score on synthetic runs (two stable ones with a transient reward dip)",
           "gspo_lab.precursors.onset", _same(onset_without_tail),
           "a collapse onset that ignores whether the reward comes back", precursors_rising_signal_warns),
    Mutant("05:bf16_mismatch_real", "precision.sampler_mismatch + mismatch_stats: mean |Δ| bf16 ÷ fp32 ≥ 100",
           "gspo_lab.precision.SAMPLERS['bf16']", _same("sampler"),
           "the inference engine scored in fp32 (both engines at the same precision)", nb05_bf16_mismatch_real),
    Mutant("05:seq_tail_lighter", "precision.mismatch_stats: p99 |mean_t Δ| ÷ p99 |Δ| per token < 1 (bf16)",
           "gspo_lab.precision.masked_mean", _same(masked_sum),
           "the per-sequence mismatch summed (the true sequence ratio) instead of GSPO's mean", nb05_seq_tail_lighter),
    Mutant("05:gspo_clips_before_any_update", "precision.first_update_clip: GSPO clip/token_frac at k = 0 ≥ 0.05",
           "gspo_lab.objectives.OBJECTIVES['gspo']", _same(with_clip("gspo", GRPO_CLIP)),
           "GSPO run with GRPO's ε = (0.2, 0.27) (the pitfall)", nb05_gspo_clips_before_any_update),
    Mutant("05:grpo_barely_clips_before_any_update", "precision.first_update_clip: GRPO clip/token_frac, k = 0 ≤ 0.01",
           "gspo_lab.objectives.OBJECTIVES['grpo']", _same(with_clip("grpo", GSPO_CLIP)),
           "GRPO run with GSPO's ε = (3e-4, 4e-4)", nb05_grpo_barely_clips_before_any_update),
    Mutant("05:batch_composition_small", "precision.batch_composition: responses outside GSPO's band from "
           "micro-batches 1 vs 8 in bf16 ÷ from the bf16 sampler ≤ 0.25", "gspo_lab.precision._micro", micro_reversed,
           "a micro-batch's responses scored against another row's prompt (rows misaligned)",
           nb05_batch_composition_small),
    Mutant("05:product_mask_biased_by_length", "corrections.masked_at_length on precision.stale_mismatch (8 updates): "
           "rise of the dropped share from 8 to 64 tokens, product [1/3, 3] − matched geometric ≥ 0.03",
           "gspo_lab.corrections._log_rho", product_read_as_mean,
           "a product mask that reads the geometric mean of the token ratios", nb05_product_mask_biased_by_length),
    Mutant("05:r3_removes_routing_mismatch", "precision.routing_mismatch (moe-sort, 32 prompts, bf16 sampler): mean "
           "per-token |Δ| with R3 ÷ without ≤ 0.98", "gspo_lab.routing.replay_routing", replay_that_records,
           "a replay that routes through the trainer's own experts", nb05_r3_removes_routing_mismatch),
    Mutant("02:kl_weight_adds_k3", "penalties.kl_weight_gradient on-policy: the weight's added gradient equals "
           "k3 / (|y| B) (token) and mean k3 / (|y| B) (sequence), relative error ≤ 1e-4",
           "gspo_lab.penalties.kl_penalty", kl_weight_dropped,
           "a KL term that drops TRL's ratio weight (use_bias_correction_kl read as off)", nb02_kl_weight_adds_k3),
    Mutant("05:topk_biases_gspo", "precision.first_update_clip: GSPO clip/token_frac at k = 0 ≥ 0.1, π_old = a top-2 "
           "sampler's log-probs", "gspo_lab.rollout.renormalised", _same(renormalised_not),
           "a top-k sampler whose log-probs are not renormalised over the kept tokens", nb05_topk_biases_gspo),
    Mutant("05:replay_restores_ratio_one", "precision.sampler_mismatch(replay=True): largest |log w| at k = 0 ≤ 1e-4",
           "gspo_lab.policy.rollout_logprobs", logprobs_ignoring_replay,
           "a trainer that ignores the sampler's kept tokens", nb05_replay_restores_ratio_one),
    Mutant("05:stale_spread_grows", "f12 lag_readout: GRPO (behaviour) log-ratio spread, largest lag ÷ 0 ≥ 2",
           "gspo_record.f12.curves._at_lag", _same(_lag_zero_rows),
           "every lag read from the synchronous (lag-0) runs", nb05_stale_spread_grows),
    Mutant("05:gspo_clips_stale_tokens", "f12 lag_readout: GSPO (behaviour) clipped tokens, largest lag − 0 ≥ 0.2",
           "gspo_record.f12.curves._at_lag", _same(_lag_zero_rows),
           "every lag read from the synchronous (lag-0) runs", nb05_gspo_clips_stale_tokens),
    Mutant("05:gspo_clip_rises_in_both_units", "f12.clip_lag.clip_by_lag: GSPO's intervals at the top lag and at 0 "
           "apart by ≥ 0.1, tokens and responses", "gspo_record.f12.clip_lag._runs", runs_all_from_lag_zero,
           "every lag read from the synchronous (lag-0) runs", nb05_gspo_clip_rises_in_both_units),
    Mutant("06:soft_bounds_keep_out_of_band", "design.readout: CISPO (TRL), SAPO out-of-band tokens keeping a "
           "gradient ≥ 0.9", "gspo_lab.design._term", term_that_masks_soft_bounds,
           "a cap and a gate that zero out-of-band tokens (the mask in their place)",
           nb06_soft_bounds_keep_out_of_band),
    Mutant("06:grpo_drops_out_of_band", "design.readout: GRPO out-of-band tokens keeping a gradient ≤ 0.4",
           "gspo_lab.design.clipped_surrogate", _same(clip_that_never_binds), "a clip that never binds (r Â)",
           nb06_grpo_drops_out_of_band),
    Mutant("06:presets_equal_library", "design.preset_gap: every preset's point = its library objective, ≤ 1e-9",
           "gspo_lab.design.masked_mean", _same(masked_sum),
           "the geometric combination summed (the product: Eq. 7 without 1/|y_i|)", nb06_presets_equal_library),
    Mutant("06:soft_bounds_collapse_under_cap", "f11.dies.death_table: CISPO and SAPO collapsed share in regime (b) "
           "≥ 0.8", "gspo_record.f11.dies.COLLAPSED", _same("frozen"),
           "frozen runs counted as the collapsed ones", nb06_soft_bounds_collapse_under_cap),
    Mutant("identity: GSPO-token ≡ GSPO (value, ∇θ), sequence Â", "objectives gspo, gspo_token on a bigram policy",
           "gspo_lab.objectives.sequence.gspo_token_log_ratio", _same(gspo_token_log_ratio_no_sg_pi),
           "GSPO-token without sg[π_θ(y_{i,t})] (Eq. 14): no per-token gradient path", unit_gspo_token_equals_gspo),
    Mutant("identity: GRPO ∇θ = GSPO ∇θ on-policy", "objectives grpo, gspo on a bigram policy, π_old = π_θ",
           "gspo_lab.objectives.OBJECTIVES['gspo']", _same(replace(OBJECTIVES["gspo"], fn=objectives.gspo_token_mean)),
           "GSPO aggregated by token-mean (each response weighted by its length)", unit_on_policy_gradients_coincide),
    Mutant("identity: padding never changes s_i", "ratios.seq_log_ratio with 3 garbage padding columns",
           "gspo_lab.ratios.masked_mean", _same(masked_mean_over_padded_length),
           "padding leaking into the length normalisation (÷ T, not ÷ |y_i|)", unit_padding_never_changes_s),
    Mutant("identity: zero-variance group ⇒ zero gradient", "advantages.group_advantages → gspo, float-residue group",
           "gspo_lab.advantages.group_advantages", _same(advantages_additive_guard),
           "std guard std + 1e-6 (verl) instead of an exact zero", unit_zero_variance_group_zero_gradient),
    Mutant("identity: Â has mean 0, std 1 per group (Eq. 6)", "advantages.group_advantages on 0/1 rewards",
           "gspo_lab.advantages.group_advantages", lambda original: functools.partial(original, scale="none"),
           "advantages without the std division", unit_advantages_unit_std),
    Mutant("identity: Routing Replay routes π_θ via π_old's experts", "step.update vs a replayed forward",
           "gspo_lab.step.replay_routing", _same(lambda model, indices: record_routing(model)),
           "Routing Replay that replays nothing (records instead)", unit_routing_replay_uses_old_experts),
]  # fmt: skip


RULE_MUTANTS += [
    _rule("f1.clip_ratio", "ratios ~105", "gspo_record.f1.clipping.REPRODUCED_RATIO", _same(300.0),
          "the reproduced threshold typed as 300 instead of 30"),
    _rule("f1.accuracy", "interval across 0", "gspo_record.f1.clipping.seed_interval",
          _same(bootstrap_without_resampling), "an interval that is the mean twice (the sign of the mean decides)"),
    _rule("collapse.class", "1/5", "gspo_record.rules.STABLE_AT_MOST", _same(0),
          '"does not collapse" as 0/5 in one place and <= 1/5 in another'),
    _rule("f2.collapse", "GRPO 5/5, GSPO 1/5 (the target needs 0)", "gspo_record.f2.collapse.TARGET_GSPO_AT_MOST",
          _same(1), "the target's GSPO bound loosened from 0 to 1 of 5"),
    _rule("f2.dense", "4/5", "gspo_record.f2.collapse.collapsed", _same(collapsed_survivors),
          "the collapsed column read as the surviving runs"),
    _rule("f2.search", "clip 1, M 16", "gspo_record.f2.search.TARGET_MAX_MINIBATCHES", _same(16),
          "the target setting's M <= 8 widened to 16"),
    _rule("f2.map", "GSPO collapses, never more often (rates, not counts)", "gspo_record.f2.search.map_verdict",
          _same(map_verdict_by_counts), "the map compares collapsed counts, not fractions"),
    _rule("f2.target", "GRPO 4/5, GSPO 1/5", "gspo_record.f2.candidate.TARGET_GSPO_AT_MOST", _same(1),
          "the target's GSPO bound loosened from 0 to 1 of 5"),
    _rule("f2e.dual_clip", "0/5 but peak 150", "gspo_record.f2.interventions.PEAK_GSPO_RANGE", _same(1e12),
          "dual-clip's declared condition on the largest norm dropped"),
    _rule("f2e.clip10", "4/5", "gspo_record.f2.collapse.COLLAPSES_AT_LEAST", _same(5),
          'the declared ">= 4 of 5" written as ">= 5 of 5"'),
    _rule("f2e.clip30", "1/5", "gspo_record.f2.collapse.STABLE_AT_MOST", _same(0),
          'the declared "<= 1 of 5" written as "<= 0 of 5"'),
    _rule("f2e.dose_confirm", "MoE 4/5, dense 1/5", "gspo_record.f2.mechanism.dose_confirm_verdict",
          lambda original: functools.wraps(original)(lambda km, nm, kd, nd, c: original(kd, nd, km, nm, c)),
          "the MoE's and the dense twin's counts swapped"),
    _rule("f2e.dose_trend", "rising at every cap", "gspo_record.f2.mechanism.CAPS",
          _same(("1", "10", "30", "off")),
          "the caps in the wrong order (tightest first)"),
    _rule("f2e.reward_auc", "across 0", "gspo_record.f2.candidate.seed_interval", _same(mean_point),
          "the sign of the mean difference instead of its interval"),
    _rule("f2s.robust", "outcome changes", "gspo_record.f2.remeasure.robust_verdict",
          _same(robust_by_rule_name), "robustness judged by the rules' names, not their outcomes"),
    _rule("f2f.last", "still changed with the last evaluation alone", "gspo_record.f2.remeasure.last_verdict",
          _same(lambda first, last: f2_remeasure.LAST.verdict("last")),
          "every change blamed on the last evaluation, whatever it shows"),
    _rule("f2r.late", "across 0", "gspo_record.f2.late.seed_interval", _same(mean_point),
          "the sign of the mean difference instead of its interval"),
    _rule("f5t.replay", "across 0", "gspo_record.f5.topk.seed_interval", _same(mean_point),
          "the sign of the mean difference instead of its interval"),
    _rule("f5r.r3", "across 0", "gspo_record.f5.r3.seed_interval", _same(mean_point),
          "the sign of the mean difference instead of its interval"),
    _rule("f5g.form", "across 0", "gspo_record.f5.mask_form.seed_interval", _same(mean_point),
          "the sign of the mean difference instead of its interval"),
    _rule("f2e.reward_confirm", "across 0, mean above 0", "gspo_record.f2.candidate.seed_interval",
          _same(mean_point), "the sign of the mean difference instead of its interval"),
    _rule("f7.confirm", "across 0, mean above 0", "gspo_record.f7.token_adv.seed_interval",
          _same(bootstrap_without_resampling), "an interval that is the mean twice"),
    _rule("f3.volatility", "within 2x at 1e-4 only", "gspo_record.f3.volatility.WITHIN_FACTOR", _same(10.0),
          "'within a factor 2' widened to 10"),
    _rule("f3.factor", "overlapping intervals, higher mean", "gspo_record.f3.volatility.separation",
          _same(separation_by_means), "separation read from the means, not the intervals"),
    _rule("f4.replay", "plain 5/5, R2 0/5", "gspo_record.f4.replay.collapsed", _same(collapsed_survivors),
          "the collapsed column read as the surviving runs"),
    _rule("f5.premise", "the floor above ε too", "gspo_record.f5.precision.cold_start_outcome",
          _same(premise_without_floor), "the premise checked without the fp32 floor"),
    _rule("f5.claim", "GSPO far", "gspo_record.f5.precision.CLOSE_ACC", _same(0.5),
          "the declared 0.05 band typed as 0.5"),
    _rule("f5.nonzero", "across 0", "gspo_record.f5.precision.seed_interval", _same(bootstrap_without_resampling),
          "an interval that is the mean twice (the sign of the mean decides)"),
    _rule("f5.confirm", "opposite sign on fresh seeds", "gspo_record.f5.confirm.confirm_outcome",
          _same(confirm_any_sign), "a confirmation that ignores the sign"),
    _rule("f6.above_one", "across 1", "gspo_record.f6.variance.seed_interval", _same(mean_point),
          "the sign of the mean instead of the interval"),
    _rule("f6.grows", "noisy, slightly rising mean", "gspo_record.f6.variance.seed_trend",
          _same(trend_without_interval),
          "the slope's sign without its interval (as is_monotonic_increasing on means did)"),
    _rule("f6b.above_one", "across 1", "gspo_record.f6.variance.seed_interval", _same(mean_point),
          "the sign of the mean instead of the interval"),
    _rule("f6b.grows", "noisy, slightly rising mean", "gspo_record.f6.variance.seed_trend",
          _same(trend_without_interval), "the slope's sign without its interval"),
    _rule("f6c.regime", "GSPO collapses at L = 7 at 1e-4", "gspo_record.f6.stability.qualifies_outcome",
          _same(qualifies_at_the_shortest_length_only), "the criterion read at the shortest length only"),
    _rule("f6c.gap_grows", "noisy, slightly rising mean", "gspo_record.f6.variance.seed_trend",
          _same(trend_without_interval), "the slope's sign without its interval"),
    _rule("f6c.gap", "across 0", "gspo_record.f6.stability.declared_t_interval", _same(mean_point),
          "the sign of the mean difference instead of its interval"),
    _rule("f12a.regime", "a lag-0 collapse", "gspo_record.f12.lag._lag0",
          _same(lambda t: t[t["lag"] == t["lag"].max()]), "the regime read at the top lag instead of lag 0"),
    _rule("f12a.ladder", "one arm 0.2 lower at 16", "gspo_record.f12.lag.BREAKS_BY", _same(0.25),
          "a break read at a 0.25 drop instead of the declared 0.1"),
    _rule("f12.tolerates", "across the margin", "gspo_record.f12.lag.declared_t_interval",
          _same(lambda v, b=None: (float(np.mean(v)),) * 2), "an interval that is the mean twice"),
    _rule("f12.learning", "one seed at the cold start", "gspo_record.f12.lag.declared_t_interval",
          _same(lambda v, b=None: (float(np.mean(v)),) * 2), "the mean read as its own interval"),
    _rule("f12.corrections", "larger", "gspo_record.f12.lag.largest_tolerated", _same(lambda v: min(v)),
          "the smallest lag tried instead of the largest tolerated one"),
    _rule("f12.gspo_vs_grpo", "GSPO larger", "gspo_record.statements.boundary_outcome",
          _same(lambda x: "lower" if (x.a or -1) > (x.b or -1) else "higher"),
          "the two boundaries compared the wrong way round"),
    _rule("f12c.isolate", "larger", "gspo_record.statements.boundary_outcome",
          _same(lambda x: "lower" if (x.a or -1) > (x.b or -1) else "higher"),
          "the two boundaries compared the wrong way round"),
    _rule("f12c.lag32", "across the margin", "gspo_record.f12.lag.declared_t_interval",
          _same(lambda v, b=None: (float(np.mean(v)),) * 2), "an interval that is the mean twice"),
    _rule("f12.ess", "4 failures", "gspo_record.f12.lag.ESS_MIN_EACH", _same(3),
          "scored with 3 failures instead of the declared minimum of 5"),
    _rule("f6d.drift", "across 0", "gspo_record.f6.drift.declared_t_interval", _same(mean_point),
          "the sign of the mean change instead of its interval"),
    _rule("f6d.luspo", "across 0", "gspo_record.f6.drift.declared_t_interval", _same(mean_point),
          "the sign of the mean difference instead of its interval"),
    _rule("f6.relvar_change", "across 0", "gspo_record.f6.variance.seed_interval", _same(mean_point),
          "the sign of the mean difference instead of its interval"),
    _rule("f7.token_credit", "across 0, mean above 0", "gspo_record.f7.token_adv.seed_interval",
          _same(bootstrap_without_resampling), "an interval that is the mean twice"),
    _rule("f9.skill", "overlapping", "gspo_record.kinds.rates_outcome",
          _same(lambda x: "above" if x.a_lo > x.b_lo else "overlap"),
          "skill read from the lower ends only (overlapping intervals called a warning)"),
    _rule("f9v2.skill", "warns at 95 % but not at the Bonferroni level", "gspo_record.f9.precursors.LEVEL_V2",
          _same(0.95), "the multiplicity correction dropped (each of the 4 signals read at 95 %)"),
    _rule("f10.late", "across 0, mean above 0", "gspo_record.f10.two_by_two.page_interval", _same(mean_point),
          "the sign of the mean difference instead of its interval"),
    _rule("f10.two_by_two", "one norm effect only", "gspo_record.f10.two_by_two.outcome",
          _same(two_by_two_any), "'both norm effects higher' read as 'any norm effect higher'"),
    _rule("f10.skip_shrink", "skip higher", "gspo_record.f10.why.skip_shrink_verdict",
          lambda original: functools.wraps(original)(lambda diff: original(-diff)),
          "the difference taken the other way round (SHRINK − SKIP)"),
    _rule("f10.relative", "across 0, mean above 0", "gspo_record.f10.why.relative_verdict",
          _same(lambda diff: f10_why.RELATIVE.verdict({1: "higher", -1: "lower", 0: "none"}[sign_of_mean(diff)])),
          "the sign of the mean difference instead of its interval"),
    _rule("f10.dual_cap", "dual-clip higher", "gspo_record.f10.why.dual_cap_verdict",
          lambda original: functools.wraps(original)(lambda diff: original(-diff)),
          "the cap alone minus dual-clip under it (the pair swapped)"),
    _rule("f10c.rel_gspo", "across 0, mean above 0", "gspo_record.f10.why.seed_interval", _same(mean_point),
          "the sign of the mean difference instead of its interval"),
    _rule("f10.account", "neither, GSPO keeps its lead", "gspo_record.f10.why.account_outcome",
          _same(account_two_by_two_only), "content read from the 2×2 alone (skip vs shrink and relative caps ignored)"),
    _rule("f10t.account", "mixed, GSPO keeps its lead", "gspo_record.f10.why.account_outcome",
          _same(account_two_by_two_only), "content read from the 2×2 alone (skip vs shrink and relative caps ignored)"),
    _rule("f11.position", "t interval across 0 where the bootstrap's is above",
          "gspo_record.f11.successors.declared_t_interval", _same(version_3_interval),
          "version 3's bootstrap-t instead of the page's interval on the declared range"),
    _rule("f11b.position", "above GRPO, below GSPO", "gspo_record.f11.successors.position_outcome",
          _same(lambda d_grpo, d_gspo: "gspo_like"), "GSPO's side never read (every lift over GRPO 'like GSPO')"),
    _rule("f11.position", "below GRPO and below GSPO", "gspo_record.f11.successors.position_outcome",
          _same(position_before_issue_35), "'like GRPO' read before 'below GRPO' (below both printed 'like GRPO')"),
    _rule("f10t.two_by_two", "t interval across 0 where the bootstrap's is above",
          "gspo_record.f10.ten.declared_interval",
          _same(version_3_interval), "version 3's bootstrap-t instead of the page's interval on the declared range"),
    _rule("f10u.skip_shrink", "t interval across 0 where the bootstrap's is above",
          "gspo_record.f10.ten.declared_interval",
          _same(version_3_interval), "version 3's bootstrap-t instead of the page's interval on the declared range"),
    _rule("f10v.dual_cap", "t interval across 0 where the bootstrap's is above",
          "gspo_record.f10.dual.declared_interval", _same(version_3_interval),
          "version 3's bootstrap-t instead of the page's interval on the declared range"),
    _rule("f10w.arm", "like A, below SKIP", "gspo_record.f10.adam.arm_outcome",
          lambda original: functools.wraps(original)(lambda plain, skip: original(_OTHER_WAY[plain], _OTHER_WAY[skip])),
          "the differences read the other way round (A − arm, SKIP − arm)"),
    _rule("f10w.account", "STATE between, STEP and RESET protect", "gspo_record.f10.adam.account_outcome",
          lambda original: functools.wraps(original)(lambda o: original({**o, "STATE": "harms"})),
          "MOMENT read from STEP and RESET alone (STATE not required to harm)"),
    _rule("f10y.two_by_two", "t interval across 0 where the bootstrap's is above",
          "gspo_record.f10.sgd.declared_interval",
          _same(version_3_interval), "version 3's bootstrap-t instead of the page's interval on the declared range"),
    _rule("f10z.branch", "t interval across 0 where the bootstrap's is above",
          "gspo_record.f10.branch.declared_t_interval",
          _same(version_3_interval), "version 3's bootstrap-t instead of the page's interval on the declared range"),
    _rule("f10z.paired", "spreads from the runs", "gspo_record.f10.branch.spreads",
          lambda original: functools.wraps(original)(lambda m, arm, column="late_acc": (
              original(m.assign(seed=range(len(m))), arm, column))),
          "the pairing by seed lost (each run its own seed: no pair, as if unpaired)"),
    _rule("f10z.reversible", "halfway back", "gspo_record.f10.revert.reversible_verdict",
          lambda original: functools.wraps(original)(lambda lift, gap, *a: original(lift, gap * 0, *a)),
          "the gap to the level before the collapse ignored (any lift reads as reversed)"),
    _rule("f2t.ten", "GRPO 7/10, GSPO 0/10", "gspo_record.f2.ten._count",
          _same(lambda k, n: Count(k, n, 7, 2, per=10)),
          "'collapses' loosened from 4n/5 to 7n/10 (7 of 10 would read as a separation)"),
    _rule("f11d.confirm", "below GRPO on fresh seeds", "gspo_record.f11.successors._CONFIRMS",
          _same({**f11_successors._CONFIRMS, "below_grpo": "unresolved"}),
          "only 'like GRPO' counted as confirming (a successor worse than GRPO read as unresolved)"),
    _rule("f11c.correction", "t interval across 0 where the bootstrap's is above",
          "gspo_record.f11.corrections.declared_t_interval", _same(version_3_interval),
          "version 3's bootstrap-t instead of the page's interval on the declared range"),
    _rule("f8.spikes", "medians 30 and 300", "gspo_record.f8.dense.SAME_ORDER", _same(30.0),
          "'of the same order' widened to a factor 30"),
    _rule("f11e.dose", "below GRPO and below GSPO", "gspo_record.f11.successors.position_outcome",
          _same(position_before_issue_35), "'like GRPO' read before 'below GRPO' (below both printed 'like GRPO')"),
    _rule("f11f.arm", "above GRPO, below GSPO", "gspo_record.f11.successors.position_outcome",
          _same(lambda d_grpo, d_gspo: "gspo_like"), "GSPO's side never read (every lift over GRPO 'like GSPO')"),
    _rule("f11e.kl50", "4 of 8 collapsed, the classes apart", "gspo_record.f11.ladder.MIN_EACH", _same(5),
          "a crossing read only with 5 runs of each class (the declared minimum is 3)"),
    _rule("f11e.safe", "2/5 collapsed at every dose", "gspo_record.f11.ladder.STABLE_AT_MOST", _same(2),
          "'stable' loosened from at most 1 of 5 collapsed to 2 of 5"),
    _rule("f11e.warmup", "4/5 collapsed, 20 rollouts later", "gspo_record.f11.ladder.DELAY_ROLLOUTS",
          _same(30), "a delay read only past 30 rollouts (the declared 10)"),
    _rule("f11f.mask", "mask 4/5", "gspo_record.f11.arms.collapsed", _same(lambda k, n: Count(k, n, 5, 1)),
          "'collapses' tightened from 4 of 5 to 5 of 5 (the masked arm's 4/5 no longer refutes)"),
    _rule("f11g.one_update", "CISPO 4/5 at M = 1", "gspo_record.f11.arms.collapsed",
          _same(lambda k, n: Count(k, n, 5, rules.STABLE_AT_MOST)),
          "'collapses' tightened from 4 of 5 to 5 of 5 (a successor's 4/5 at M = 1 no longer flags an artefact)"),
]  # fmt: skip
MUTANTS += RULE_MUTANTS

from successor_mutants import ROWS as SUCCESSOR_ROWS  # noqa: E402  # isort: skip (tests/ is on sys.path)

#: the successors and the sampler–trainer corrections, one row each (issue 24): agreement with TRL 1.16's own code
SUCCESSOR_MUTANTS = [Mutant(*row) for row in SUCCESSOR_ROWS]
MUTANTS += SUCCESSOR_MUTANTS


def apply(mp: pytest.MonkeyPatch, row: Mutant) -> None:
    """Patch ``row.target`` with ``row.replacement(original)`` on ``mp``."""
    import importlib

    if row.target.endswith("]"):
        path, key = row.target[:-2].split("['")
        module, name = path.rsplit(".", 1)
        table = getattr(importlib.import_module(module), name)
        mp.setitem(table, key, row.replacement(table[key]))
    else:
        module, name = row.target.rsplit(".", 1)
        mod = importlib.import_module(module)
        mp.setattr(mod, name, row.replacement(getattr(mod, name)))


def verdicts(row: Mutant) -> tuple[bool, bool]:
    """(verdict without the mutant, verdict with it)."""
    torch.set_num_threads(1)
    plain = bool(row.check(False))
    with pytest.MonkeyPatch.context() as mp:
        apply(mp, row)
        broken = bool(row.check(True))
    return plain, broken


@pytest.mark.parametrize("row", MUTANTS, ids=[m.claim for m in MUTANTS])
def test_claim_fails_under_its_mutant(row):
    plain, broken = verdicts(row)
    assert plain is True, f"{row.claim} does not hold on the correct code"
    assert broken is False, f"{row.claim} still holds with {row.mutant}: it checks nothing"


def test_every_findings_rule_has_a_mutant():
    """Each verdict rule of the findings page has a row: a broken piece under which one of its cases flips."""
    assert {m.claim.removeprefix("rule: ") for m in RULE_MUTANTS} == set(rules.RULES)


def test_every_successor_and_correction_mode_has_a_mutant():
    """One row per objective after GSPO and per correction mode (and OPSM), each flipping its TRL agreement (CISPO's
    two variants, which TRL lacks: verl's code and the per-token reference, tests/successor_mutants.py)."""
    from gspo_lab.corrections import MODES

    claims = " ".join(m.claim for m in SUCCESSOR_MUTANTS)
    for name in ("cispo", "cispo_clip", "cispo_mask", "sapo", "luspo", "vespo", "gmpo", *MODES, "OPSM"):
        assert f" {name} " in claims, name


def test_every_notebook_claim_has_a_mutant():
    """Each claim the notebooks record has a row (names from the notebooks' own claim(...) calls)."""
    import re

    from gspo_lab.paths import repo_root

    recorded = set()
    for path in sorted((repo_root() / "notebooks").glob("[0-9][0-9]_*.py")):
        recorded |= {f"{path.stem[:2]}:{name}" for name in re.findall(r'claim\(\s*"([a-z0-9_]+)"', path.read_text())}
    assert recorded and recorded <= {m.claim for m in MUTANTS}, recorded - {m.claim for m in MUTANTS}


def markdown_table(rows=MUTANTS, *, run: bool = True) -> str:
    """The claim → mutant → verdict table as Markdown (observed verdicts when ``run``, else the expected ones)."""
    lines = [
        "| claim | computed by | mutant (patch target) | without | with mutant |",
        "| --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        plain, broken = verdicts(row) if run else (True, False)
        mark = {True: "pass", False: "**fail**"}
        cells = [row.claim, row.computes, f"{row.mutant} (`{row.target}`)", mark[plain], mark[broken]]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1:] != ["--table"]:
        raise SystemExit("usage: python tests/test_mutants.py --table")
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
    print(markdown_table())
