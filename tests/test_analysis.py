"""Off-policy traces and gradient analysis on the shipped sweep checkpoint (the notebooks' library side)."""

from __future__ import annotations

import math

import pytest
import torch

from gspo_lab.analysis import offpolicy_trace, prefix_ratio_variance, ratio_variance, token_clip_vs_sequence_ratio
from gspo_lab.config import TrainConfig
from gspo_lab.gradients import (
    UNCLIPPED,
    gradient_variance,
    gspo_token_identity,
    per_token_advantages,
    token_grad_weights,
)
from gspo_lab.ratios import seq_log_ratio, tok_log_ratio
from gspo_lab.tasks import get_task

CFG = TrainConfig(checkpoint="sweep-sort", length=8, prompts_per_rollout=8, group_size=4, minibatches=2, lr=3e-5)


@pytest.fixture(scope="module")
def trace():
    return offpolicy_trace(CFG, 2, probe_lengths=(4, 12))


def test_trace_layout(trace):
    assert trace.K == 2 and len(trace.states) == 3 and sorted(trace.probes) == [4, 12]
    for probe in (trace.train, *trace.probes.values()):
        assert probe.logp.shape[0] == 3 and probe.logp.shape[1:] == probe.mask.shape
        assert torch.count_nonzero(probe.log_ratios(0)) == 0 and probe.expert_change[0] == 0.0
        assert probe.log_ratios(2).abs().max() > 0
    lengths = {L: p.mask.sum(-1).float().mean().item() for L, p in trace.probes.items()}
    assert lengths[4] < lengths[12]


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
