"""Held-out evaluation: exact-match accuracy on the fixed eval split, sampled or greedy; exporting a policy.

Training reward alone cannot tell learning from collapse (a policy can raise its rollout reward by
over-fitting the train prompts, or lose it by drifting); so, as TRL and verl do, the loop scores the policy on
held-out prompts: the first ``prompts`` problems of ``load_split(task, "eval", L)``, the same ones every time,
one response each.

    metrics = evaluate(model, tok, task, 12, prompts=64, temperature=1.0, generator=g, greedy=False)
    metrics = evaluate(model, tok, task, 12, prompts=64, greedy=True)        # argmax decoding, no generator
    table = evaluate_lengths(model, tok, task, [4, 8, 12], greedy=True)      # one row per length
    export_policy(model, tok, "runs/gspo/policy", {"task": "sort", ...})     # a loadable checkpoint folder

Keys (``mode`` is ``sampled`` or ``greedy``, so both can sit in one metrics row):
    ``eval/accuracy_<mode>``: fraction of eval prompts whose completion is exactly right (:meth:`Task.reward`);
    ``eval/response_length_<mode>``: mean valid response tokens, <eos> included (as ``response/length``);
    ``eval/truncated_frac_<mode>``: responses without <eos> within the budget (as ``response/truncated_frac``).

Where this departs from (or pins down) the training rollout, numbered:
    1. Budget: ``max_new_tokens`` defaults to the longest eval target + 4 tokens; training's rule
       (``collect``: the batch's first target + 4) gives the same number for ``sort`` (every target has L
       characters), and for ``add`` the longest target, so no correct answer is ever cut off.
    2. Greedy decoding is the sampler's argmax mode (``gspo_lab.rollout.sample_responses(greedy=True)``); the first
       maximum wins a tie.
    3. The global RNG is never drawn from and the model's train/eval mode is restored, so switching evaluation on
       or off never changes a training stream driven by its own generators.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

import torch

from gspo_lab.rollout import rollout
from gspo_lab.tasks import TASKS, Problem, Task, get_task, load_split

__all__ = ["evaluate", "evaluate_lengths", "export_policy", "eval_keys"]


def eval_keys(greedy: bool) -> tuple[str, str, str]:
    """The keys :func:`evaluate` returns in one mode: accuracy, response length, truncated fraction."""
    mode = "greedy" if greedy else "sampled"
    return (f"eval/accuracy_{mode}", f"eval/response_length_{mode}", f"eval/truncated_frac_{mode}")


def _check_args(prompts, temperature, generator, greedy, max_new_tokens, n_available: int, samples: int = 1) -> None:
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise ValueError(f"samples must be an integer >= 1 (responses per prompt in the sampled mode), got {samples!r}")
    if isinstance(prompts, bool) or not isinstance(prompts, int) or not 1 <= prompts <= n_available:
        raise ValueError(f"prompts must be an integer in [1, {n_available}] (the eval split's size), got {prompts!r}")
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not 0 < temperature < math.inf:
        raise ValueError(f"temperature must be a finite number > 0, got {temperature!r}")
    if not greedy and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator when greedy=False, got {type(generator).__name__}")
    if max_new_tokens is not None and (isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int)):
        raise TypeError(f"max_new_tokens must be an int or None, got {type(max_new_tokens).__name__}")
    if max_new_tokens is not None and max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be >= 1 (or None: the longest target + 4), got {max_new_tokens}")


def _respond(model, tokenizer, problems: list[Problem], *, max_new_tokens, temperature, generator, greedy, samples=1):
    """(completions, response_mask (B·samples, T), truncated (B·samples,)): ``samples`` responses per problem, each
    problem's responses next to each other."""
    r = rollout(
        model,
        tokenizer,
        problems,
        samples,
        max_new_tokens=max_new_tokens,
        generator=generator,
        temperature=temperature,
        recompute_old_logp=False,
        greedy=greedy,
    )
    return r.completions, r.response_mask, r.truncated


@torch.no_grad()
def evaluate(
    model: torch.nn.Module,
    tokenizer,
    task: Task | str,
    length: int,
    *,
    prompts: int = 64,
    temperature: float = 1.0,
    generator: torch.Generator | None = None,
    greedy: bool = False,
    max_new_tokens: int | None = None,
    samples: int = 1,
) -> dict[str, float]:
    """Exact-match accuracy of ``samples`` responses per prompt (one when greedy) on the first ``prompts`` eval-split
    problems at ``length``.

    Args:
        task: a :class:`Task` or its name; ``length`` must be one of the eval split's lengths for it.
        prompts: how many eval prompts (always the first ones of the split: the same prompts every call).
        temperature: τ > 0 of the sampled mode (argmax does not depend on it).
        generator: drives every draw of the sampled mode (advanced by it); unused and untouched when greedy.
        greedy: argmax decoding instead of sampling.
        max_new_tokens: the response budget; None = the longest target + 4 (training's rule, see the module doc).
        samples: responses per prompt in the sampled mode, all scored (accuracy over prompts × samples); greedy
            decoding gives one. With ``samples = 1`` the draws are exactly those of the one-response evaluation.

    Returns:
        ``{eval/accuracy_<mode>, eval/response_length_<mode>, eval/truncated_frac_<mode>}`` (:func:`eval_keys`).
    """
    task = get_task(task) if isinstance(task, str) else task
    if isinstance(length, bool) or not isinstance(length, int):
        raise TypeError(f"length must be an int, got {type(length).__name__}")
    split = load_split(task, "eval", length)  # ValueError naming ``length`` if the split lacks it
    _check_args(prompts, temperature, generator, greedy, max_new_tokens, len(split), samples)
    problems = split[:prompts]
    per_prompt = 1 if greedy else samples
    budget = max_new_tokens or max(len(p.target) for p in problems) + 4
    completions, mask, truncated = _respond(
        model,
        tokenizer,
        problems,
        max_new_tokens=budget,
        temperature=temperature,
        generator=generator,
        greedy=greedy,
        samples=per_prompt,
    )
    scored = [p for p in problems for _ in range(per_prompt)]
    correct = sum(task.reward(p, c) for p, c in zip(scored, completions, strict=True))
    acc_key, len_key, trunc_key = eval_keys(greedy)
    return {
        acc_key: correct / len(scored),
        len_key: mask.sum(-1).float().mean().item(),
        trunc_key: truncated.float().mean().item(),
    }


def evaluate_lengths(model: torch.nn.Module, tokenizer, task: Task | str, lengths: Sequence[int] | None, **kw):
    """:func:`evaluate` at every length (None = all of the task's): a DataFrame, one row per length, in order.

    ``kw`` goes to :func:`evaluate`. In the sampled mode one generator serves the lengths in the order given, so a
    row depends on the lengths before it (as in ``gspo_lab.sft``); greedy rows do not.
    """
    import pandas as pd

    task = get_task(task) if isinstance(task, str) else task
    lengths = list(task.lengths if lengths is None else lengths)
    if not lengths:
        raise ValueError("lengths must hold at least one length (or be None: all of the task's lengths)")
    for L in lengths:  # fail before spending minutes on the good lengths
        if isinstance(L, bool) or not isinstance(L, int) or L not in task.lengths:
            raise ValueError(f"lengths must hold problem sizes of task {task.name!r} ({list(task.lengths)}), got {L!r}")
    return pd.DataFrame([{"length": L, **evaluate(model, tokenizer, task, L, **kw)} for L in lengths])


def export_policy(model: torch.nn.Module, tokenizer, out_dir: str | Path, record: dict) -> Path:
    """Write a checkpoint folder :func:`gspo_lab.checkpoints.load_checkpoint` loads; return its path.

    The folder holds ``model.safetensors`` + ``config.json`` (``save_pretrained``), the tokenizer, and ``sft.json``
    (the name ``load_checkpoint`` reads; the record, with a top-level ``task``). ``record`` must name the task, as
    ``record["task"]`` or (an SFT record) ``record["config"]["task"]``. The folder is written under a temporary name
    and renamed into place, so a killed export never looks like a checkpoint; a non-empty ``out_dir`` is refused.
    """
    out = Path(out_dir)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise FileExistsError(f"out_dir {str(out)!r} already exists and is not an empty folder: refusing to overwrite")
    if not isinstance(record, dict):
        raise TypeError(f"record must be a dict, got {type(record).__name__}")
    task = record.get("task", (record.get("config") or {}).get("task"))
    if task not in TASKS:
        raise ValueError(f"record must name the task as record['task'], one of {sorted(TASKS)}, got {task!r}")
    text = json.dumps({**record, "task": task}, indent=1)  # TypeError here, before writing, if not JSON-able
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    model.save_pretrained(tmp)  # safetensors (the only format of transformers 5)
    tokenizer.save_pretrained(tmp)
    (tmp / "sft.json").write_text(text)
    if out.exists():
        out.rmdir()
    os.replace(tmp, out)
    return out
