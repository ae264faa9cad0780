"""Tiny policies built from transformers' own Qwen3 classes: an MoE, its dense twin, and a sweep-sized MoE.

The paper's policy is Qwen3-30B-A3B-Base (GSPO paper §5.1), a ``Qwen3MoeForCausalLM``. Here the same classes
are built from a config at toy size, so everything the real model does (top-k softmax routing, renormalised
gate weights, QK norms, GQA, RoPE) happens for real, and ``save_pretrained`` /
``AutoModelForCausalLM.from_pretrained`` work unchanged.

Presets (``PRESETS``; sizes for ``vocab_size=32``, counted by :func:`count_params`; time is one
forward+backward of a 64 × 48-token batch on 1 CPU thread, median of interleaved runs on a 2-core machine, so
only the ratios are reliable):

========= ====== ======= ===== ====== ========= ======= ======== =========================================
preset    layers experts top-k hidden expert I  total   active   role
========= ====== ======= ===== ====== ========= ======= ======== =========================================
``moe``   4      16      2     128    64        1.79 M  0.41 M   the main policy (~175 ms)
``dense`` 4      —       —     128    128 (MLP) 0.40 M  0.40 M   same active size, no routing (~135 ms)
``sweep`` 4      8       2     64     32        0.25 M  0.11 M   fast parameter sweeps (~85 ms)
``sweep-deep`` 8 8       2     64     32        0.50 M  0.21 M   finding 3: depth
``sweep-e32``  4 32      2     64     32        0.85 M  0.11 M   finding 3: more experts
``sweep-k4``   4 8       4     64     32        0.25 M  0.15 M   finding 3: larger top-k
========= ====== ======= ===== ====== ========= ======= ======== =========================================

"active" = parameters one token uses: everything except the experts, plus top_k / num_experts of the experts
(embedding and LM head counted in full, as in the "A3B" of Qwen3-30B-A3B). The dense twin's MLP width is top_k
× expert width, so its active size matches the MoE's by construction (within 2 %: the router is the
difference).

Shapes: B sequences, T tokens, V vocabulary. ``model(input_ids (B, T)).logits`` is (B, T, V), float32.

Deviations from Qwen3-30B-A3B (its config.json: 48 layers, 128 experts, top-8, hidden 2048, expert width 768,
``norm_topk_prob=true``, ``router_aux_loss_coef=0.001``, untied embeddings), declared:
1) toy sizes (table above); top_k / num_experts is 1/8 (``moe``) or 1/4 (``sweep``) instead of 1/16.
2) no load-balancing loss: ``output_router_logits=False`` and ``router_aux_loss_coef=0.0``; the RL objective
   is the only loss (the paper does not mention one during RL).
3) attention is ``"sdpa"``: on CPU it was ~3-4 % faster than ``"eager"`` for the ``moe`` preset (median ratio
   of 15 interleaved runs, 1 thread); logits of the two differ by ~5e-7.
4) experts use transformers' default ``experts_implementation``, ``"grouped_mm"`` (on CPU with torch 2.13:
   ``torch.nn.functional.grouped_mm``); ``"batched_mm"`` was ~50× slower on CPU (measured on a 2-core machine
   with TRL 1.16).
5) RoPE base 10,000 (transformers' default) instead of 1e6: the toy's sequences are short.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

import torch
from transformers import (
    PretrainedConfig,
    PreTrainedModel,
    Qwen3Config,
    Qwen3ForCausalLM,
    Qwen3MoeConfig,
    Qwen3MoeForCausalLM,
)
from transformers.models.qwen3_moe.modeling_qwen3_moe import Qwen3MoeSparseMoeBlock

__all__ = ["ModelPreset", "PRESETS", "get_preset", "make_config", "build_model", "count_params"]

ATTN_IMPLEMENTATION = "sdpa"  # deviation 3: measured faster than "eager" on CPU for these sizes
MAX_POSITIONS = 1024  # intended longest sequence; default RoPE computes its angles on the fly: no weights
INIT_STD = 0.02  # transformers' Qwen3 default initializer_range (also Qwen3-30B-A3B's config.json)


@dataclass(frozen=True)
class ModelPreset:
    """A tiny Qwen3 architecture. Build it with :func:`build_model`; vary it with ``dataclasses.replace``."""

    kind: Literal["moe", "dense"]
    """``"moe"`` builds ``Qwen3MoeForCausalLM``, ``"dense"`` builds ``Qwen3ForCausalLM``."""
    num_layers: int
    """Decoder layers; in an MoE preset every layer's MLP is a sparse MoE block (decoder_sparse_step=1)."""
    hidden_size: int
    """Residual stream width."""
    num_heads: int
    """Query heads; head_dim = hidden_size / num_heads."""
    num_kv_heads: int
    """Key/value heads (grouped-query attention, as Qwen3: 32 query / 4 KV heads in Qwen3-30B-A3B)."""
    intermediate_size: int
    """Dense MLP width (``kind="dense"``); unused by an MoE preset (no MLP-only layers)."""
    num_experts: int = 0
    """Routed experts per MoE layer (0 for dense)."""
    top_k: int = 0
    """Experts each token is routed to (``num_experts_per_tok``; 0 for dense)."""
    expert_intermediate_size: int = 0
    """Each expert's SwiGLU width (``moe_intermediate_size``; 0 for dense)."""
    norm_topk_prob: bool = True
    """Renormalise the top-k gate weights to sum to 1 (Qwen3-30B-A3B: true; transformers' default: false)."""

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_heads


_MOE = ModelPreset(
    kind="moe",
    num_layers=4,
    hidden_size=128,
    num_heads=4,
    num_kv_heads=2,
    intermediate_size=2 * 64,  # unused (MoE in every layer); kept equal to the dense twin's width
    num_experts=16,
    top_k=2,
    expert_intermediate_size=64,
)

PRESETS: dict[str, ModelPreset] = {
    "moe": _MOE,
    # the dense twin: same everything, one MLP as wide as the top_k experts a token uses
    "dense": replace(
        _MOE,
        kind="dense",
        intermediate_size=_MOE.top_k * _MOE.expert_intermediate_size,
        num_experts=0,
        top_k=0,
        expert_intermediate_size=0,
    ),
    "sweep": ModelPreset(
        kind="moe",
        num_layers=4,
        hidden_size=64,
        num_heads=4,
        num_kv_heads=2,
        intermediate_size=2 * 32,
        num_experts=8,
        top_k=2,
        expert_intermediate_size=32,
    ),
}
"""The named presets; the module docstring's table gives their sizes and timings."""
# one factor of ``sweep`` changed at a time, for the expert-volatility probes (findings page, finding 3)
PRESETS["sweep-deep"] = replace(PRESETS["sweep"], num_layers=8)
PRESETS["sweep-e32"] = replace(PRESETS["sweep"], num_experts=32)
PRESETS["sweep-k4"] = replace(PRESETS["sweep"], top_k=4)


def get_preset(preset: str | ModelPreset) -> ModelPreset:
    """A preset by name (a key of ``PRESETS``), or the given ``ModelPreset`` itself, checked."""
    if isinstance(preset, str):
        if preset not in PRESETS:
            raise ValueError(f"preset must be one of {sorted(PRESETS)} or a ModelPreset, got {preset!r}")
        preset = PRESETS[preset]
    if not isinstance(preset, ModelPreset):
        raise TypeError(f"preset must be a str or ModelPreset, got {type(preset).__name__}")
    if preset.hidden_size % preset.num_heads or preset.num_heads % preset.num_kv_heads:
        raise ValueError(
            f"preset needs hidden_size % num_heads == 0 and num_heads % num_kv_heads == 0, got "
            f"{preset.hidden_size}, {preset.num_heads}, {preset.num_kv_heads}"
        )
    k, e = preset.top_k, preset.num_experts
    if preset.kind == "moe" and not 1 <= k <= e:
        raise ValueError(f"an MoE preset needs 1 <= top_k <= num_experts, got top_k={k}, num_experts={e}")
    return preset


def make_config(preset: str | ModelPreset, vocab_size: int) -> PretrainedConfig:
    """The transformers config of a preset: a ``Qwen3MoeConfig`` or a ``Qwen3Config``."""
    p = get_preset(preset)
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < 2:
        raise ValueError(f"vocab_size must be an int >= 2, got {vocab_size!r}")
    common = dict(
        vocab_size=vocab_size,
        hidden_size=p.hidden_size,
        num_hidden_layers=p.num_layers,
        num_attention_heads=p.num_heads,
        num_key_value_heads=p.num_kv_heads,
        head_dim=p.head_dim,  # Qwen3Config's default is 128 whatever hidden_size is: always set it
        intermediate_size=p.intermediate_size,
        max_position_embeddings=MAX_POSITIONS,
        initializer_range=INIT_STD,
        # Qwen3-30B-A3B unties them; the class declares tie keys, but only a True here would tie the tensors
        tie_word_embeddings=False,
        # special ids in gspo_lab.tokenizer's order (<pad>, <bos>, <eos>); <pad>'s embedding stays zero
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        dtype="float32",
        attn_implementation=ATTN_IMPLEMENTATION,
    )
    if p.kind == "dense":
        config = Qwen3Config(**common)
    else:
        config = Qwen3MoeConfig(
            **common,
            num_experts=p.num_experts,
            num_experts_per_tok=p.top_k,
            moe_intermediate_size=p.expert_intermediate_size,
            norm_topk_prob=p.norm_topk_prob,
            decoder_sparse_step=1,
            output_router_logits=False,  # deviation 2: no load-balancing loss
            router_aux_loss_coef=0.0,
        )
    return config


def build_model(preset: str | ModelPreset, vocab_size: int, *, seed: int) -> PreTrainedModel:
    """A freshly initialised float32 policy; the same ``seed`` gives bitwise the same weights.

    Initialisation draws from a forked CPU RNG seeded with ``seed``: the caller's global RNG is untouched.
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    config = make_config(preset, vocab_size)
    cls = Qwen3MoeForCausalLM if isinstance(config, Qwen3MoeConfig) else Qwen3ForCausalLM
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = cls(config)
    return model.to(torch.float32)


def count_params(model: torch.nn.Module) -> dict[str, int]:
    """``{"total": …, "active": …}``: all parameters, and those one token uses.

    active = total − Σ_{MoE layers} (1 − top_k / num_experts) · (that layer's expert parameters); for a dense
    model active == total. Routers, embedding and LM head count in full.
    """
    total = sum(p.numel() for p in model.parameters())
    unused = 0
    for module in model.modules():
        if isinstance(module, Qwen3MoeSparseMoeBlock):
            n_expert_params = sum(p.numel() for p in module.experts.parameters())  # E equal-sized experts
            n_experts, top_k = module.gate.num_experts, module.gate.top_k
            unused += n_expert_params * (n_experts - top_k) // n_experts
    return {"total": total, "active": total - unused}
