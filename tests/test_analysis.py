"""Off-policy traces and gradient analysis on the shipped sweep checkpoint (the notebooks' library side)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch

from gspo_lab.analysis import (
    offpolicy_trace,
    prefix_ratio_variance,
    ratio_variance,
    token_clip_vs_sequence_ratio,
    variance_growth,
)
from gspo_lab.checkpoints import load_checkpoint
from gspo_lab.clipping import clip_runs, clip_summary
from gspo_lab.config import TrainConfig
from gspo_lab.gradients import (
    UNCLIPPED,
    gradient_variance,
    gspo_token_identity,
    on_policy_gradient_gap,
    per_token_advantages,
    staleness_noise,
    token_grad_weights,
    weight_profile,
)
from gspo_lab.policy import rollout_logprobs
from gspo_lab.ratios import seq_log_ratio, tok_log_ratio
from gspo_lab.reductions import seq_lengths
from gspo_lab.tasks import get_task

CFG = TrainConfig(checkpoint="sweep-sort", length=8, prompts_per_rollout=8, group_size=4, minibatches=2, lr=3e-5)


@pytest.fixture(scope="module")
def trace():
    return offpolicy_trace(CFG, 2, probe_lengths=(4, 12))


def test_trace_layout(trace):
    assert trace.K == 2 and len(trace.states) == 3 and sorted(trace.probes) == [4, 12]
    for probe in (trace.train, *trace.probes.values()):
        assert probe.logp.shape[0] == 3 and probe.logp.shape[1:] == probe.mask.shape
        assert probe.expert_change[0] == 0.0 and probe.log_ratios(2).abs().max() > 0
        # π_old's log-probs are the sampler's (same weights, another code path: KV cache, incremental positions)
        sampled = probe.rollout.sampler_logp
        assert (probe.logp[0] - sampled).where(probe.mask, 0.0).abs().max() < 1e-4
    lengths = {L: seq_lengths(p.mask).float().mean().item() for L, p in trace.probes.items()}
    assert lengths[4] < lengths[12]


def test_stored_states_reproduce_the_scored_logprobs(trace):
    """θ_k kept in ``states[k]`` gives back logp[k] (states cloned after each update, not aliased or shifted)."""
    model = trace.model
    try:
        for k, state in enumerate(trace.states):
            model.load_state_dict(state)
            with torch.no_grad():
                logp, _ = rollout_logprobs(model, trace.train.rollout)
            mask = trace.train.mask
            torch.testing.assert_close(logp[mask], trace.train.logp[k][mask], rtol=0, atol=1e-5)
    finally:
        model.load_state_dict(trace.states[-1])
    assert not torch.equal(trace.train.logp[1], trace.train.logp[2])


def test_ratio_tables(trace):
    table = ratio_variance(trace)
    assert list(table["L"].unique()) == [4, 12] and set(table["k"]) == {1, 2}
    assert (table["var_sum"] >= table["var_mean"]).all()
    prefix = prefix_ratio_variance(trace.probes[12], 2)
    assert prefix["n"].is_monotonic_increasing
    assert prefix["var_sum"].iloc[-1] > prefix["var_sum"].iloc[3]  # noise accumulates along the response
    torch.testing.assert_close(
        torch.tensor(prefix["var_mean"].values),
        torch.tensor(prefix["var_sum"].values) / torch.tensor(prefix["n"].values) ** 2,
    )
    growth = variance_growth(trace.probes[12], 2, n_from=4)
    half = prefix_ratio_variance(trace.probes[12], 2, min_responses=trace.probes[12].mask.shape[0] // 2)
    first, last = half.loc[half["n"] == 4].iloc[0], half.iloc[-1]
    assert growth["n_to"] == last["n"] <= prefix["n"].iloc[-1]  # the prefix most responses reach
    assert growth["sum_growth"] == pytest.approx(last["var_sum_per_token_var"] / first["var_sum_per_token_var"])
    assert growth["mean_growth"] == pytest.approx(growth["sum_growth"] * (4 / growth["n_to"]) ** 2)
    out = token_clip_vs_sequence_ratio(trace.probes[12], 2, 0.2, 0.27)
    assert 0.0 <= out["frac_sequence_outside"] <= 1.0 and out["responses_all_tokens_inside"] > 0


def test_gradient_weights_are_token_ratios_for_grpo_and_sequence_ratio_for_gspo(trace):
    p = trace.train
    logp, old, adv, mask = p.logp[2], p.logp[0], p.adv, p.mask
    live = mask & (adv[:, None] != 0)
    w = token_grad_weights("grpo", logp, old, adv, mask, **UNCLIPPED)
    torch.testing.assert_close(w[live], tok_log_ratio(logp, old, mask).double().exp()[live])
    s = token_grad_weights("gspo", logp, old, adv, mask, **UNCLIPPED)
    s_i = seq_log_ratio(logp, old, mask).double().exp()
    torch.testing.assert_close(s[live], s_i[:, None].expand_as(s)[live])
    clipped = token_grad_weights("gspo", logp, old, adv, mask)  # paper band: most responses clipped -> 0
    assert (clipped[live] == 0).float().mean() > 0.2


def test_on_policy_gradients_coincide_and_off_policy_variance_differs(trace):
    on = gradient_variance(trace, (0,), draws=4, minibatch=8, **UNCLIPPED).set_index("objective")
    assert on.loc["grpo", "rel_variance"] == pytest.approx(on.loc["gspo", "rel_variance"], rel=1e-5)
    off = gradient_variance(trace, (2,), draws=4, minibatch=8, **UNCLIPPED).set_index("objective")
    assert not math.isclose(off.loc["grpo", "rel_variance"], off.loc["gspo", "rel_variance"], rel_tol=1e-3)


def test_gspo_token_identity_on_real_gradients(trace):
    pta = per_token_advantages(trace.train, get_task("sort"))
    out = gspo_token_identity(trace, 2, pta, minibatch=16, **UNCLIPPED)
    assert out["max_abs_diff_sequence_adv"] <= 1e-6
    assert out["max_abs_diff_token_adv"] > 1e-4


def test_weight_profile_hand_computed():
    weights = torch.tensor([[1.0, 3.0, 0.0], [2.0, 2.0, 2.0], [5.0, 0.0, 0.0]], dtype=torch.float64)
    mask = torch.tensor([[True, True, False], [True, True, True], [True, False, False]])
    adv = torch.tensor([1.0, 1.0, -2.0], dtype=torch.float64)
    table = weight_profile(weights, adv, mask)
    pos, neg = table.loc["Â > 0"], table.loc["Â < 0"]
    assert pos["tokens"] == 5 and pos["mean_weight"] == pytest.approx(10 / 5)
    assert pos["within_response_std"] == pytest.approx((1.0 + 0.0) / 2)  # response 0: std of (1, 3) = 1
    assert (neg["tokens"], neg["within_response_std"], neg["zero_frac"]) == (1, 0.0, 0.0)


def test_on_policy_gradients_agree_and_staleness_noise_is_one_at_k0(trace):
    gap = on_policy_gradient_gap(trace, minibatch=16)
    assert gap["rel_gap"] <= 1e-4 and gap["grad_scale"] > 0
    table = staleness_noise(trace, (0, 2), draws=4, minibatch=8, boot=200, **UNCLIPPED)
    assert table.loc[0, "noise_ratio"] == pytest.approx(1.0, rel=1e-4)
    assert table.loc[0, "noise_ratio_lo"] == pytest.approx(1.0, rel=1e-3)
    row = table.loc[2]
    assert row["noise_ratio_lo"] <= row["noise_ratio"] <= row["noise_ratio_hi"] and row["noise_ratio"] != 1.0
    ref = gradient_variance(trace, (2,), draws=4, minibatch=8, **UNCLIPPED).set_index("objective")["rel_variance"]
    assert row["rel_variance_grpo"] == pytest.approx(ref["grpo"], rel=1e-4)  # same draws (seed 0), same estimator
    assert row["rel_variance_gspo"] == pytest.approx(ref["gspo"], rel=1e-4)


def test_clip_runs_start_every_objective_from_the_given_weights():
    """A model passed in is copied per objective: the second objective does not start from the first's result."""
    cfg = replace(CFG, rollouts=1, prompts_per_rollout=4, lr=1e-3)
    model, tokenizer, _ = load_checkpoint(cfg.checkpoint)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    given = clip_runs(cfg, ("grpo", "gspo"), progress=False, model=model, tokenizer=tokenizer)
    alone = clip_runs(cfg, ("gspo",), progress=False)
    keep = [c for c in alone["gspo"].history.columns if not c.startswith("time/")]
    assert given["gspo"].history[keep].equals(alone["gspo"].history[keep])
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())  # the caller's model untouched
    assert list(clip_summary(given).index) == ["grpo", "gspo"]
