"""Issue 50, item 1: top-k / top-p sampling (gspo_lab/rollout.py kept_tokens) and sampling replay (the trainer scores
on the sampler's kept tokens): the kept sets, the renormalised log-probs, a first ratio of 1 with replay and of the
kept mass without, clear errors, and every stored key unchanged (the new fields are off by default)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch

from gspo_lab.config import TrainConfig
from gspo_lab.experiments.spec import cell_key
from gspo_lab.policy import rollout_logprobs
from gspo_lab.rollout import kept_tokens, renormalised
from gspo_lab.step import init_state, sample

CFG = TrainConfig(checkpoint="sweep-sort", length=12, prompts_per_rollout=4, group_size=8, seed=0, old_logp="sampler")


def _logp(*probs):
    return torch.tensor([probs], dtype=torch.float64).log()


def test_top_k_keeps_the_k_most_likely_and_top_p_the_smallest_set_reaching_p():
    lp = _logp(0.5, 0.3, 0.15, 0.05)
    assert kept_tokens(lp, 2).tolist() == [[True, True, False, False]]
    assert kept_tokens(lp, top_p=0.75).tolist() == [[True, True, False, False]]  # mass before: 0, 0.5 < 0.75, 0.8
    assert kept_tokens(lp, top_p=0.85).tolist() == [[True, True, True, False]]
    assert kept_tokens(lp, top_p=0.1).tolist() == [[True, False, False, False]]  # the most likely always stays
    assert kept_tokens(lp, 1, 0.99).tolist() == [[True, False, False, False]]  # top-k first, then top-p
    assert kept_tokens(lp) is None and kept_tokens(lp, 4) is not None
    r = renormalised(lp, kept_tokens(lp, 2))
    assert r[0, :2].exp().tolist() == pytest.approx([0.625, 0.375]) and r[0, 2:].tolist() == [-math.inf] * 2


@pytest.mark.parametrize(("kwargs", "match"), [({"top_k": -1}, "top_k must be an int >= 0"),
                                               ({"top_k": 1.5}, "top_k must be an int >= 0"),
                                               ({"top_p": 0.0}, r"top_p must be a number in \(0, 1\]"),
                                               ({"top_p": 1.2}, r"top_p must be a number in \(0, 1\]")])  # fmt: skip
def test_bad_top_k_or_top_p_gets_a_clear_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        kept_tokens(_logp(0.5, 0.5), **kwargs)
    with pytest.raises(ValueError, match=match):
        replace(CFG, **kwargs)


def test_sampling_replay_needs_a_sampler_that_drops_tokens():
    with pytest.raises(ValueError, match="sampling_replay=True needs top_k > 0 or top_p < 1"):
        replace(CFG, sampling_replay=True)


@pytest.fixture(scope="module")
def topk():
    state = init_state(replace(CFG, top_k=2))
    data = sample(state).data
    state.model.train()
    with torch.no_grad():
        full, _ = rollout_logprobs(state.model, data)
        replayed, entropy = rollout_logprobs(state.model, data, replay=True, with_entropy=True)
    return data, full, replayed, entropy


def test_the_sampler_draws_only_kept_tokens_and_returns_their_renormalised_log_probs(topk):
    data, *_ = topk
    keep, mask = data.sampler_keep, data.response_mask
    assert keep.shape[:2] == data.response_ids.shape and int(keep.sum(-1).max()) == 2
    assert bool(keep.gather(-1, data.response_ids.unsqueeze(-1)).squeeze(-1)[mask].all())
    assert float(data.sampler_logp[mask].max()) <= 0


def test_the_first_ratio_is_the_kept_mass_without_replay_and_one_with_it(topk):
    data, full, replayed, entropy = topk
    mask = data.response_mask
    biased = (full - data.sampler_logp)[mask]
    assert float(biased.max()) < 0 and float(biased.exp().mean()) < 0.99  # the kept mass, below 1
    assert float((replayed - data.sampler_logp)[mask].abs().max()) <= 1e-4  # the fp32 floor only
    assert bool(torch.isfinite(entropy[mask]).all()) and float(entropy[mask].max()) <= math.log(2) + 1e-6


def test_a_rollout_without_top_k_is_scored_the_same_with_or_without_replay():
    state = init_state(CFG)
    data = sample(state).data
    assert data.sampler_keep is None
    with torch.no_grad():
        assert torch.equal(rollout_logprobs(state.model, data)[0], rollout_logprobs(state.model, data, replay=True)[0])


def test_the_new_fields_enter_a_key_only_when_set():
    assert cell_key(CFG) == cell_key(replace(CFG, top_k=0, top_p=1.0, sampling_replay=False))
    assert len({cell_key(CFG), cell_key(replace(CFG, top_k=2)), cell_key(replace(CFG, top_k=2, sampling_replay=True)),
                cell_key(replace(CFG, top_p=0.9))}) == 4  # fmt: skip
