"""Cold start: supervised fine-tuning of a preset on a task's train split, stopped at *partial* accuracy.

The paper starts RL from a cold-start fine-tune (§5.1). Here the point is a policy whose sampled accuracy at
temperature 1 is ~0.3-0.5 over a range of lengths L, so that groups of G responses carry reward variance and one
checkpoint serves every response length a notebook wants to vary.

Loss: mean over all target tokens (the <eos> included) of −log π(y_t | x, y_<t), teacher forced. AdamW with a
linear warm-up. Every ``eval_every`` steps: sampled exact-match accuracy per L on the eval split; the run stops at
the first evaluation whose mean accuracy reaches ``target_accuracy`` and keeps that state.

A checkpoint folder holds ``model.safetensors`` + ``config.json`` (``save_pretrained``), the tokenizer, and
``sft.json`` (command, seed, steps, accuracy per L): it loads offline with no pickle.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from tqdm.auto import tqdm

from gspo_lab.model import PRESETS, build_model
from gspo_lab.policy import response_logprobs
from gspo_lab.reductions import masked_mean
from gspo_lab.rollout import encode_prompts, rollout
from gspo_lab.schedule import check_schedule, lr_scheduler
from gspo_lab.tasks import Problem, get_task, load_split
from gspo_lab.tokenizer import build_tokenizer

__all__ = ["SFTConfig", "encode_targets", "sft_loss", "sampled_accuracy", "run_sft"]


@dataclass(frozen=True)
class SFTConfig:
    """Cold-start fine-tuning settings (every field is a ``gspo-lab sft`` flag)."""

    preset: str = "moe"
    """Model preset (gspo_lab.model.PRESETS)."""
    task: str = "sort"
    """Task name (gspo_lab.tasks.TASKS)."""
    lengths: tuple[int, ...] = ()
    """Problem sizes L to train on; empty = all of the task's lengths."""
    max_steps: int = 3000
    """Upper bound on optimizer steps."""
    batch_size: int = 64
    """Problems per step."""
    lr: float = 1e-3
    """AdamW peak learning rate (small enough that accuracy climbs through the target band over several evals)."""
    warmup_steps: int = 100
    """Linear warm-up from 0 to ``lr``."""
    weight_decay: float = 0.0
    """AdamW weight decay."""
    eval_every: int = 25
    """Steps between accuracy evaluations."""
    eval_prompts: int = 64
    """Eval-split prompts per length at each evaluation (one sample each, temperature 1)."""
    target_accuracy: float = 0.35
    """Stop at the first evaluation whose mean sampled accuracy over lengths reaches this (band: 0.3-0.5)."""
    seed: int = 0
    """Seeds the model init, the batch sampler and the evaluation sampler."""
    threads: int = 1
    """torch threads (1 is fastest for these sizes on a shared 2-core machine)."""
    extra: dict = field(default_factory=dict)
    """Free-form notes stored in sft.json."""

    def __post_init__(self):
        if self.preset not in PRESETS:
            raise ValueError(f"preset must be one of {sorted(PRESETS)}, got {self.preset!r}")
        task = get_task(self.task)
        bad = [L for L in self.lengths if L not in task.lengths]
        if bad:
            raise ValueError(f"lengths must be among {list(task.lengths)} for task {self.task!r}, got {bad}")
        for name in ("max_steps", "batch_size", "eval_every", "eval_prompts", "threads"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        check_schedule("constant", self.warmup_steps, 0)
        if not self.lr > 0 or self.weight_decay < 0:
            raise ValueError(
                f"lr must be > 0 and weight_decay >= 0, got lr={self.lr}, weight_decay={self.weight_decay}"
            )
        if not 0 <= self.target_accuracy <= 1:
            raise ValueError(f"target_accuracy must lie in [0, 1], got {self.target_accuracy}")


def encode_targets(tokenizer, problems: list[Problem]) -> tuple[torch.Tensor, ...]:
    """Prompts left-padded and targets + <eos> right-padded: prompt_ids, prompt_mask, target_ids, target_mask."""
    prompt_ids, prompt_mask = encode_prompts(tokenizer, [p.prompt for p in problems])
    rows = tokenizer([p.target + tokenizer.eos_token for p in problems], add_special_tokens=False).input_ids
    T = max(len(r) for r in rows)
    target_ids = torch.full((len(rows), T), tokenizer.pad_token_id, dtype=torch.long)
    target_mask = torch.zeros(len(rows), T, dtype=torch.bool)
    for i, r in enumerate(rows):  # right-padded: response token t of every row sits at column P + t
        target_ids[i, : len(r)] = torch.tensor(r)
        target_mask[i, : len(r)] = True
    return prompt_ids, prompt_mask, target_ids, target_mask


def sft_loss(model, tokenizer, problems: list[Problem]) -> torch.Tensor:
    """Mean negative log-likelihood of the target tokens (and <eos>) over the batch."""
    prompt_ids, prompt_mask, target_ids, target_mask = encode_targets(tokenizer, problems)
    logp, _ = response_logprobs(model, prompt_ids, prompt_mask, target_ids, target_mask)
    return -masked_mean(logp, target_mask, dim=None)


def sampled_accuracy(model, tokenizer, task, problems: list[Problem], generator: torch.Generator) -> float:
    """Exact-match accuracy of one temperature-1 sample per problem."""
    max_new = max(len(p.target) for p in problems) + 2
    r = rollout(model, tokenizer, problems, 1, max_new_tokens=max_new, generator=generator, recompute_old_logp=False)
    return sum(task.reward(p, c) for p, c in zip(r.problems, r.completions, strict=True)) / len(problems)


def _evaluate(model, tokenizer, task, cfg: SFTConfig, lengths, seed: int) -> dict[int, float]:
    g = torch.Generator().manual_seed(seed)
    return {
        L: sampled_accuracy(model, tokenizer, task, load_split(task, "eval", L)[: cfg.eval_prompts], g) for L in lengths
    }


def run_sft(cfg: SFTConfig, out_dir: str | Path, *, command: str = "", progress: bool = True) -> dict:
    """Train ``cfg.preset`` on ``cfg.task`` until the target accuracy; save a checkpoint folder; return its record."""
    torch.set_num_threads(cfg.threads)
    task = get_task(cfg.task)
    lengths = cfg.lengths or task.lengths
    tokenizer = build_tokenizer()
    model = build_model(cfg.preset, len(tokenizer), seed=cfg.seed)
    pools = {L: load_split(task, "train", L) for L in lengths}
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    sched = lr_scheduler(opt, warmup_steps=cfg.warmup_steps)
    g = torch.Generator().manual_seed(cfg.seed)
    history, accuracy, t0 = [], {}, time.perf_counter()
    bar = tqdm(range(1, cfg.max_steps + 1), desc=f"sft {cfg.preset}/{cfg.task}", disable=not progress, mininterval=5)
    for step in bar:
        Ls = torch.randint(0, len(lengths), (cfg.batch_size,), generator=g).tolist()
        batch = [pools[lengths[i]][int(torch.randint(0, len(pools[lengths[i]]), (1,), generator=g))] for i in Ls]
        model.train()
        loss = sft_loss(model, tokenizer, batch)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        if step % cfg.eval_every == 0 or step == cfg.max_steps:
            accuracy = _evaluate(model, tokenizer, task, cfg, lengths, seed=cfg.seed + step)
            mean_acc = sum(accuracy.values()) / len(accuracy)
            history.append({"step": step, "loss": loss.item(), "mean_accuracy": mean_acc})
            bar.set_postfix(loss=f"{loss.item():.3f}", acc=f"{mean_acc:.2f}")
            if mean_acc >= cfg.target_accuracy:
                break
    record = {
        "command": command,
        "config": asdict(cfg),
        "steps": step,
        "seconds": round(time.perf_counter() - t0, 1),
        "accuracy_per_length": {str(L): round(a, 4) for L, a in accuracy.items()},
        "mean_accuracy": round(sum(accuracy.values()) / len(accuracy), 4),
        "history": history,
    }
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    (out / "sft.json").write_text(json.dumps(record, indent=1))
    return record
