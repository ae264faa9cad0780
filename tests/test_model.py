"""gspo_lab.model: presets are transformers' Qwen3 classes, sized as documented, seeded, round-trippable."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from transformers import AutoModelForCausalLM, Qwen3ForCausalLM, Qwen3MoeForCausalLM

from gspo_lab.model import PRESETS, build_model, count_params, get_preset, make_config

VOCAB = 32


@pytest.fixture(scope="module")
def models():
    return {name: build_model(name, VOCAB, seed=0) for name in PRESETS}


def tokens(batch: int, length: int, vocab: int = VOCAB, seed: int = 0) -> torch.Tensor:
    return torch.randint(0, vocab, (batch, length), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_presets_are_transformers_classes_configured_as_declared(models, name):
    model, preset = models[name], PRESETS[name]
    cls = Qwen3MoeForCausalLM if preset.kind == "moe" else Qwen3ForCausalLM
    assert type(model) is cls
    cfg = model.config
    assert (cfg.num_hidden_layers, cfg.hidden_size) == (preset.num_layers, preset.hidden_size)
    assert cfg.vocab_size == VOCAB
    assert cfg.head_dim == preset.hidden_size // preset.num_heads
    assert cfg._attn_implementation == "sdpa"
    assert cfg.tie_word_embeddings is False
    assert model.lm_head.weight.data_ptr() != model.model.embed_tokens.weight.data_ptr()
    assert all(p.dtype == torch.float32 for p in model.parameters())
    if preset.kind == "moe":
        assert (cfg.num_experts, cfg.num_experts_per_tok) == (preset.num_experts, preset.top_k)
        assert cfg.norm_topk_prob is True and cfg.output_router_logits is False
        assert cfg._experts_implementation == "grouped_mm"  # the fast default, never batched_mm
    with torch.no_grad():
        logits = model(tokens(2, 5)).logits
    assert logits.shape == (2, 5, VOCAB) and logits.dtype == torch.float32


def test_param_counts_in_documented_ranges(models):
    counts = {name: count_params(m) for name, m in models.items()}
    assert 1_000_000 <= counts["moe"]["total"] <= 5_000_000
    assert 100_000 <= counts["sweep"]["active"] <= 300_000
    assert counts["dense"]["active"] == counts["dense"]["total"]
    moe_active, dense_active = counts["moe"]["active"], counts["dense"]["active"]
    assert abs(dense_active - moe_active) / moe_active < 0.15
    # the module docstring's table (vocab 32)
    assert counts["moe"] == {"total": 1_787_264, "active": 411_008}
    assert counts["dense"]["total"] == 402_816
    assert counts["sweep"] == {"total": 252_608, "active": 105_152}
    assert counts["sweep-deep"] == {"total": 501_056, "active": 206_144}
    assert counts["sweep-e32"] == {"total": 848_576, "active": 111_296}
    assert counts["sweep-k4"] == {"total": 252_608, "active": 154_304}


@pytest.mark.parametrize("name", ["moe", "sweep", "sweep-deep", "sweep-e32", "sweep-k4"])
def test_active_params_by_hand(models, name):
    """active = total − L · (E − k) · (one expert's SwiGLU: 3 · hidden · expert width)."""
    p = PRESETS[name]
    one_expert = 3 * p.hidden_size * p.expert_intermediate_size
    counts = count_params(models[name])
    assert counts["active"] == counts["total"] - p.num_layers * (p.num_experts - p.top_k) * one_expert


def test_seeded_init_is_deterministic_and_leaves_global_rng_alone():
    state = torch.random.get_rng_state()
    a, b = build_model("sweep", VOCAB, seed=3), build_model("sweep", VOCAB, seed=3)
    c = build_model("sweep", VOCAB, seed=4)
    assert torch.equal(torch.random.get_rng_state(), state)
    sa, sb, sc = a.state_dict(), b.state_dict(), c.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert not torch.equal(sa["model.layers.0.mlp.gate.weight"], sc["model.layers.0.mlp.gate.weight"])


def test_vocab_size_is_a_parameter():
    model = build_model(replace(PRESETS["sweep"], num_layers=1), 40, seed=0)
    with torch.no_grad():
        assert model(tokens(1, 3, vocab=40)).logits.shape == (1, 3, 40)


def test_from_config_and_save_load_round_trip(models, tmp_path):
    model = models["moe"]
    assert type(AutoModelForCausalLM.from_config(make_config("moe", VOCAB))) is Qwen3MoeForCausalLM
    model.save_pretrained(tmp_path)  # safetensors by default
    assert (tmp_path / "model.safetensors").is_file()
    loaded = AutoModelForCausalLM.from_pretrained(tmp_path)  # a local folder: no network
    assert type(loaded) is Qwen3MoeForCausalLM
    assert all(p.dtype == torch.float32 for p in loaded.parameters())
    x = tokens(4, 9)
    with torch.no_grad():
        assert torch.equal(model(x).logits, loaded(x).logits)


def test_bad_arguments_name_themselves():
    with pytest.raises(ValueError, match="preset must be one of"):
        build_model("huge", VOCAB, seed=0)
    with pytest.raises(ValueError, match="vocab_size"):
        build_model("sweep", 1, seed=0)
    with pytest.raises(TypeError, match="seed"):
        build_model("sweep", VOCAB, seed=0.5)
    with pytest.raises(ValueError, match="top_k"):
        get_preset(replace(PRESETS["sweep"], top_k=9))
