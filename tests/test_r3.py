"""Issue 51, item 1: R3, the sampler's routing replayed in the trainer. The sampler records the experts its own
passes chose, in the trainer's layout; on an unchanged policy with an fp32 sampler the replay is an identity (the same
experts, the same log-probs, bit for bit, in the measurement and in the loop); under bf16 the sets differ on a few
(token, layer) pairs and the replay removes that part of the mismatch; bad settings get a clear error."""

from __future__ import annotations

import pytest
import torch

from gspo_lab.config import TrainConfig
from gspo_lab.precision import routing_mismatch
from gspo_lab.step import collect, init_state, update

CFG = TrainConfig(checkpoint="sweep-sort", length=12, prompts_per_rollout=8, group_size=8, minibatches=4, seed=0)


def test_the_sampler_records_its_experts_in_the_trainers_layout():
    state = init_state(TrainConfig(**{**CFG.__dict__, "sampler_routing_replay": True, "old_logp": "sampler"}))
    data = collect(state).data
    B, P = data.prompt_ids.shape
    T = data.response_ids.shape[1]
    L, k = data.sampler_routing.shape[1], data.sampler_routing.shape[-1]
    assert data.sampler_routing.shape == (B, L, P + T, k) and data.sampler_routing.dtype == torch.int64
    assert (data.sampler_routing.sort(-1).values.diff(dim=-1) > 0).all()  # k distinct experts everywhere


def test_an_fp32_sampler_replayed_is_an_identity_and_a_bf16_one_is_not():
    fp32, bf16 = routing_mismatch(CFG, "fp32"), routing_mismatch(CFG, "bf16")
    assert float(fp32["per_layer"].max()) == 0.0
    valid = fp32["plain"].mask  # padding holds junk either way
    assert torch.equal(fp32["plain"].train_logp[valid], fp32["r3"].train_logp[valid])
    assert float(bf16["per_layer"].max()) > 0.0  # some (token, layer) sets differ between the engines
    assert not torch.equal(bf16["plain"].train_logp[bf16["plain"].mask], bf16["r3"].train_logp[bf16["plain"].mask])
    assert bf16["r3"].delta.abs().max() < bf16["plain"].delta.abs().max()


def test_the_loop_with_r3_on_an_fp32_sampler_takes_the_same_first_update():
    rows = {}
    for r3 in (False, True):
        state = init_state(TrainConfig(**{**CFG.__dict__, "sampler_routing_replay": r3, "old_logp": "sampler"}))
        rows[r3] = update(state, collect(state), 0)
    for key in ("loss/policy", "grad/norm", "clip/token_frac"):
        assert rows[True][key] == rows[False][key], key


def test_bad_r3_settings_get_a_clear_error():
    with pytest.raises(ValueError, match="needs routing_replay=False"):
        TrainConfig(sampler_routing_replay=True, routing_replay=True)
    assert TrainConfig(sampler_routing_replay=True, compile_update=True).compile_update  # R3 traced (test_train.py)
    with pytest.raises(ValueError, match="routing_mismatch needs an MoE checkpoint"):
        routing_mismatch(TrainConfig(checkpoint="dense-sort", length=12, prompts_per_rollout=2, group_size=2), "bf16")
    with pytest.raises(ValueError, match="precision must be one of"):
        routing_mismatch(CFG, "fp16")
