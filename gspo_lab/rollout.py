"""Rollout: sample G responses per prompt from π_old with a KV cache and an explicit ``torch.Generator``.

Two sets of π_old log-probs come out of a rollout, as in production RL stacks:
    * ``sampler_logp`` — what the sampler itself computed token by token through its KV cache (the "inference
      engine" log-probs; optionally under bf16 autocast for the precision study of the paper's §5.4);
    * ``old_logp`` — a full no-grad forward over prompt + response with the training model (what TRL and verl
      use by default). The first update on a rollout therefore sees every ratio exactly 1.
Both are log-probs of softmax(logits / τ) at the sampling temperature τ, which the rollout records. With top-k or
top-p sampling on (:func:`kept_tokens`), the sampler draws from that distribution renormalised over the tokens it
kept, and ``sampler_logp`` is the renormalised one, as an inference engine returns it; the kept set of every step is
recorded (``sampler_keep``) so that a trainer can score on it ("sampling replay", ``policy.response_logprobs``'s
``keep``). The full-vocabulary trainer's ratio to such log-probs carries the kept mass even when nothing moved.

Layout: prompts left-padded to P columns with a leading <bos>; responses right-padded to T <= max_new_tokens
columns; the <eos> a response ends with is one of its valid tokens (it is a sampled action), padding after it is
not. Shapes: B = n_prompts · G rows, each prompt's G copies contiguous (the advantages' layout).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from dataclasses import dataclass

import torch
from torch import Tensor
from transformers import DynamicCache, StaticCache

from gspo_lab.policy import compile_or_eager, position_ids, response_logprobs
from gspo_lab.routing import record_routing as record_pass
from gspo_lab.routing import replay_routing
from gspo_lab.tasks import Problem
from gspo_lab.validate import check_sampling

__all__ = [
    "Rollout",
    "kept_tokens",
    "renormalised",
    "encode_prompts",
    "replay_sampler_routing",
    "sample_responses",
    "decode_completions",
    "rollout",
]


@dataclass
class Rollout:
    """One rollout batch (B rows). Tensors live on CPU; see the module docstring for the layout."""

    problems: list[Problem]
    prompt_ids: Tensor  # (B, P) int64, left-padded
    prompt_mask: Tensor  # (B, P) bool
    response_ids: Tensor  # (B, T) int64, right-padded
    response_mask: Tensor  # (B, T) bool, the <eos> included
    sampler_logp: Tensor  # (B, T) float32: the sampler's own log-probs
    completions: list[str]  # decoded responses without <eos>
    truncated: Tensor  # (B,) bool: no <eos> within max_new_tokens
    group_size: int  # G: rows i·G … i·G + G − 1 answer the same problem
    temperature: float = 1.0  # τ the responses were sampled at: every later log-prob is scored at it
    old_logp: Tensor | None = None  # (B, T) float32: full-forward log-probs under π_old (at τ)
    sampler_keep: Tensor | None = None  # (B, T, V) bool: the tokens top-k / top-p kept at each step (None: all)
    sampler_routing: Tensor | None = None  # (B, L, P + T, k) int64: the sampler's experts (R3), None unless recorded


def kept_tokens(logp_all: Tensor, top_k: int = 0, top_p: float = 1.0) -> Tensor | None:
    """(…, V) bool: the tokens a top-k then top-p sampler keeps from log-probs ``logp_all`` (…, V) (the order of
    transformers' and vLLM's samplers); None when neither is on (``top_k = 0``, ``top_p = 1``). top-k keeps the k
    most likely (the first on a tie); top-p then keeps the most likely tokens while the mass before each is < top_p,
    so the most likely token always stays."""
    check_sampling(top_k, top_p)
    if top_k == 0 and top_p == 1:
        return None
    keep = torch.ones_like(logp_all, dtype=torch.bool)
    if 0 < top_k < logp_all.shape[-1]:
        keep = torch.zeros_like(keep).scatter_(-1, logp_all.topk(top_k, -1).indices, True)
    if top_p < 1:
        masked = logp_all.masked_fill(~keep, -torch.inf)
        order = torch.argsort(masked, dim=-1, descending=True, stable=True)
        probs = torch.softmax(masked, -1).gather(-1, order)
        before = probs.cumsum(-1) - probs  # the mass of the tokens ranked above each one
        keep = keep & torch.zeros_like(keep).scatter_(-1, order, before < top_p)
    return keep


def renormalised(logp_all: Tensor, keep: Tensor) -> Tensor:
    """log-probs (…, V) renormalised over the kept tokens ``keep`` (…, V), −inf elsewhere: what the sampler draws
    from and what it returns as its log-probs."""
    return torch.log_softmax(logp_all.masked_fill(~keep, -torch.inf), -1)


def encode_prompts(tokenizer, prompts: list[str]) -> tuple[Tensor, Tensor]:
    """<bos> + prompt characters, left-padded: (B, P) ids and (B, P) bool mask."""
    enc = tokenizer([tokenizer.bos_token + p for p in prompts], add_special_tokens=False, padding=True)
    ids = torch.tensor(enc["input_ids"], dtype=torch.long)
    mask = torch.tensor(enc["attention_mask"], dtype=torch.bool)
    if bool((mask.long().diff(dim=-1) < 0).any()):
        raise ValueError("the tokenizer must pad on the left (padding_side='left') for batched sampling")
    return ids, mask


def _cache_kwarg(model: torch.nn.Module) -> str:
    """transformers renamed ``past_key_values`` to ``cache`` during 5.x: use whichever this version takes."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def _last_logits(model: torch.nn.Module, cache: dict, **inputs) -> Tensor:
    """(B, V): the logits at the last column of one sampler pass through the KV cache ``cache`` (its keyword)."""
    return model(**inputs, use_cache=True, **cache).logits[:, -1]


@functools.cache
def _compiled_decode():
    """:func:`_last_logits` under ``torch.compile``, built once per process, for the decode steps on a static cache:
    every step has the same shapes (one token per row, the cache's full width), so one graph serves them all and
    every later rollout of the same shape (sampler precision and routing record are guarded; each adds a graph)."""
    return compile_or_eager(_last_logits, "compile_sampler")


@torch.no_grad()
def sample_responses(
    model: torch.nn.Module,
    prompt_ids: Tensor,
    prompt_mask: Tensor,
    *,
    max_new_tokens: int,
    eos_id: int,
    pad_id: int,
    generator: torch.Generator | None,
    temperature: float = 1.0,
    autocast_dtype: torch.dtype | None = None,
    greedy: bool = False,
    top_k: int = 0,
    top_p: float = 1.0,
    record_routing: bool = False,
    compiled: bool = False,
) -> tuple[Tensor, Tensor, Tensor, Tensor | None, Tensor | None]:
    """Ancestral sampling with a KV cache. Returns response_ids (B, T), response_mask (B, T), sampler_logp (B, T),
    the kept tokens (B, T, V) (None unless top-k or top-p is on: :func:`kept_tokens`; the draw and ``sampler_logp``
    are then those of the distribution renormalised over them), and with ``record_routing`` (an MoE model) the
    experts the sampler's own passes chose, (B, L, P + T, k) in the trainer's layout (prompt, then response; the last
    response token, whose logits no log-prob reads, gets experts 0..k−1), else None: the routing R3 replays.

    ``generator`` drives every draw (no global RNG). ``autocast_dtype=torch.bfloat16`` runs the sampler's forward
    passes under CPU autocast, like a lower-precision inference engine. ``greedy=True`` takes the argmax instead of
    a draw (the first maximum wins a tie; the generator is neither needed nor touched); ``sampler_logp`` is still
    that of softmax(logits / temperature). Stops when every row has emitted <eos>.

    ``compiled=True`` (TrainConfig's ``compile_sampler``) keeps the KV cache in a ``StaticCache`` of P +
    ``max_new_tokens`` columns (the attention mask as wide, its later columns filled in as tokens are drawn) and runs
    the decode steps under ``torch.compile`` (:func:`_compiled_decode`; the prompt's pass stays eager): the same
    draws, with log-probs within float rounding of the eager sampler's (tests/test_rollout.py). Without a C++
    compiler the static cache runs eager.
    """
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    if not greedy and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator when greedy=False, got {type(generator).__name__}")
    B = prompt_ids.shape[0]
    attn = prompt_mask.long()
    pos = position_ids(attn)
    P = prompt_ids.shape[1]
    if compiled:  # every column the cache will hold, masked until its token is drawn
        cache_kw = {_cache_kwarg(model): StaticCache(config=model.config, max_cache_len=P + max_new_tokens)}
        attn = torch.cat([attn, attn.new_zeros(B, max_new_tokens)], 1)
    else:
        cache_kw = {_cache_kwarg(model): DynamicCache(config=model.config)}
    step = _compiled_decode() if compiled else _last_logits
    autocast = torch.autocast("cpu", dtype=autocast_dtype) if autocast_dtype else contextlib.nullcontext()
    tokens, logps, valid, kept, routed = [], [], [], [], []
    done = torch.zeros(B, dtype=torch.bool)

    def forward(run, **kw):
        if not record_routing:
            return run(model, cache_kw, **kw)
        with record_pass(model) as rec:  # one pass each: the prompt, then one token per step
            logits = run(model, cache_kw, **kw)
        routed.append(rec.indices)
        return logits

    with autocast:
        logits = forward(_last_logits, input_ids=prompt_ids, attention_mask=attn, position_ids=pos)
        next_pos = pos[:, -1:] + 1
        for i in range(max_new_tokens):
            logp_all = torch.log_softmax(logits.float() / temperature, -1)
            keep = kept_tokens(logp_all, top_k, top_p)
            if keep is not None:  # the engine's renormalised distribution over the tokens it kept
                logp_all = renormalised(logp_all, keep)
                kept.append(keep)
            if greedy:
                tok = logp_all.argmax(-1)
            else:
                tok = torch.multinomial(logp_all.exp(), 1, generator=generator).squeeze(-1)
            tok = tok.masked_fill(done, pad_id)
            tokens.append(tok)
            logps.append(logp_all.gather(-1, tok[:, None]).squeeze(-1))
            valid.append(~done)
            done = done | (tok == eos_id)
            if bool(done.all()):
                break
            if compiled:  # a padded step is invisible to later ones
                attn[:, P + i] = valid[-1].long()
            else:
                attn = torch.cat([attn, valid[-1].long()[:, None]], 1)
            logits = forward(step, input_ids=tok[:, None], attention_mask=attn, position_ids=next_pos)
            next_pos = next_pos + 1
    mask = torch.stack(valid, 1)
    sampler_logp = torch.stack(logps, 1).masked_fill(~mask, 0.0)
    sampler_routing = None
    if record_routing:  # P + T columns; a last token never fed back (the loop ended on <eos>) gets ids 0..k−1
        columns = P + len(tokens)
        last = torch.arange(routed[0].shape[-1]).expand(B, routed[0].shape[1], 1, -1)
        sampler_routing = torch.cat([*routed, last], dim=2)[:, :, :columns]
    return torch.stack(tokens, 1), mask, sampler_logp, (torch.stack(kept, 1) if kept else None), sampler_routing


def replay_sampler_routing(model: torch.nn.Module, data: Rollout, rows: Tensor):
    """R3: a :func:`~gspo_lab.routing.replay_routing` context through the experts the sampler chose for rows ``rows``
    of ``data`` (``Rollout.sampler_routing``, recorded by :func:`sample_responses` with ``record_routing``)."""
    if data.sampler_routing is None:
        raise ValueError("R3 needs the sampler's routing: sample the batch with record_routing=True")
    return replay_routing(model, data.sampler_routing.index_select(0, rows))


def decode_completions(tokenizer, response_ids: Tensor, response_mask: Tensor) -> list[str]:
    """Response text of every row: valid tokens up to (not including) <eos>."""
    eos = tokenizer.eos_token_id
    texts = []
    for ids, m in zip(response_ids.tolist(), response_mask.tolist(), strict=True):
        kept = [i for i, ok in zip(ids, m, strict=True) if ok and i != eos]
        texts.append(tokenizer.decode(kept))
    return texts


def rollout(
    model: torch.nn.Module,
    tokenizer,
    problems: list[Problem],
    group_size: int,
    *,
    max_new_tokens: int,
    generator: torch.Generator | None,
    temperature: float = 1.0,
    recompute_old_logp: bool = True,
    sampler_autocast_dtype: torch.dtype | None = None,
    greedy: bool = False,
    top_k: int = 0,
    top_p: float = 1.0,
    record_routing: bool = False,
    compiled: bool = False,
) -> Rollout:
    """Sample ``group_size`` responses for each problem (argmax with ``greedy``; top-k / top-p: :func:`kept_tokens`;
    ``compiled``: the decode compiled on a static cache, :func:`sample_responses`); recompute π_old's log-probs by a
    full forward (over the whole vocabulary) unless ``recompute_old_logp=False``."""
    if group_size < 1:
        raise ValueError(f"group_size must be >= 1, got {group_size}")
    repeated = [p for p in problems for _ in range(group_size)]
    prompt_ids, prompt_mask = encode_prompts(tokenizer, [p.prompt for p in repeated])
    was_training = model.training
    model.eval()
    try:
        response_ids, response_mask, sampler_logp, keep, sampler_routing = sample_responses(
            model,
            prompt_ids,
            prompt_mask,
            max_new_tokens=max_new_tokens,
            eos_id=tokenizer.eos_token_id,
            pad_id=tokenizer.pad_token_id,
            generator=generator,
            temperature=temperature,
            autocast_dtype=sampler_autocast_dtype,
            greedy=greedy,
            top_k=top_k,
            top_p=top_p,
            record_routing=record_routing,
            compiled=compiled,
        )
        old_logp = None
        if recompute_old_logp:
            with torch.no_grad():
                old_logp, _ = response_logprobs(
                    model, prompt_ids, prompt_mask, response_ids, response_mask, temperature=temperature
                )
    finally:
        model.train(was_training)
    truncated = response_mask[:, -1] & (response_ids[:, -1] != tokenizer.eos_token_id)
    truncated &= response_mask.shape[1] == max_new_tokens
    return Rollout(
        problems=repeated,
        prompt_ids=prompt_ids,
        prompt_mask=prompt_mask,
        response_ids=response_ids,
        response_mask=response_mask,
        sampler_logp=sampler_logp,
        completions=decode_completions(tokenizer, response_ids, response_mask),
        truncated=truncated,
        group_size=group_size,
        temperature=temperature,
        old_logp=old_logp,
        sampler_keep=keep,
        sampler_routing=sampler_routing,
    )
