"""gspo_lab.routing: record a forward pass's experts, replay them (GSPO paper §5.3), measure their change."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest
import torch
from transformers.models.qwen3_moe.modeling_qwen3_moe import Qwen3MoeTopKRouter

import gspo_lab.routing as routing
from gspo_lab.model import PRESETS, build_model
from gspo_lab.routing import (
    enable_routing_control,
    expert_change_frac,
    expert_change_frac_per_layer,
    expert_swap_frac,
    record_routing,
    replay_routing,
)

VOCAB = 32
B, T = 4, 10


@pytest.fixture(scope="module")
def model():
    return build_model("sweep", VOCAB, seed=0)


@pytest.fixture(scope="module")
def x():
    return torch.randint(0, VOCAB, (B, T), generator=torch.Generator().manual_seed(0))


def geometry(model) -> tuple[int, int, int]:
    """(L, E, k) of an MoE model."""
    cfg = model.config
    return cfg.num_hidden_layers, cfg.num_experts, cfg.num_experts_per_tok


def random_ids(model, b: int, t: int, seed: int) -> torch.Tensor:
    """(b, L, t, k) random distinct expert ids per (sequence, layer, token)."""
    L, E, k = geometry(model)
    scores = torch.rand(b, L, t, E, generator=torch.Generator().manual_seed(seed))
    return scores.argsort(-1)[..., :k]


def record(model, x) -> tuple[torch.Tensor, torch.Tensor]:
    with torch.no_grad(), record_routing(model) as rec:
        logits = model(x).logits
    return rec.indices, logits


def spy(modules, hook_kind: str):
    """Register a hook on each module that appends what it saw; returns (seen list, handles)."""
    seen, handles = [], []
    for m in modules:
        if hook_kind == "pre":
            handles.append(m.register_forward_pre_hook(lambda mod, args: seen.append(args)))
        else:
            handles.append(m.register_forward_hook(lambda mod, args, out: seen.append(out)))
    return seen, handles


@pytest.mark.parametrize("name", ["moe", "sweep"])
def test_record_shape_range_and_equals_topk_of_router_logits(name, x):
    model = build_model(name, VOCAB, seed=1)
    L, E, k = geometry(model)
    gates = [layer.mlp.gate for layer in model.model.layers]
    outs, handles = spy(gates, "post")
    with torch.no_grad():
        plain = model(x).logits
    ids, logits = record(model, x)
    for h in handles:
        h.remove()
    assert ids.shape == (B, L, T, k) and ids.dtype == torch.int64
    assert int(ids.min()) >= 0 and int(ids.max()) < E
    assert torch.equal(logits, plain)  # recording changes nothing
    for layer, (router_logits, _, _) in enumerate(outs[:L]):
        direct = router_logits.topk(k, dim=-1).indices.reshape(B, T, k)  # softmax is monotone
        assert torch.equal(ids[:, layer], direct)
    with torch.no_grad(), replay_routing(model, ids):
        assert torch.equal(model(x).logits, plain)  # replay of unchanged weights: bitwise the same


def test_replay_of_recorded_ids_reproduces_logits_bitwise(model, x):
    ids, logits = record(model, x)
    with torch.no_grad(), replay_routing(model, ids):
        replayed = model(x).logits
    assert torch.equal(replayed, logits)


def test_experts_receive_exactly_the_cached_ids_with_current_router_weights(model, x):
    L, _, k = geometry(model)
    ids = random_ids(model, B, T, seed=5)
    blocks = [layer.mlp for layer in model.model.layers]
    expert_args, h1 = spy([b.experts for b in blocks], "pre")
    router_outs, h2 = spy([b.gate for b in blocks], "post")
    with torch.no_grad(), replay_routing(model, ids):
        model(x)
    for h in h1 + h2:
        h.remove()
    assert len(expert_args) == L
    for layer, (args, out) in enumerate(zip(expert_args, router_outs, strict=True)):
        (_, top_k_index, top_k_weights), router_logits = args, out[0]
        want = ids[:, layer].reshape(B * T, k)
        assert torch.equal(top_k_index, want)
        probs = router_logits.softmax(-1).gather(-1, want)
        torch.testing.assert_close(top_k_weights, probs / probs.sum(-1, keepdim=True))  # norm_topk_prob


@pytest.mark.parametrize("source", ["recorded", "random"])
def test_gradients_reach_every_router_under_replay(model, x, source):
    ids = record(model, x)[0] if source == "recorded" else random_ids(model, B, T, seed=6)
    model.zero_grad()
    with replay_routing(model, ids):
        logits = model(x).logits
    logits.logsumexp(-1).mean().backward()  # backward after the context: nothing is recomputed
    grads = [layer.mlp.gate.weight.grad for layer in model.model.layers]
    assert all(g is not None and bool(g.abs().sum() > 0) for g in grads)
    model.zero_grad()


def test_update_changes_routing_and_replay_restores_old_routing(model, x):
    updated = copy.deepcopy(model)
    old_ids, _ = record(updated, x)
    opt = torch.optim.Adam(updated.parameters(), lr=3e-2)
    targets = torch.randint(0, VOCAB, (B, T), generator=torch.Generator().manual_seed(1))
    for _ in range(3):
        loss = torch.nn.functional.cross_entropy(updated(x).logits.flatten(0, 1), targets.flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
    new_ids, new_logits = record(updated, x)
    mask = torch.ones(B, T, dtype=torch.bool)
    assert expert_change_frac(old_ids, new_ids, mask) > 0
    assert expert_swap_frac(old_ids, new_ids, mask) > 0
    assert expert_change_frac(new_ids, new_ids, mask) == 0.0
    with torch.no_grad(), replay_routing(updated, old_ids):
        replayed = updated(x).logits
    assert not torch.equal(replayed, new_logits)  # routing really was replaced
    with torch.no_grad(), replay_routing(updated, new_ids):
        assert torch.equal(updated(x).logits, new_logits)


def test_change_fractions_on_hand_built_sets():
    # B=1, L=2, T=3, k=2. Sets are compared order-insensitively: [1, 0] == [0, 1].
    old = torch.tensor([[[[0, 1], [2, 3], [4, 5]], [[0, 1], [0, 1], [0, 1]]]])
    new = torch.tensor([[[[1, 0], [2, 4], [4, 5]], [[0, 1], [6, 7], [1, 0]]]])
    everything = torch.ones(1, 3, dtype=torch.bool)
    assert expert_change_frac(old, new, everything) == pytest.approx(2 / 6)  # token 1 in both layers
    assert torch.equal(expert_change_frac_per_layer(old, new, everything), torch.tensor([1 / 3, 1 / 3]))
    assert expert_swap_frac(old, new, everything) == pytest.approx((1 / 2 + 2 / 2) / 6)
    skip_token_1 = torch.tensor([[True, False, True]])
    assert expert_change_frac(old, new, skip_token_1) == 0.0
    nothing = torch.zeros(1, 3, dtype=torch.bool)
    assert expert_change_frac(old, new, nothing) == 0.0  # no valid token: 0, not NaN


def test_replay_rejects_bad_indices(model, x):
    L, E, k = geometry(model)
    good = random_ids(model, B, T, seed=7)
    bad = {
        "shape": good[:, :-1],
        "dtype": good.float(),
        "expert ids in": good.masked_fill(good == 0, E),
        "distinct": good[..., :1].expand(B, L, T, k),
    }
    for match, indices in bad.items():
        with pytest.raises(ValueError, match=match), replay_routing(model, indices):
            pass
    with pytest.raises(ValueError, match=r"\(B, T\)"), replay_routing(model, good[:, :, :-1]):
        model(x)  # ids for T - 1 tokens, batch of T
    with torch.no_grad():  # a failed replay leaves the model routing normally
        assert torch.equal(model(x).logits, record(model, x)[1])


def test_change_frac_rejects_bad_arguments():
    ids = torch.zeros(2, 3, 4, 2, dtype=torch.long)
    with pytest.raises(ValueError, match="new_idx must have the shape"):
        expert_change_frac(ids, ids[:1], torch.ones(2, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="mask"):
        expert_change_frac(ids, ids, torch.ones(2, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match="old_idx"):
        expert_change_frac(ids.float(), ids, torch.ones(2, 4, dtype=torch.bool))


def test_control_is_idempotent_per_model_and_leaves_weights_alone(model, x):
    keys = list(model.state_dict())
    control = enable_routing_control(model)
    n_hooks = sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())
    assert enable_routing_control(model) is control
    assert sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules()) == n_hooks
    assert list(model.state_dict()) == keys
    twin = copy.deepcopy(model)
    assert enable_routing_control(twin) is not control
    with record_routing(twin) as rec, torch.no_grad():
        twin(x)
    assert control.mode == "off" and rec.indices.shape[0] == B


def test_misuse_raises(model, x):
    with pytest.raises(TypeError, match="Qwen3MoeSparseMoeBlock"):
        enable_routing_control(build_model(replace(PRESETS["dense"], num_layers=1), VOCAB, seed=0))
    with record_routing(model) as rec:
        pass
    with pytest.raises(RuntimeError, match="no complete forward pass"):
        rec.indices  # noqa: B018
    with pytest.raises(RuntimeError, match="one forward pass"), torch.no_grad(), record_routing(model):
        model(x)
        model(x)
    with pytest.raises(RuntimeError, match="do not nest"), record_routing(model), record_routing(model):
        pass
    checkpointed = build_model(replace(PRESETS["sweep"], num_layers=1), VOCAB, seed=0)
    checkpointed.model.gradient_checkpointing = True
    ids = random_ids(checkpointed, 1, 2, seed=0)
    with pytest.raises(RuntimeError, match="gradient checkpointing"), replay_routing(checkpointed, ids):
        pass


def test_replay_reports_the_routers_own_choice():
    """Under replay the record holds what the current router would choose on the replayed pass's hidden states."""
    model = build_model("sweep", 32, seed=0)
    x = torch.randint(0, 32, (2, 6), generator=torch.Generator().manual_seed(0))
    with record_routing(model) as rec:
        model(input_ids=x)
    with replay_routing(model, rec.indices) as same:
        model(input_ids=x)
    assert torch.equal(same.indices, rec.indices)  # replaying its own choice changes nothing
    forced = (rec.indices + 1) % model.config.num_experts  # different experts everywhere
    with replay_routing(model, forced) as natural:
        model(input_ids=x)
    assert torch.equal(natural.indices[:, 0], rec.indices[:, 0])  # layer 0 sees the same hidden states
    assert not torch.equal(natural.indices, forced)


def _router_scaled_scores(self, hidden_states):
    """A transformers release whose router changed its gate weights (scores × 0.5, no longer what the replay
    recomputes): the kind of internal change the self-check exists for."""
    logits, scores, indices = _ORIGINAL_ROUTER_FORWARD(self, hidden_states)
    return logits, scores * 0.5, indices


def _router_reordered_output(self, hidden_states):
    """A release whose router returns its triple in another order."""
    logits, scores, indices = _ORIGINAL_ROUTER_FORWARD(self, hidden_states)
    return logits, indices, scores


_ORIGINAL_ROUTER_FORWARD = Qwen3MoeTopKRouter.forward


def test_self_check_passes_on_the_installed_router(model, monkeypatch):
    monkeypatch.setattr(routing, "_CHECKED", set())
    routing.self_check(model)
    assert type(model) in routing._CHECKED  # once per class and process: record/replay do not repeat it


@pytest.mark.parametrize("patched", [_router_scaled_scores, _router_reordered_output], ids=["scores", "order"])
def test_a_changed_router_is_caught_at_the_first_replay(patched, monkeypatch):
    """Never a silently wrong replay: a router whose internals changed fails the self-check, with a message naming
    the installed transformers and the versions tested (at record as at replay)."""
    import transformers

    monkeypatch.setattr(routing, "_CHECKED", set())
    monkeypatch.setattr(Qwen3MoeTopKRouter, "forward", patched)
    fresh = build_model("sweep", VOCAB, seed=1)
    ids = torch.zeros(1, len(routing._moe_blocks(fresh)), 3, fresh.config.num_experts_per_tok, dtype=torch.long)
    ids[..., 1] = 1
    with pytest.raises(routing.RoutingSelfCheckError) as err:
        with replay_routing(fresh, ids):
            pass
    message = str(err.value)
    assert f"transformers {transformers.__version__}" in message and "tested: 5.24.0, 5.25.0" in message
    with pytest.raises(routing.RoutingSelfCheckError):
        with record_routing(fresh):
            pass
