"""Which experts a token used, and Routing Replay: forcing a forward pass through cached experts.

GSPO paper §5.3: after one gradient update, about 10 % of the experts a 48-layer MoE activates for the same
rollout change, so GRPO's token ratios π_θ / π_old compare two different sub-networks and fluctuate wildly.
*Routing Replay* ("R2") caches the experts π_old activated and reuses them when computing π_θ for the ratios;
the GRPO baseline needs it to converge, GSPO does not. (Not "R3", which replays the inference engine's
experts.)

transformers' ``Qwen3MoeSparseMoeBlock`` calls its router ``.gate`` (a ``Qwen3MoeTopKRouter``) and hands the
result, ``(router_logits, router_scores, router_indices)``, to ``.experts``; no argument lets a caller pass
indices in. So :func:`enable_routing_control` adds two forward hooks to every MoE block, once: a pre-hook on
the block notes (B, T), and a hook on the router reads (record) or replaces (replay) its output. With no mode
active the hooks return nothing and the model computes exactly what it would without them. Parameters,
``state_dict`` keys and ``save_pretrained`` are unchanged; the state lives in one :class:`RoutingControl` per
model (a ``copy.deepcopy`` of the model gets its own), never in a global.

Shapes: B sequences, T tokens, L MoE layers (in model order), k = top_k, E = num_experts. Routing indices are
(B, L, T, k) int64 expert ids in [0, E), each token's k ids distinct, in the router's order (descending gate
weight when recorded).

Replay (one forward pass, every MoE layer): experts = the cached ids; gate weights = the *current* router's
softmax probabilities at those ids, renormalised over the k ids when ``norm_topk_prob`` is set, exactly as the
router does:
    g_{t,j} = softmax(W_r h_t)[e_{t,j}] / Σ_{j'} softmax(W_r h_t)[e_{t,j'}]
so gradients still reach the router weights W_r (only the discrete choice is frozen). With unchanged weights a
replay of recorded ids reproduces the logits bitwise (tests/test_routing.py).

Declared limits:
1) record captures ONE forward pass (teacher-forced over full sequences, as when computing log-probs); a
   second pass in the same context (e.g. ``generate`` with a KV cache) raises instead of mixing passes.
2) replay acts during the forward; backward needs nothing more, *unless* gradient checkpointing recomputes the
   forward during backward, outside the context: replay refuses to run on a model with checkpointing on.
3) only transformers' Qwen3-MoE blocks are controlled (``Qwen3MoeSparseMoeBlock``).
4) the hooks rely on transformers' router internals (its output triple, its softmax / top-k / renormalisation).
   Before the first record or replay of each model class in a process, :func:`self_check` runs a replay of
   recorded ids on a tiny batch and requires the logits to come back bitwise; on any difference it raises
   :class:`RoutingSelfCheckError` naming the installed transformers and the versions tested
   (:data:`TESTED_TRANSFORMERS`). The check, not the version number, decides: a later release whose router
   still behaves passes.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal

import torch
from torch import Tensor, nn
from transformers.models.qwen3_moe.modeling_qwen3_moe import Qwen3MoeSparseMoeBlock

from gspo_lab.reductions import masked_mean
from gspo_lab.validate import check_mask

__all__ = [
    "TESTED_TRANSFORMERS",
    "RoutingSelfCheckError",
    "self_check",
    "RoutingControl",
    "RoutingRecord",
    "enable_routing_control",
    "record_routing",
    "replay_routing",
    "experts_used",
    "expert_change_frac",
    "expert_change_frac_per_layer",
    "expert_swap_frac",
]

_ATTR = "_gspo_routing_control"  # where a model keeps its RoutingControl
#: transformers releases whose Qwen3-MoE router this module was tested against (tests/test_routing.py)
TESTED_TRANSFORMERS = ("5.24.0", "5.25.0")
_CHECKED: set[type] = set()  # model classes whose self-check passed in this process


class RoutingSelfCheckError(RuntimeError):
    """Routing record/replay does not reproduce transformers' router on this installation."""


def self_check(model: nn.Module, *, force: bool = False) -> None:
    """Replay the recorded routing of a tiny fixed batch (B = 2, T = 6, no RNG) and require the logits bitwise; once
    per model class and process unless ``force``. Raises :class:`RoutingSelfCheckError` (numbered limit 4)."""
    if type(model) in _CHECKED and not force:
        return
    import transformers

    vocab = model.config.vocab_size
    x = (torch.arange(12).reshape(2, 6) * 7 + 3) % vocab
    problem = None
    try:
        with torch.no_grad():
            with _recording(model) as rec:
                plain = model(input_ids=x).logits
            with _replaying(model, rec.indices):
                again = model(input_ids=x).logits
        if not torch.equal(plain, again):
            problem = f"replaying the recorded experts changed the logits (max |Δ| = {(plain - again).abs().max():.3g})"
    except Exception as exc:  # an internal change shows up as any error inside the hooks
        problem = f"{type(exc).__name__}: {exc}"
    if problem is not None:
        raise RoutingSelfCheckError(
            f"Routing Replay self-check failed on {type(model).__name__} with transformers {transformers.__version__} "
            f"(tested: {', '.join(TESTED_TRANSFORMERS)}): {problem}. transformers' Qwen3-MoE router internals "
            "changed; record/replay would be silently wrong. Install a tested transformers "
            f"(pip install 'transformers=={TESTED_TRANSFORMERS[-1]}') or update gspo_lab/routing.py."
        )
    _CHECKED.add(type(model))


@dataclass(eq=False)
class RoutingControl:
    """The routing state of one model: its MoE geometry, the active mode and that mode's buffers."""

    num_layers: int
    """L: MoE layers, in model order."""
    num_experts: int
    """E: routed experts per layer."""
    top_k: int
    """k: experts per token."""
    mode: Literal["off", "record", "replay"] = "off"
    recorded: list[Tensor | None] = field(default_factory=list)
    """record mode: per layer, the (B, T, k) ids of the pass, or None before that layer ran."""
    replay_indices: Tensor | None = None
    """replay mode: the (B, L, T, k) ids to route through."""
    batch_shape: tuple[int, int] | None = None
    """(B, T) of the MoE block running now (set by the block's pre-hook)."""


class _BlockShapeHook:
    """Pre-hook on an MoE block: note (B, T) of its (B, T, H) input; check it against replay indices."""

    def __init__(self, control: RoutingControl) -> None:
        self.control = control

    def __call__(self, module: nn.Module, args: tuple) -> None:
        c = self.control
        if c.mode == "off":
            return
        b, t = args[0].shape[:2]
        c.batch_shape = (b, t)
        if c.mode == "replay":
            want = (c.replay_indices.shape[0], c.replay_indices.shape[2])
            if (b, t) != want:
                raise ValueError(
                    f"replay indices have (B, T) = {want} but this batch is (B, T) = {(b, t)}; "
                    "indices must be (B, L, T, k) for this batch"
                )


class _RouterHook:
    """Forward hook on layer ``layer``'s router: record its top-k ids, or replace them by the cached ones."""

    def __init__(self, control: RoutingControl, layer: int, norm_topk_prob: bool) -> None:
        self.control, self.layer, self.norm_topk_prob = control, layer, norm_topk_prob

    def __call__(self, module: nn.Module, args: tuple, output: tuple) -> tuple | None:
        c = self.control
        if c.mode == "off":
            return None
        b, t = c.batch_shape
        router_logits, _, router_indices = output  # (B·T, E), (B·T, k), (B·T, k); rows in (b, t) order
        if c.mode == "record":
            if c.recorded[self.layer] is not None:
                raise RuntimeError(
                    f"record_routing captures one forward pass, but MoE layer {self.layer} ran twice in the "
                    "context; record each pass in its own context"
                )
            c.recorded[self.layer] = router_indices.detach().reshape(b, t, c.top_k)
            return None
        c.recorded[self.layer] = router_indices.detach().reshape(b, t, c.top_k)  # what π_θ would have chosen
        ids = c.replay_indices[:, self.layer].reshape(b * t, c.top_k).to(router_logits.device)
        # the router's own arithmetic at the cached ids: float32 softmax, gather, renormalise over the k ids
        probs = torch.softmax(router_logits, dim=-1, dtype=torch.float)
        gate_weights = probs.gather(-1, ids)
        if self.norm_topk_prob:
            gate_weights = gate_weights / gate_weights.sum(dim=-1, keepdim=True)
        return router_logits, gate_weights.to(router_logits.dtype), ids


def _moe_blocks(model: nn.Module) -> list[Qwen3MoeSparseMoeBlock]:
    blocks = [m for m in model.modules() if isinstance(m, Qwen3MoeSparseMoeBlock)]
    if not blocks:
        name = type(model).__name__
        raise TypeError(f"model must contain Qwen3MoeSparseMoeBlock layers (a Qwen3-MoE), got {name}")
    return blocks


def enable_routing_control(model: nn.Module) -> RoutingControl:
    """Install the record/replay hooks on every MoE block of ``model`` (once) and return its RoutingControl.

    Idempotent: a second call returns the same control and adds no hooks. The model computes exactly as before
    until :func:`record_routing` or :func:`replay_routing` switches a mode on.
    """
    control = getattr(model, _ATTR, None)
    if control is not None:
        return control
    blocks = _moe_blocks(model)
    gates = [b.gate for b in blocks]
    control = RoutingControl(num_layers=len(blocks), num_experts=gates[0].num_experts, top_k=gates[0].top_k)
    if any(g.num_experts != control.num_experts or g.top_k != control.top_k for g in gates):
        raise ValueError("every MoE layer must have the same num_experts and top_k to stack (B, L, T, k) ids")
    for layer, block in enumerate(blocks):
        block.register_forward_pre_hook(_BlockShapeHook(control))
        block.gate.register_forward_hook(_RouterHook(control, layer, bool(block.gate.norm_topk_prob)))
    object.__setattr__(model, _ATTR, control)  # a plain attribute: not a submodule, not in the state_dict
    return control


class RoutingRecord:
    """What :func:`record_routing` captured; ``indices`` is set when the context exits."""

    def __init__(self) -> None:
        self._indices: Tensor | None = None
        self._missing: list[int] = []

    @property
    def indices(self) -> Tensor:
        """(B, L, T, k) int64 expert ids of the recorded forward pass, in the router's order."""
        if self._indices is None:
            raise RuntimeError(
                "no complete forward pass was recorded (read rec.indices after the with-block; "
                f"MoE layers not seen: {self._missing})"
            )
        return self._indices


@contextmanager
def record_routing(model: nn.Module) -> Iterator[RoutingRecord]:
    """Record the top-k expert ids of one forward pass.

    ``with record_routing(m) as rec: m(x)``, then ``rec.indices`` (B, L, T, k). The forward is unchanged
    (bitwise); only the ids are kept, detached. The first call per model class runs :func:`self_check`.
    """
    self_check(model)
    with _recording(model) as record:
        yield record


@contextmanager
def _recording(model: nn.Module) -> Iterator[RoutingRecord]:
    control = enable_routing_control(model)
    _check_idle(control)
    control.mode, control.recorded = "record", [None] * control.num_layers
    record = RoutingRecord()
    try:
        yield record
        _finish(record, control.recorded)
    finally:
        control.mode, control.recorded, control.batch_shape = "off", [], None


@contextmanager
def replay_routing(model: nn.Module, indices: Tensor) -> Iterator[RoutingRecord]:
    """Route every forward pass in the context through cached ``indices`` (B, L, T, k): Routing Replay, §5.3.

    Gate weights come from the current router at those ids (see the module docstring), so the router still
    learns. The yielded record's ``indices`` are the current router's own top-k in the last pass (computed
    anyway), on that pass's hidden states — which below layer 0 already went through replayed experts, so from
    layer 1 on it is "what this router would pick here", not the routing of an un-replayed π_θ forward.
    Raises ValueError for indices of the wrong shape, dtype or range, RuntimeError under gradient checkpointing.
    The first call per model class runs :func:`self_check`.
    """
    self_check(model)
    with _replaying(model, indices) as record:
        yield record


@contextmanager
def _replaying(model: nn.Module, indices: Tensor) -> Iterator[RoutingRecord]:
    control = enable_routing_control(model)
    _check_idle(control)
    _check_indices(indices, control)
    # transformers' own test (is_activation_checkpointing in 5.x), spelled out: the name changed within 5.x
    if any(getattr(m, "gradient_checkpointing", False) is True for m in model.modules()):
        raise RuntimeError(
            "replay_routing needs gradient checkpointing off: a recomputation during backward would run "
            "outside the replay context and route differently"
        )
    control.mode, control.replay_indices = "replay", indices.long()
    control.recorded = [None] * control.num_layers
    record = RoutingRecord()
    try:
        yield record
        _finish(record, control.recorded)
    finally:
        control.mode, control.replay_indices, control.batch_shape, control.recorded = "off", None, None, []


@contextmanager
def experts_used(model: nn.Module) -> Iterator[RoutingRecord]:
    """The expert ids each MoE block's experts *received* in the last forward pass of the context (B, L, T, k): the
    routing that computed the output, whatever the router proposed — under :func:`replay_routing`, the replayed
    ids. A measurement from outside the router hooks (a pre-hook on every ``block.experts``), so it also checks that
    a replay reached the experts. Works inside or outside record / replay."""
    blocks = _moe_blocks(model)
    if not blocks:
        raise ValueError("experts_used needs an MoE model (Qwen3-MoE blocks); this one has none")
    layers: list[Tensor | None] = [None] * len(blocks)
    shapes: list[tuple[int, int] | None] = [None] * len(blocks)
    handles = []
    for i, block in enumerate(blocks):
        handles.append(block.register_forward_pre_hook(lambda _m, args, i=i: shapes.__setitem__(i, args[0].shape[:2])))
        handles.append(block.experts.register_forward_pre_hook(lambda _m, args, i=i: layers.__setitem__(i, args[1])))
    record = RoutingRecord()
    try:
        yield record
        if all(x is not None for x in layers):
            layers = [x.detach().reshape(*shape, -1).long() for x, shape in zip(layers, shapes, strict=True)]
        _finish(record, layers)
    finally:
        for h in handles:
            h.remove()


def _finish(record: RoutingRecord, layers: list[Tensor | None]) -> None:
    record._missing = [i for i, x in enumerate(layers) if x is None]
    if not record._missing:
        record._indices = torch.stack(layers, dim=1)  # L × (B, T, k) -> (B, L, T, k)


def _check_idle(control: RoutingControl) -> None:
    if control.mode != "off":
        raise RuntimeError(f"routing control is already in {control.mode!r} mode; record/replay do not nest")


def _check_indices(indices: object, control: RoutingControl) -> None:
    L, E, k = control.num_layers, control.num_experts, control.top_k
    if not isinstance(indices, Tensor):
        raise TypeError(f"indices must be a torch.Tensor of expert ids, got {type(indices).__name__}")
    if indices.dtype == torch.bool or indices.is_floating_point() or indices.is_complex():
        raise ValueError(f"indices must have an integer dtype, got {indices.dtype}")
    got = tuple(indices.shape)
    if indices.dim() != 4 or indices.shape[1] != L or indices.shape[3] != k:
        raise ValueError(f"indices must have shape (B, L, T, k) = (B, {L}, T, {k}), got {got}")
    if indices.numel() and not bool(((indices >= 0) & (indices < E)).all()):
        bad = indices[(indices < 0) | (indices >= E)].flatten()[:3].tolist()
        raise ValueError(f"indices must hold expert ids in [0, {E}), found e.g. {bad}")
    ordered = indices.sort(dim=-1).values
    if k > 1 and bool((ordered[..., 1:] == ordered[..., :-1]).any()):
        raise ValueError(f"indices must hold {k} distinct experts per (b, layer, t); found a repeat")


def _changed_sets(old_idx: Tensor, new_idx: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
    """(B, L, T) bool: the top-k *set* differs (order-insensitive); and mask broadcast to (B, L, T)."""
    for name, x in (("old_idx", old_idx), ("new_idx", new_idx)):
        if not isinstance(x, Tensor) or x.dim() != 4 or x.is_floating_point() or x.dtype == torch.bool:
            got = tuple(x.shape) if isinstance(x, Tensor) else type(x).__name__
            raise ValueError(f"{name} must be an integer tensor of shape (B, L, T, k), got {got}")
    if old_idx.shape != new_idx.shape:
        want, got = tuple(old_idx.shape), tuple(new_idx.shape)
        raise ValueError(f"new_idx must have the shape of old_idx, {want}; got {got}")
    b, n_layers, t, _ = old_idx.shape
    valid = check_mask(mask, torch.Size((b, t)))
    changed = (old_idx.sort(-1).values != new_idx.sort(-1).values).any(-1)
    return changed, valid[:, None, :].expand(b, n_layers, t)


def expert_change_frac(old_idx: Tensor, new_idx: Tensor, mask: Tensor) -> float:
    """Fraction of valid (token, layer) pairs whose top-k expert *set* changed (order-insensitive).

    old_idx, new_idx: (B, L, T, k) ids of the same tokens under two policies; mask: (B, T), True at valid
    tokens. A (token, layer) counts as changed if any one of its k experts differs. No valid token gives 0.0.
    GSPO paper §5.3: about 10 % of the activated experts differ after one update (a 48-layer MoE; how it was
    averaged is not stated). This is the set-level reading; :func:`expert_swap_frac` is the per-expert one.
    """
    changed, valid = _changed_sets(old_idx, new_idx, mask)
    return float(masked_mean(changed.float(), valid, dim=None))


def expert_change_frac_per_layer(old_idx: Tensor, new_idx: Tensor, mask: Tensor) -> Tensor:
    """:func:`expert_change_frac` for each MoE layer separately. (B, L, T, k) x2, (B, T) -> (L,) float32."""
    changed, valid = _changed_sets(old_idx, new_idx, mask)
    by_layer = changed.float().transpose(0, 1).flatten(1)  # (L, B·T)
    return masked_mean(by_layer, valid.transpose(0, 1).flatten(1), dim=-1)


def expert_swap_frac(old_idx: Tensor, new_idx: Tensor, mask: Tensor) -> float:
    """Fraction of the experts ``new_idx`` activates (valid token, layer, slot) that ``old_idx`` did not.

    (B, L, T, k) x2, (B, T) -> float. Each changed set contributes (experts swapped) / k, so this is at most
    :func:`expert_change_frac`, with equality when k = 1.
    """
    _, valid = _changed_sets(old_idx, new_idx, mask)  # validates the arguments
    # (B, L, T, k): is this slot's expert in the old set?
    kept = (new_idx.unsqueeze(-1) == old_idx.unsqueeze(-2)).any(-1)
    swapped = (~kept).float().mean(-1)  # (B, L, T)
    return float(masked_mean(swapped, valid, dim=None))
