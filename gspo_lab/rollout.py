"""Rollout: sample G responses per prompt from π_old with a KV cache and an explicit ``torch.Generator``.

Two sets of π_old log-probs come out of a rollout, as in production RL stacks:
    * ``sampler_logp`` — what the sampler itself computed token by token through its KV cache (the "inference
      engine" log-probs; optionally under bf16 autocast for the precision study of the paper's §5.4);
    * ``old_logp`` — a full no-grad forward over prompt + response with the training model (what TRL and verl
      use by default). The first update on a rollout therefore sees every ratio exactly 1.
Both are log-probs of softmax(logits / τ) at the sampling temperature τ, which the rollout records.

Layout: prompts left-padded to P columns with a leading <bos>; responses right-padded to T <= max_new_tokens
columns; the <eos> a response ends with is one of its valid tokens (it is a sampled action), padding after it is
not. Shapes: B = n_prompts · G rows, each prompt's G copies contiguous (the advantages' layout).
"""

from __future__ import annotations

import contextlib
import inspect
from dataclasses import dataclass

import torch
from torch import Tensor
from transformers import DynamicCache

from gspo_lab.policy import position_ids, response_logprobs
from gspo_lab.tasks import Problem

__all__ = ["Rollout", "encode_prompts", "sample_responses", "decode_completions", "rollout"]


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
) -> tuple[Tensor, Tensor, Tensor]:
    """Ancestral sampling with a KV cache. Returns response_ids (B, T), response_mask (B, T), sampler_logp (B, T).

    ``generator`` drives every draw (no global RNG). ``autocast_dtype=torch.bfloat16`` runs the sampler's forward
    passes under CPU autocast, like a lower-precision inference engine. ``greedy=True`` takes the argmax instead of
    a draw (the first maximum wins a tie; the generator is neither needed nor touched); ``sampler_logp`` is still
    that of softmax(logits / temperature). Stops when every row has emitted <eos>.
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
    cache_kw = {_cache_kwarg(model): DynamicCache(config=model.config)}
    autocast = torch.autocast("cpu", dtype=autocast_dtype) if autocast_dtype else contextlib.nullcontext()
    tokens, logps, valid = [], [], []
    done = torch.zeros(B, dtype=torch.bool)
    with autocast:
        out = model(input_ids=prompt_ids, attention_mask=attn, position_ids=pos, use_cache=True, **cache_kw)
        next_pos = pos[:, -1:] + 1
        for _ in range(max_new_tokens):
            logp_all = torch.log_softmax(out.logits[:, -1].float() / temperature, -1)
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
            attn = torch.cat([attn, valid[-1].long()[:, None]], 1)  # a padded step is invisible to later ones
            out = model(input_ids=tok[:, None], attention_mask=attn, position_ids=next_pos, use_cache=True, **cache_kw)
            next_pos = next_pos + 1
    mask = torch.stack(valid, 1)
    sampler_logp = torch.stack(logps, 1).masked_fill(~mask, 0.0)
    return torch.stack(tokens, 1), mask, sampler_logp


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
) -> Rollout:
    """Sample ``group_size`` responses for each problem (argmax with ``greedy``); recompute π_old's log-probs by a
    full forward unless ``recompute_old_logp=False``."""
    if group_size < 1:
        raise ValueError(f"group_size must be >= 1, got {group_size}")
    repeated = [p for p in problems for _ in range(group_size)]
    prompt_ids, prompt_mask = encode_prompts(tokenizer, [p.prompt for p in repeated])
    was_training = model.training
    model.eval()
    try:
        response_ids, response_mask, sampler_logp = sample_responses(
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
    )
