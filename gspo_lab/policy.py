"""Per-token log-probabilities of sampled responses under a causal LM: π_θ(y_{i,t} | x, y_{i,<t}).

The one place where a transformers model becomes the (B, T) ``logp`` tensor every objective takes. Used for π_old
(no grad, right after sampling — as TRL and verl recompute it) and for π_θ in every update.

The policy is the one that *sampled*: softmax(logits / τ) at the sampling temperature τ. Every log-prob (π_old, π_θ,
the reference) and the entropy are scored at that τ, as TRL does (``logits /= temperature`` before the log-softmax);
scoring at τ = 1 a batch sampled at τ ≠ 1 would make the ratios, the gradient and the entropy those of another
policy. :func:`rollout_logprobs` takes τ from the rollout itself.

Layout (the rollout's): prompts left-padded to P columns, responses right-padded to T columns, so response token t
of every row sits at column P + t. Positions come from the attention mask, so padding never shifts them.
Shapes: B sequences, P prompt columns, T response columns, V vocabulary.
"""

from __future__ import annotations

import functools

import torch
from torch import Tensor

__all__ = ["position_ids", "response_logprobs", "rollout_logprobs"]


def position_ids(attention_mask: Tensor) -> Tensor:
    """(B, S) 0/1 -> (B, S) positions: 0 at each row's first real token, padding clamped to 0."""
    return (attention_mask.long().cumsum(-1) - 1).clamp(min=0)


def _logits(model: torch.nn.Module, input_ids: Tensor, attention_mask: Tensor, keep: int) -> Tensor:
    """(B, keep, V): the model's last ``keep`` columns of logits, positions from the attention mask."""
    out = model(
        input_ids=input_ids,
        attention_mask=attention_mask,
        position_ids=position_ids(attention_mask),
        use_cache=False,
        logits_to_keep=keep,
    )
    return out.logits


def _has_cpp_compiler() -> bool:
    """Whether inductor finds its C++ compiler (``torch._inductor.config.cpp.cxx``, e.g. g++; ``$CXX`` overrides)."""
    from torch._inductor.cpp_builder import get_cpp_compiler

    try:
        get_cpp_compiler()
    except Exception:  # inductor raises its own InvalidCxxCompiler (a RuntimeError) when none of its candidates runs
        return False
    return True


#: dynamo's graphs per compiled function before it gives up and runs eager (its default is 8): the trainer's forward
#: compiles one graph per grad mode (π_old's no-grad pass, the update's) × routing hooks' mode (off, record, replay)
#: × model class and depth, which a long-lived sweep worker running several specs can pass
RECOMPILE_LIMIT = 64
#: torch.compile's backend on the compiled paths (bench/bench_step.py's smoke run sets "aot_eager": the same tracing
#: and graphs without inductor's code generation)
COMPILE_BACKEND = "inductor"


def compile_or_eager(fn, what: str, **options):
    """``torch.compile(fn, **options)`` for the compiled paths (TrainConfig's ``compile_update`` and
    ``compile_sampler``), or ``fn`` itself, eager, where inductor finds no C++ compiler (said in one line naming
    ``what``). Sets three process-wide options the first time: dynamo's :data:`RECOMPILE_LIMIT`; its guards on module
    hooks, which it skips by default (a graph traced before :mod:`gspo_lab.routing` installed its hooks on a model
    would otherwise run later passes without them: no routing recorded, no replay); and functorch's buffer donation
    off (a compiled backward may not donate its buffers: ``norm_of``'s first backward keeps the graph, with
    ``retain_graph=True``, for the second; the flag is read when the backward is compiled, at the first backward)."""
    if COMPILE_BACKEND == "inductor" and not _has_cpp_compiler():
        print(f"{what}: no C++ compiler found for torch.compile (inductor); it runs eager", flush=True)
        return fn
    import torch._dynamo.config  # not loaded by `import torch`: only a compiling process pays for them
    import torch._functorch.config

    torch._functorch.config.donated_buffer = False
    torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, RECOMPILE_LIMIT)
    torch._dynamo.config.skip_nnmodule_hook_guards = False
    return torch.compile(fn, backend=COMPILE_BACKEND, **options)


@functools.cache
def _compiled_logits():
    """:func:`_logits` under ``torch.compile(dynamic=True)``, built once per process: inductor fuses the element-wise
    work of a forward and its backward (bench/roofline.py measured 1.22× on an update, warm, after ~40 s of
    compiling, ~12 s from inductor's on-disk cache). The model is an argument, so one compilation serves every policy
    of the same class in a long-lived process (a sweep worker's later cells compile nothing). π_old's no-grad forward
    and the update's are two graphs (dynamo guards on the grad mode), and the routing hooks
    (:mod:`gspo_lab.routing`: recording, Routing Replay, R3) are traced into them, one graph per hook mode; their
    recorded ids are those of the eager forward (tests/test_train.py). Where inductor finds no C++ compiler it
    returns :func:`_logits` itself (eager, the reference path) and says so in one line."""
    return compile_or_eager(_logits, "compile_update", dynamic=True)


def response_logprobs(
    model: torch.nn.Module,
    prompt_ids: Tensor,
    prompt_mask: Tensor,
    response_ids: Tensor,
    response_mask: Tensor,
    *,
    temperature: float = 1.0,
    with_entropy: bool = False,
    compiled: bool = False,
    keep: Tensor | None = None,
) -> tuple[Tensor, Tensor | None]:
    """log π_τ(y_{i,t} | x_i, y_{i,<t}) for every response token, π_τ = softmax(logits / τ); one full forward pass.

    Args:
        model: a transformers causal LM (``model(...).logits``).
        prompt_ids, prompt_mask: (B, P) left-padded prompts.
        response_ids, response_mask: (B, T) right-padded responses (mask: bool or 0/1).
        temperature: τ > 0, the sampling temperature of the policy being scored.
        with_entropy: also return the entropy of π_τ(· | x_i, y_{i,<t}) at each position.
        compiled: run the model's forward under ``torch.compile`` (:func:`_compiled_logits`; TrainConfig's
            ``compile_update``): the same policy up to float rounding (~1e-6 in the log-probs), not bit for bit.
        keep: (B, T, V) bool, the tokens a top-k / top-p sampler kept at each step (``Rollout.sampler_keep``):
            π_τ is then renormalised over them ("sampling replay", TrainConfig's ``sampling_replay``), so the trainer
            scores the distribution the sampler drew from. None: the whole vocabulary.

    Returns:
        logp: (B, T) float32 (float64 for a float64 model); padding positions hold finite junk, mask them.
        entropy: (B, T) or None.
    """
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not temperature > 0:
        raise ValueError(f"temperature must be a number > 0, got {temperature!r}")
    if prompt_ids.shape[0] != response_ids.shape[0]:
        raise ValueError(f"prompt_ids has {prompt_ids.shape[0]} rows but response_ids has {response_ids.shape[0]}")
    T = response_ids.shape[1]
    input_ids = torch.cat([prompt_ids, response_ids], 1)
    attention_mask = torch.cat([prompt_mask.long(), response_mask.long()], 1)
    if compiled:
        logits = _compiled_logits()(model, input_ids, attention_mask, T + 1)
    else:
        logits = _logits(model, input_ids, attention_mask, T + 1)
    logits = logits[:, :-1]  # the logits at column P − 1 + t predict response token t
    logits = logits.float() if logits.dtype in (torch.float16, torch.bfloat16) else logits
    if temperature != 1.0:
        logits = logits / temperature  # the sampler's division, the same arithmetic (rollout.sample_responses)
    if keep is not None:
        if keep.shape != logits.shape:
            raise ValueError(f"keep must have shape (B, T, V) = {tuple(logits.shape)}, got {tuple(keep.shape)}")
        logits = logits.masked_fill(~keep, -torch.inf)
    logp_all = torch.log_softmax(logits, -1)
    logp = logp_all.gather(-1, response_ids.unsqueeze(-1)).squeeze(-1)
    entropy = None
    if with_entropy:  # p log p is 0 at p = 0 (a token the sampler dropped), not 0 · −inf
        plogp = logp_all.exp() * logp_all
        entropy = -(plogp.nan_to_num(nan=0.0) if keep is not None else plogp).sum(-1)
    return logp, entropy


def rollout_logprobs(
    model: torch.nn.Module, rollout, rows: Tensor | None = None, *, with_entropy: bool = False, compiled: bool = False,
    replay: bool = False,
):  # fmt: skip
    """:func:`response_logprobs` of a :class:`~gspo_lab.rollout.Rollout`'s rows ``rows`` (default: all of them),
    scored at the temperature the rollout was sampled at; with ``replay``, on the tokens its sampler kept
    (``sampler_keep``; a rollout sampled without top-k / top-p has none, and is scored on the whole vocabulary)."""
    parts = (rollout.prompt_ids, rollout.prompt_mask, rollout.response_ids, rollout.response_mask)
    keep = rollout.sampler_keep if replay else None
    if rows is not None:
        parts = tuple(x.index_select(0, rows) for x in parts)
        keep = keep.index_select(0, rows) if keep is not None else None
    return response_logprobs(
        model, *parts, temperature=rollout.temperature, with_entropy=with_entropy, compiled=compiled, keep=keep
    )
