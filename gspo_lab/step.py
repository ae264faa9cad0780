"""One RL step, as plain functions: rollout batch -> rewards -> group advantages -> M minibatch updates.

    state = init_state(cfg)            # policy from a cold-start checkpoint, optimizer, schedule, generators
    batch = collect(state)             # sample, score, advantages, split, π_old's log-probs and routing
    batch = next_batch(state)          # the same, or with rollout_lag > 0 a batch sampled that many steps ago
    row = update(state, batch, m)      # one optimizer step on minibatch m
    rows = train_step(state)           # one RL step: collect, then M × epochs updates

The run around it (many steps, evaluation, saved state, resume) is :mod:`gspo_lab.train`.

Where this departs from (or pins down) the paper's setup, numbered:
    1. π_old's log-probs and routing come from a no-grad forward over each minibatch *before* any update, with
       the very rows and shapes of that minibatch's update, so the first update on a rollout sees every ratio
       exactly 1 and no expert change (tests/test_train.py). ``old_logp="sampler"`` uses the sampler's own
       log-probs instead (the inference-engine variant of §5.4); the forward then only supplies the routing.
    2. Minibatches partition a (seeded) shuffle of the B = prompts · G rows; the partition is kept across epochs.
    3. Advantages are computed once per rollout batch over whole groups (Eq. 6), before the split.
    4. No entropy bonus, no load-balancing loss. With ``beta > 0`` the loss is the objective's plus β times the k3
       KL estimate to the reference policy (the cold start, scored at the sampling temperature, without routing
       replay; its log-probs are taken once per minibatch in ``collect``): gspo_lab/penalties.py. β = 0 (default,
       as in the paper) loads no reference and runs no extra forward.
    6. Every log-prob — π_old, π_θ, the reference — and the logged entropy are those of softmax(logits / τ) at the
       sampling temperature τ (gspo_lab/policy.py), as in TRL.
    7. Objectives whose normaliser is a constant length (Dr. GRPO's ``grpo_const_norm``) get the response budget
       ``max_new_tokens``, never the padded length of a rollout (which follows its longest sample).
    8. With ``token_advantage`` = λ > 0 the advantages are per token (not in the paper; for GSPO-token, Eqs.
       13-14): Â_{i,t} = Â_i + λ (c_{i,t} − mean_t c_{i,t}) with c the task's per-token credit.
    5. A non-finite loss or gradient norm stops the run with an error; the last saved state is untouched.
    10. Sampler–trainer corrections (issue 24; off by default, gspo_lab/corrections.py): with ``sampler_correction``
       each minibatch's ρ = π_old/π_sampler is taken in ``collect`` from the recomputed π_old and the sampler's own
       log-probs (fp32, or bf16 with ``sampler_precision``), as TRL takes it once per generation; with
       ``opsm_threshold`` the keep mask is taken in ``update`` from the current log-probs, as TRL's ``_compute_loss``
       does. Both multiply each token's loss inside the objective (``sampler_ratio``, ``seq_keep``).
    9. Between backward and the optimizer step (issue 17; all off by default, gspo_lab/grad_shaping.py): with
       ``norm_of`` the gradient is rescaled to the norm of another objective's gradient of the same minibatch;
       the cap in force is the smaller of ``grad_clip`` and ``grad_clip_rel`` × the median of recent pre-clip norms;
       with ``grad_skip`` an update whose pre-clip norm exceeds it takes no optimizer step (the schedule still
       advances). Per-group gradient norms and AdamW's largest |g|/√v̂ per group are logged on every update.
    11. Stale rollouts (issue 38; off by default, gspo_lab/staleness.py): with ``rollout_lag`` = D > 0 a batch is
       sampled D rollout batches before the trainer takes it (:func:`next_batch`); π_old's forward, the shuffle and
       the corrections happen when it is taken, with the weights of that moment. Sampling (:func:`sample`) and
       preparing (:func:`prepare`) draw from separate generators, so at D = 0 the loop is the synchronous one bit
       for bit (tests/test_staleness.py, against rows recorded before the knob existed).

One row per optimizer step; every key is defined in :data:`gspo_lab.metrics.CATALOGUE`.
"""

from __future__ import annotations

import contextlib
import copy
import math
import time
import warnings
from dataclasses import dataclass, field

import torch

from gspo_lab.advantages import group_advantages, token_advantages
from gspo_lab.config import TrainConfig
from gspo_lab.corrections import correction_stats, off_policy_keep, sampler_ratio
from gspo_lab.grad_shaping import (
    adam_peaks,
    group_norms,
    mix_direction_norm,
    param_groups,
    relative_cap,
    spike_step,
)
from gspo_lab.objectives import get_objective
from gspo_lab.penalties import kl_level, kl_penalty
from gspo_lab.policy import rollout_logprobs
from gspo_lab.reductions import masked_mean, seq_lengths
from gspo_lab.rollout import Rollout, replay_sampler_routing, rollout
from gspo_lab.routing import expert_change_frac, expert_swap_frac, record_routing, replay_routing
from gspo_lab.schedule import lr_scheduler
from gspo_lab.staleness import Sampled, stale_stats
from gspo_lab.tasks import Task, get_task, load_split

__all__ = [
    "TrainState",
    "RolloutBatch",
    "init_state",
    "sample",
    "prepare",
    "collect",
    "next_batch",
    "update",
    "train_step",
]


@dataclass
class TrainState:
    """Everything a run needs to continue bit for bit: model, optimizer, schedule, generators, history."""

    cfg: TrainConfig
    model: torch.nn.Module
    tokenizer: object
    task: Task
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    prompt_gen: torch.Generator
    sample_gen: torch.Generator
    shuffle_gen: torch.Generator
    eval_gen: torch.Generator
    """Held-out evaluation draws from its own generator: evaluating or not never changes the training stream."""
    ref_model: torch.nn.Module | None = None
    """The frozen reference policy of the KL penalty (the cold start); None when beta = 0."""
    rollout_index: int = 0
    update_index: int = 0
    history: list[dict] = field(default_factory=list)
    eval_history: list[dict] = field(default_factory=list)
    ratios: list[dict] | None = None
    """When a list, every update appends its detached log-ratios, advantages and mask (what-if analyses)."""
    pending: list = field(default_factory=list)
    """Sampled batches waiting for the trainer (``rollout_lag > 0``; at most ``rollout_lag`` between steps)."""

    @property
    def is_moe(self) -> bool:
        return getattr(self.model.config, "num_experts", 0) > 0


@dataclass
class RolloutBatch:
    """A scored rollout, split into minibatches, with π_old's log-probs and routing per minibatch."""

    data: Rollout
    rewards: torch.Tensor  # (B,)
    adv: torch.Tensor  # (B,) Â_i, or (B, T) with token_advantage > 0
    minibatches: list[torch.Tensor]  # M row-index tensors
    old_logp: list[torch.Tensor]  # M × (b, T)
    old_routing: list[torch.Tensor | None]  # M × (b, L, P + T, k), None for a dense model
    ref_logp: list[torch.Tensor] | None  # M × (b, T) under the reference policy; None when beta = 0
    max_new_tokens: int  # the response budget the rollout was sampled with
    stats: dict
    sampler_ratio: list[torch.Tensor] | None = None  # M × ρ = π_old/π_sampler, (b, T) or (b, 1); None when off


#: seeds of the run's generators: prompt stream, sampler, minibatch shuffle (seed · 3 + i), held-out evaluation
EVAL_SEED_OFFSET = 1_000_003  # a prime far above seed · 3 + 2, so no seed's eval stream is another's training stream


def init_state(cfg: TrainConfig, model=None, tokenizer=None) -> TrainState:
    """A fresh run: the policy from ``cfg.checkpoint`` (or the given model/tokenizer), AdamW, the learning-rate
    schedule, seeded generators, and with ``cfg.beta > 0`` a frozen copy of the starting policy as the reference."""
    if model is None:
        from gspo_lab.checkpoints import load_checkpoint

        model, tokenizer, _ = load_checkpoint(cfg.checkpoint)
    ref_model = None
    if cfg.beta > 0:
        ref_model = copy.deepcopy(model).requires_grad_(False)
    if cfg.optimizer == "sgd":  # plain SGD (issue 22, item 4): a rescaled gradient is only a step size
        opt = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=0.0, weight_decay=0.0)
    else:
        # fused: one kernel over all tensors (a TrainConfig fast path; the loop's update up to float rounding)
        opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.0, fused=cfg.fused_adam or None)
    sched = lr_scheduler(
        opt, warmup_steps=cfg.warmup_steps, schedule=cfg.lr_schedule, horizon_steps=cfg.lr_horizon_steps
    )
    if (cfg.compile_update or cfg.compile_sampler) and getattr(model.config, "num_experts", 0) > 0:
        from gspo_lab.routing import enable_routing_control  # the hooks before the first compiled pass, so that no

        enable_routing_control(model)  # graph is traced without them and again with them (tests/test_train.py)
    gens = [torch.Generator().manual_seed(cfg.seed * 3 + i) for i in range(3)]
    eval_gen = torch.Generator().manual_seed(EVAL_SEED_OFFSET + cfg.seed)
    return TrainState(cfg, model, tokenizer, get_task(cfg.task), opt, sched, *gens, eval_gen, ref_model)


def _rows(x: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    return x.index_select(0, rows)


def _forward(state: TrainState, data: Rollout, rows: torch.Tensor, routing_ctx) -> tuple:
    with routing_ctx as rec:
        logp, entropy = rollout_logprobs(state.model, data, rows, with_entropy=True, compiled=state.cfg.compile_update,
                                         replay=state.cfg.sampling_replay)  # fmt: skip
    return logp, entropy, (rec.indices if rec is not None else None)


@torch.no_grad()
def sample(state: TrainState) -> Sampled:
    """Draw prompts, sample G responses each with the current weights, score them and take the group advantages
    (Eq. 6): everything about a rollout batch that the sampler fixes (under ``rollout_lag`` it waits in a queue)."""
    cfg, task, t0 = state.cfg, state.task, time.perf_counter()
    pool = load_split(task, "train", cfg.length)
    picks = torch.randint(0, len(pool), (cfg.prompts_per_rollout,), generator=state.prompt_gen).tolist()
    problems = [pool[i] for i in picks]
    max_new = cfg.max_new_tokens or len(problems[0].target) + 4
    data = rollout(
        state.model,
        state.tokenizer,
        problems,
        cfg.group_size,
        max_new_tokens=max_new,
        generator=state.sample_gen,
        temperature=cfg.temperature,
        recompute_old_logp=False,
        sampler_autocast_dtype=cfg.sampler_dtype,
        top_k=cfg.top_k,
        top_p=cfg.top_p,
        record_routing=cfg.sampler_routing_replay,
        compiled=cfg.compile_sampler,
    )
    score = task.reward if cfg.reward == "exact" else task.partial_reward
    rewards = torch.tensor([score(p, c) for p, c in zip(data.problems, data.completions, strict=True)])
    accuracy = sum(task.reward(p, c) for p, c in zip(data.problems, data.completions, strict=True))
    adv, adv_stats = group_advantages(rewards, cfg.group_size, scale=cfg.advantage_scale)
    if cfg.token_advantage > 0:  # (B, T): credit redistributed within each response (numbered note 8)
        credit = task.credit_matrix(data.problems, data.completions, data.response_mask)
        adv = token_advantages(adv, credit, data.response_mask, cfg.token_advantage).to(adv.dtype)
    stats = {
        **adv_stats.as_dict(),
        "reward/accuracy": accuracy / rewards.numel(),
        "response/length": seq_lengths(data.response_mask).float().mean().item(),
        "response/truncated_frac": data.truncated.float().mean().item(),
    }
    return Sampled(picks, data, rewards, adv, max_new, state.rollout_index, stats, time.perf_counter() - t0)


@torch.no_grad()
def prepare(state: TrainState, sampled: Sampled) -> RolloutBatch:
    """Split a sampled batch into minibatches and take π_old's log-probs and routing with the current weights."""
    cfg, t0 = state.cfg, time.perf_counter()
    data = sampled.data
    B = sampled.rewards.numel()
    order = torch.randperm(B, generator=state.shuffle_gen) if cfg.shuffle else torch.arange(B)
    minibatches = list(order.chunk(cfg.minibatches))
    old_logp, old_routing, rhos, current = [], [], [], []
    state.model.train()  # the mode of the updates: the same arithmetic, so the first ratios are exactly 1
    for rows in minibatches:
        if not cfg.old_forward:  # the fast path: π_old is the sampler's own, no routing recorded (TrainConfig)
            old_logp.append(_rows(data.sampler_logp, rows))
            old_routing.append(None)
            continue
        ctx = (replay_sampler_routing(state.model, data, rows) if cfg.sampler_routing_replay  # R3 (TrainConfig)
               else record_routing(state.model) if state.is_moe else contextlib.nullcontext())  # fmt: skip
        logp, _, routing = _forward(state, data, rows, ctx)
        old_logp.append(logp if cfg.old_logp == "recompute" else _rows(data.sampler_logp, rows))
        old_routing.append(routing)
        current.append(logp)
        if cfg.sampler_correction is not None:  # ρ = π_old / π_sampler (numbered note 10)
            rho = sampler_ratio(logp, _rows(data.sampler_logp, rows), _rows(data.response_mask, rows),
                                cfg.sampler_correction, cfg.sampler_clip_min, cfg.sampler_clip_max)  # fmt: skip
            rhos.append(rho)
    ref_logp = None
    if state.ref_model is not None:
        state.ref_model.train()  # the updates' arithmetic: at step 0 the penalty is exactly 0
        ref_logp = [rollout_logprobs(state.ref_model, data, rows)[0] for rows in minibatches]
    stats = {**sampled.stats, "time/rollout_s": sampled.seconds + time.perf_counter() - t0}
    if cfg.rollout_lag > 0:  # how stale the batch is, and how far its sampler is from the current weights
        stats.update(stale_stats(state.rollout_index - sampled.version, minibatches, current, data))
    rhos = rhos if cfg.sampler_correction is not None else None
    return RolloutBatch(data, sampled.rewards, sampled.adv, minibatches, old_logp, old_routing, ref_logp,
                        sampled.max_new_tokens, stats, rhos)  # fmt: skip


def collect(state: TrainState) -> RolloutBatch:
    """Sample a rollout batch with the current weights, score it, compute advantages, split it, and take π_old's
    log-probs and routing: the loop's batch at ``rollout_lag = 0``."""
    return prepare(state, sample(state))


def next_batch(state: TrainState) -> RolloutBatch:
    """The batch the next RL step trains on. ``rollout_lag = D > 0`` (numbered note 11): the sampler runs D rollout
    batches ahead of the trainer, so batch t was sampled by the weights at the start of batch max(0, t − D); the
    queue ``state.pending`` holds at most D sampled batches between steps and never samples past ``cfg.rollouts``."""
    lag = state.cfg.rollout_lag
    if lag == 0:  # the synchronous batch is collect()'s (bench/step_ours.py times the loop's rollout phase there)
        return collect(state)
    while len(state.pending) <= lag and state.rollout_index + len(state.pending) < state.cfg.rollouts:
        state.pending.append(sample(state))
    return prepare(state, state.pending.pop(0))


def update(state: TrainState, batch: RolloutBatch, m: int) -> dict:
    """One optimizer step on minibatch ``m``; returns its metrics row (objective stats included)."""
    cfg, t0 = state.cfg, time.perf_counter()
    rows, data = batch.minibatches[m], batch.data
    mask = _rows(data.response_mask, rows)
    if cfg.sampler_routing_replay:  # R3: the sampler's experts (TrainConfig)
        ctx = replay_sampler_routing(state.model, data, rows)
    elif not state.is_moe or batch.old_routing[m] is None:  # no π_old routing (old_forward=False): nothing to compare
        ctx = contextlib.nullcontext()
    elif cfg.routing_replay:
        ctx = replay_routing(state.model, batch.old_routing[m])
    else:
        ctx = record_routing(state.model)
    state.model.train()
    logp, entropy, routing = _forward(state, data, rows, ctx)
    correction, correction_row = _corrections(cfg, batch, m, logp, mask)
    eps = dict(zip(("eps_low", "eps_high"), cfg.clip, strict=True)) if cfg.clip[0] is not None else {}
    loss, stats = get_objective(cfg.objective)(
        logp, batch.old_logp[m], _rows(batch.adv, rows), mask, budget=batch.max_new_tokens, **eps, **correction
    )
    policy_loss = loss
    if batch.ref_logp is not None:
        weigh = {"old_logp": batch.old_logp[m], "level": kl_level(cfg.objective)} if cfg.kl_bias_correction else {}
        ref_kl, _ = kl_penalty(logp, batch.ref_logp[m], mask, **weigh)
        loss = policy_loss + cfg.beta * ref_kl
    state.optimizer.zero_grad(set_to_none=True)
    params = [p for p in state.model.parameters() if p.requires_grad]
    if cfg.norm_of is not None:  # the other objective's gradient of the same minibatch and forward (direction × norm)
        other_loss, _ = get_objective(cfg.norm_of)(
            logp, batch.old_logp[m], _rows(batch.adv, rows), mask, budget=batch.max_new_tokens, **correction
        )
        other_grads = torch.autograd.grad(other_loss, params, retain_graph=True, allow_unused=True)
    loss.backward()
    row = {}
    if cfg.norm_of is not None:
        own, other, cos = mix_direction_norm(params, other_grads)
        row.update({"grad/norm_own": own, "grad/norm_other": other, "grad/cos_other": cos})
    groups = param_groups(state.model) if cfg.group_stats else {}
    row.update({f"grad/norm_{g}": v for g, v in group_norms(groups).items()})
    cap = cfg.grad_clip if cfg.grad_clip is not None else math.inf
    if cfg.grad_clip_rel is not None:
        cap = min(cap, relative_cap([r["grad/norm"] for r in state.history], cfg.grad_clip_rel))
    grad_norm = float(torch.nn.utils.clip_grad_norm_(params, cap))
    if not (math.isfinite(loss.item()) and math.isfinite(grad_norm)):
        raise FloatingPointError(
            f"non-finite loss ({loss.item()}) or gradient norm ({grad_norm}) at rollout {state.rollout_index}, "
            f"minibatch {m}, objective {cfg.objective!r}: the policy diverged; the last saved state is kept"
        )
    spike = cfg.grad_skip is not None and grad_norm > cfg.grad_skip
    skipped = spike and cfg.spike is None
    lr = state.optimizer.param_groups[0]["lr"]
    if spike and not skipped:  # what the spike does instead (cfg.spike, grad_shaping.SPIKE_MODES)
        spike_step(state.optimizer, params, cfg.spike, cfg.seed * 1_000_003 + state.update_index)
    elif not skipped:  # a skipped update leaves the parameters and AdamW's moments (and its step count) untouched
        state.optimizer.step()
    if groups and not skipped and cfg.optimizer == "adamw" and not (spike and cfg.spike == "step_only"):
        row.update({f"adam/peak_{g}": v for g, v in adam_peaks(state.optimizer, groups).items()})
    if cfg.spike is not None:
        row["grad/spike"] = float(spike)
    with warnings.catch_warnings():  # a skipped first update: torch warns that the schedule moved before any step
        warnings.filterwarnings("ignore", message="Detected call of `lr_scheduler.step\\(\\)` before")
        state.scheduler.step()
    row.update({"grad/clipped": float(grad_norm > cap), "grad/skipped": float(skipped)})
    if state.ratios is not None:
        old_logp = batch.old_logp[m]
        state.ratios.append(
            {
                "rollout": state.rollout_index,
                "update": state.update_index,
                "tok_log_ratio": (logp.detach() - old_logp).where(mask, 0.0),
                "adv": _rows(batch.adv, rows),
                "mask": mask,
            }
        )
    row.update({"loss/policy": policy_loss.item(), "loss/total": loss.item(), "optim/lr": lr, "grad/norm": grad_norm})
    if batch.ref_logp is not None:
        row["ref/kl_k3"] = ref_kl.item()
    row["policy/entropy"] = masked_mean(entropy.detach(), mask, dim=None).item()
    row["reward/minibatch_mean"] = _rows(batch.rewards, rows).mean().item()
    if routing is not None and batch.old_routing[m] is not None:
        full_mask = torch.cat([_rows(data.prompt_mask, rows), mask], 1)
        row["moe/expert_change"] = expert_change_frac(batch.old_routing[m], routing, full_mask)
        row["moe/expert_swap"] = expert_swap_frac(batch.old_routing[m], routing, full_mask)
    row.update(stats.as_dict())
    row.update(correction_row)
    row["time/update_s"] = time.perf_counter() - t0
    return row


def _corrections(cfg: TrainConfig, batch: RolloutBatch, m: int, logp: torch.Tensor, mask: torch.Tensor):
    """The objective's correction keywords (``sampler_ratio``, ``seq_keep``) for minibatch ``m`` and their
    ``correction/*`` metrics; ({}, {}) when neither the sampler correction nor OPSM is on."""
    if cfg.sampler_correction is None and cfg.opsm_threshold is None:
        return {}, {}
    rows = batch.minibatches[m]
    sampler_logp, kw = _rows(batch.data.sampler_logp, rows), {}
    if batch.sampler_ratio is not None:
        kw["sampler_ratio"] = batch.sampler_ratio[m]
    if cfg.opsm_threshold is not None:
        kw["seq_keep"] = off_policy_keep(_rows(batch.adv, rows), logp, sampler_logp, mask, cfg.opsm_threshold)
    stats = correction_stats(kw.get("sampler_ratio"), kw.get("seq_keep"), batch.old_logp[m], sampler_logp, mask,
                             cfg.sampler_correction, cfg.sampler_clip_min, cfg.sampler_clip_max)  # fmt: skip
    return kw, stats


def train_step(state: TrainState) -> list[dict]:
    """One RL step: collect a rollout batch, then ``epochs`` × M optimizer steps on it. Returns the new rows."""
    batch = next_batch(state)
    rows = []
    for epoch in range(state.cfg.epochs):
        for m in range(state.cfg.minibatches):
            row = {
                "rollout": state.rollout_index,
                "update": state.update_index,
                "update_in_rollout": epoch * state.cfg.minibatches + m,
                "epoch": epoch,
            }
            row.update(update(state, batch, m))
            row.update(batch.stats)
            rows.append(row)
            state.history.append(row)  # at once: the next update's relative cap reads this one's norm
            state.update_index += 1
    state.rollout_index += 1
    return rows
