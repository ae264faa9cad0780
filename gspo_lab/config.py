"""The RL loop's configuration: one frozen dataclass; each field's docstring is its ``gspo-lab train`` help.

Override with ``dataclasses.replace(cfg, objective="grpo")``; :data:`SMOKE` is the small CPU preset tests use.
Every field is checked when the config is made — before any weights load or any folder is written — and an error
names the field (the CLI turns it into ``--flag``). Making a config reads the checkpoint's small JSON files (its task).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, replace

from gspo_lab.checkpoints import checkpoint_task
from gspo_lab.corrections import check_correction
from gspo_lab.objectives import OBJECTIVES, get_objective
from gspo_lab.schedule import check_schedule
from gspo_lab.tasks import get_task
from gspo_lab.validate import check_clip_range, check_sampling

__all__ = ["TrainConfig", "SMOKE", "BRANCHABLE"]

OLD_LOGP_SOURCES = ("recompute", "sampler", "sampler_bf16")
REWARDS = ("exact", "partial")
SAMPLER_PRECISIONS = ("fp32", "bf16")
#: the fields a branch may change from its trunk (issue 22, item 5): how an update is made, not what is sampled or
#: which state is loaded (an optimizer switch would not load the trunk's AdamW state)
BRANCHABLE = ("objective", "eps_low", "eps_high", "grad_clip", "grad_clip_rel", "grad_skip", "spike", "norm_of", "lr")


@dataclass(frozen=True)
class TrainConfig:
    checkpoint: str = "sweep-sort"
    """Cold-start checkpoint: a folder name under data/checkpoints/, or a path (also the KL reference policy)."""
    task: str = "sort"
    """Task (sort | add); must be the one the checkpoint was trained on (its sft.json)."""
    length: int = 12
    """Problem size L (sort: L digits, so L + 1 response tokens with <eos>)."""
    objective: str = "gspo"
    """Policy objective, a key of gspo_lab.OBJECTIVES."""
    eps_low: float | None = None
    """Clip ε_low; None = the objective's own default (GSPO 3e-4, GRPO 0.2)."""
    eps_high: float | None = None
    """Clip ε_high; None = the objective's own default (GSPO 4e-4, GRPO 0.27)."""
    prompts_per_rollout: int = 16
    """Prompts per rollout batch."""
    group_size: int = 8
    """G: responses sampled per prompt."""
    minibatches: int = 4
    """M: the rollout batch is split into M minibatches, one optimizer step each (paper §5.1: 4)."""
    epochs: int = 1
    """Passes over the rollout batch (each pass = M optimizer steps)."""
    rollouts: int = 20
    """Rollout batches (RL steps) to run."""
    lr: float = 3e-5
    """AdamW peak learning rate (after warm-up)."""
    warmup_steps: int = 0
    """Optimizer steps of linear learning-rate warm-up (0 = none)."""
    lr_schedule: str = "constant"
    """constant | cosine (decay to 0 at lr_horizon_steps, after warm-up), gspo_lab/schedule.py."""
    lr_horizon_steps: int = 0
    """Cosine schedule: optimizer steps until the learning rate reaches 0 (its own field: resuming with more
    rollouts keeps the schedule). Unused by constant."""
    beta: float = 0.0
    """KL penalty coefficient β >= 0 to the reference policy (the cold start), k3 estimator (gspo_lab/penalties.py);
    0 = none, as in the GSPO paper (no extra forward pass)."""
    kl_bias_correction: bool = False
    """Multiply each token's k3 by the importance ratio to π_old, with its gradient (TRL's
    ``use_bias_correction_kl``, True by default there since TRL 1.10): the token ratio, or for a sequence-level
    objective (GSPO's) the sequence ratio broadcast; needs beta > 0. False = the KL term of the GRPO paper's Eq. 4."""
    grad_clip: float | None = 1.0
    """Clip the gradient norm at this value; None turns clipping off."""
    grad_clip_rel: float | None = None
    """Also cap the gradient norm at this factor × the median of the run's last 64 pre-clip norms, from the 16th
    update on (gspo_lab/grad_shaping.py); None = off. With grad_clip the smaller cap binds."""
    grad_skip: float | None = None
    """Skip the optimizer step (parameters and AdamW's moments untouched) when the pre-clip gradient norm exceeds
    this; None = off."""
    spike: str | None = None
    """What an update whose pre-clip norm exceeds ``grad_skip`` does (issue 22, item 4; gspo_lab/grad_shaping.py
    :data:`SPIKE_MODES`): None = skip it (no step, AdamW's state untouched); ``state_only`` = AdamW's moments take it,
    the parameters do not move; ``step_only`` = the parameters take AdamW's step, its moments and step count are put
    back (the spike leaves no trace in them); ``reset`` = the parameters take AdamW's step, then its moments and step
    count are zeroed (SPAM-style: neither the spike nor anything before it stays in them); ``random`` = its
    direction replaced by a random one of equal norm, then the step."""
    optimizer: str = "adamw"
    """adamw (β = (0.9, 0.999), no weight decay) | sgd (plain: no momentum, no weight decay; a rescaled gradient is
    only a step size)."""
    norm_of: str | None = None
    """Direction × norm: apply this objective's direction at the norm of ``norm_of``'s gradient of the same minibatch
    (an objective key, at its own paper ε; two backward passes); None = off."""
    branch_at: int = 0
    """Branch (issue 22, item 5; gspo_lab/train.py :func:`~gspo_lab.train.branch_from`): start from the trunk run's
    saved state after this many rollouts (its weights, AdamW state, generators and rows) instead of the cold start,
    then train on under this config to ``rollouts``; 0 = no branch. The trunk is :meth:`trunk_config`."""
    trunk: str = ""
    """A branch's trunk: the fields where it differs from this config, as JSON (e.g. '{"objective": "grpo"}'); only
    :data:`BRANCHABLE` fields. "" = this very config (the unchanged branch, which continues the trunk bit for bit)."""
    routing_replay: bool = False
    """Routing Replay (paper §5.3, "R2"): compute π_θ with the experts π_old chose."""
    sampler_routing_replay: bool = False
    """"R3": record the experts the sampler's own passes chose (in its precision) and route every trainer forward of
    the batch (π_old's and the updates') through them; an MoE checkpoint, not with routing_replay or compile_update."""
    reward: str = "exact"
    """exact (1 for the exact target) | partial (fraction of matching characters)."""
    advantage_scale: str = "std"
    """std (Eq. 6) | none (Dr. GRPO: no std division)."""
    token_advantage: float = 0.0
    """λ >= 0: per-token advantages Â_i + λ·(credit − its response mean) (gspo_lab/advantages.py); objectives
    taking (B, T) advantages only (gspo_token, grpo_token_mean). 0 = sequence advantages, as in the paper."""
    old_logp: str = "recompute"
    """π_old log-probs: recompute (full forward, TRL/verl) | sampler | sampler_bf16 (the sampler's own)."""
    old_forward: bool = True
    """Run π_old's no-grad forward on every minibatch. False, a fast path (issue 25), needs old_logp = sampler or
    sampler_bf16 (π_old is then the sampler's own), no routing replay and no sampler_correction; the expert-change
    metrics, which compare π_old's routing with the update's, are then not logged. It saves that forward's share of a
    rollout (bench/bench_cell.py --set old_forward=false)."""
    group_stats: bool = True
    """Log each parameter group's pre-clip gradient norm and AdamW's per-group peak (grad/norm_<group>,
    adam/peak_<group>: findings 2d and 10d). False, a fast path (issue 25), leaves them out; training is unchanged."""
    compile_update: bool = False
    """Run the trainer's log-prob forwards under ``torch.compile`` (gspo_lab/policy.py): each update's forward (and so
    its backward) and, where it runs (``old_forward``), π_old's no-grad forward, two graphs compiled once per process;
    the routing hooks (recording, Routing Replay, R3) work inside them. A fast path (issues 25, 52; ~1.2× on an
    update, warm, after ~40 s of compiling once per process). The same policy up to float rounding, not bit for bit."""
    compile_sampler: bool = False
    """Run the sampler's decode steps on a static KV cache under ``torch.compile`` (gspo_lab/rollout.py): a fast path
    (issue 52). The same draws for the same seed, log-probs within float rounding of the eager sampler's."""
    fused_adam: bool = False
    """AdamW's fused CPU kernel (``torch.optim.AdamW(fused=True)``) instead of its per-tensor loop: a fast path
    (issue 25; ~3.4× faster optimizer step on the ``moe`` policy). The same update up to float rounding: parameters
    differ by ≤ 1.2e-7 after 40 steps (tests/test_train.py), so a run drifts from the loop's like any reordering of
    float sums. Needs optimizer='adamw'."""
    sampler_precision: str = "fp32"
    """The sampler's arithmetic: fp32 | bf16 (autocast; old_logp=sampler_bf16 implies bf16). With old_logp=recompute
    π_old is still recomputed by the fp32 trainer, and the sampler's own log-probs are kept beside it."""
    sampler_correction: str | None = None
    """Multiply each token's loss by ρ = π_old/π_sampler (TRL vllm_importance_sampling_mode): token_truncate |
    token_mask | sequence_truncate | sequence_mask (gspo_lab/corrections.py); needs old_logp=recompute. None = off."""
    sampler_clip_min: float | None = None
    """Lower bound of ρ for sampler_correction (TRL vllm_importance_sampling_clip_min); None = none."""
    sampler_clip_max: float = 3.0
    """Upper bound of ρ for sampler_correction (TRL vllm_importance_sampling_clip_max, default 3.0)."""
    opsm_threshold: float | None = None
    """Off-policy sequence masking (TRL off_policy_mask_threshold, DeepSeek-V3.2): drop a response with Â < 0 whose
    mean log(π_sampler/π_θ) exceeds this δ (TRL suggests 0.5); None = off."""
    rollout_lag: int = 0
    """Stale rollouts (issue 38, gspo_lab/staleness.py): the sampler runs this many rollout batches ahead of the
    trainer, so batch t is sampled by the weights at the start of batch max(0, t − rollout_lag), as in an
    asynchronous RL system; the unit is the rollout batch (minibatch j then lags rollout_lag · M · epochs + j
    optimizer steps). π_old is the behaviour policy's (the sampler's own log-probs) with old_logp = sampler, or a
    proximal policy recomputed at the current weights with old_logp = recompute, weighted to the behaviour policy
    by sampler_correction. 0 = the synchronous loop, bit for bit."""
    temperature: float = 1.0
    """Sampling temperature."""
    top_k: int = 0
    """The sampler keeps the k most likely tokens and renormalises (gspo_lab/rollout.py kept_tokens); 0 = off. The
    sampler's log-probs are then the renormalised ones, as an inference engine returns them; evaluation is unchanged
    (the whole distribution at the training temperature)."""
    top_p: float = 1.0
    """Nucleus sampling after top-k: the most likely tokens while the mass before each is < top_p; 1 = off."""
    sampling_replay: bool = False
    """Score every trainer forward (π_old's recompute and the updates') on the tokens the sampler kept at each step
    ("sampling replay", the fix proposed for top-k / top-p's biased ratio); needs top_k or top_p on."""
    max_new_tokens: int = 0
    """Response budget; 0 = the task's target length + 4."""
    shuffle: bool = True
    """Shuffle rows before splitting into minibatches."""
    seed: int = 0
    """Seeds the prompt stream, the sampler and the shuffles (each its own torch.Generator)."""
    eval_every: int = 0
    """Held-out evaluation every N rollouts and before the first (exact-match accuracy on the fixed eval split at
    the training length, sampled at the training temperature and greedy; rows in eval.csv); 0 = off."""
    eval_prompts: int = 64
    """Eval-split prompts per evaluation (the same prompts every time)."""
    eval_samples: int = 1
    """Sampled responses per eval prompt at the training temperature (greedy gives one): an evaluation scores
    eval_prompts × eval_samples samples (findings part 2 declares ≥ 256: 128 prompts × 2)."""
    threads: int = 1
    """torch threads (1 was fastest for these sizes on a shared 2-core machine; README, "Measured here")."""

    def __post_init__(self):
        get_objective(self.objective)
        task = get_task(self.task)
        if self.length not in task.lengths:
            raise ValueError(f"length must be one of {list(task.lengths)} for task {self.task!r}, got {self.length}")
        for name in ("prompts_per_rollout", "minibatches", "epochs", "rollouts", "threads"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.group_size < 2:
            raise ValueError(f"group_size must be >= 2 (a group needs a baseline), got {self.group_size}")
        if (self.prompts_per_rollout * self.group_size) % self.minibatches:
            raise ValueError(
                f"minibatches={self.minibatches} must divide prompts_per_rollout * group_size = "
                f"{self.prompts_per_rollout * self.group_size}"
            )
        check_sampling(self.top_k, self.top_p)
        if self.sampling_replay and self.top_k == 0 and self.top_p == 1:
            raise ValueError("sampling_replay=True needs top_k > 0 or top_p < 1 (a sampler that drops tokens)")
        if self.old_logp not in OLD_LOGP_SOURCES:
            raise ValueError(f"old_logp must be one of {OLD_LOGP_SOURCES}, got {self.old_logp!r}")
        if not self.old_forward and (self.old_logp == "recompute" or self.routing_replay or self.sampler_correction):
            raise ValueError(
                "old_forward=False needs old_logp='sampler' or 'sampler_bf16', routing_replay=False and "
                f"sampler_correction=None (they read π_old's forward), got old_logp={self.old_logp!r}, "
                f"routing_replay={self.routing_replay}, sampler_correction={self.sampler_correction!r}"
            )
        self._check_corrections()
        self._check_branch()
        if (
            isinstance(self.rollout_lag, bool)
            or not isinstance(self.rollout_lag, int)
            or not (0 <= self.rollout_lag < self.rollouts)
        ):
            raise ValueError(
                f"rollout_lag must be a whole number of rollout batches in [0, rollouts={self.rollouts}) "
                f"(0 = synchronous), got {self.rollout_lag!r}"
            )
        if self.reward not in REWARDS:
            raise ValueError(f"reward must be one of {REWARDS}, got {self.reward!r}")
        if self.advantage_scale not in ("std", "none"):
            raise ValueError(f"advantage_scale must be std or none, got {self.advantage_scale!r}")
        if not (math.isfinite(self.token_advantage) and self.token_advantage >= 0):
            raise ValueError(f"token_advantage must be a finite number >= 0, got {self.token_advantage}")
        if self.token_advantage > 0 and not get_objective(self.objective).per_token_adv:
            takes = sorted(n for n, o in OBJECTIVES.items() if o.per_token_adv)
            raise ValueError(
                f"token_advantage > 0 needs an objective that takes per-token advantages ({takes}), "
                f"got objective={self.objective!r}"
            )
        if not self.lr > 0 or not self.temperature > 0:
            raise ValueError(f"lr and temperature must be > 0, got lr={self.lr}, temperature={self.temperature}")
        for name in ("grad_clip", "grad_clip_rel", "grad_skip"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a finite number > 0 or None (off), got {value}")
        from gspo_lab.grad_shaping import SPIKE_MODES

        if self.optimizer not in ("adamw", "sgd"):
            raise ValueError(f"optimizer must be 'adamw' or 'sgd', got {self.optimizer!r}")
        if self.fused_adam and self.optimizer != "adamw":
            raise ValueError(
                f"fused_adam=True is AdamW's fused kernel; it needs optimizer='adamw', got {self.optimizer!r}"
            )
        if self.spike is not None:
            if self.spike not in SPIKE_MODES:
                raise ValueError(f"spike must be one of {sorted(SPIKE_MODES)} or None (skip), got {self.spike!r}")
            if self.grad_skip is None:
                raise ValueError(f"spike={self.spike!r} needs grad_skip, the norm above which an update is a spike")
            if self.optimizer != "adamw" and self.spike != "random":
                raise ValueError(f"spike={self.spike!r} acts on AdamW's state; optimizer={self.optimizer!r} has none")
        if self.norm_of is not None:
            other = get_objective(self.norm_of)
            if self.norm_of == self.objective or other.per_token_adv != get_objective(self.objective).per_token_adv:
                raise ValueError(
                    f"norm_of must name another objective taking the same advantages as {self.objective!r}, "
                    f"got {self.norm_of!r}"
                )
            if self.beta > 0:
                raise ValueError(f"norm_of needs beta = 0 (the KL term has no 'other objective'), got beta={self.beta}")
        if self.max_new_tokens < 0:
            raise ValueError(f"max_new_tokens must be >= 0, got {self.max_new_tokens}")
        check_schedule(self.lr_schedule, self.warmup_steps, self.lr_horizon_steps)
        if not (math.isfinite(self.beta) and self.beta >= 0):
            raise ValueError(f"beta must be a finite number >= 0, got {self.beta}")
        if self.sampler_routing_replay and self.routing_replay:
            raise ValueError("sampler_routing_replay (R3) replays the sampler's experts in every trainer forward: "
                             "it needs routing_replay=False (R2 replays π_old's)")  # fmt: skip
        if self.kl_bias_correction and self.beta == 0:
            raise ValueError("kl_bias_correction=True weighs the KL term, which is off at beta = 0; set beta > 0")
        if self.eval_every < 0:
            raise ValueError(f"eval_every must be >= 0 (0 = off), got {self.eval_every}")
        if self.eval_prompts < 1:
            raise ValueError(f"eval_prompts must be >= 1, got {self.eval_prompts}")
        if self.eval_samples < 1:
            raise ValueError(f"eval_samples must be >= 1, got {self.eval_samples}")
        if OBJECTIVES[self.objective].clip is None:
            if self.eps_low is not None or self.eps_high is not None:
                raise ValueError(
                    f"objective {self.objective!r} has no clip range (its trust region is its own parameters): "
                    f"eps_low and eps_high must be None, got {self.eps_low!r}, {self.eps_high!r}"
                )
        else:
            check_clip_range(*self.clip)  # the band in force: given values, else the objective's defaults
        ckpt_task = checkpoint_task(self.checkpoint)  # raises FileNotFoundError naming the checkpoint
        # a task that rewards the same problems and targets differently (add_format vs add) may share a cold start
        if get_task(ckpt_task).split_name != get_task(self.task).split_name:
            raise ValueError(
                f"task={self.task!r} does not match checkpoint {self.checkpoint!r}, which was trained on "
                f"{ckpt_task!r}: pass task={ckpt_task!r} or a {self.task!r} checkpoint"
            )

    def _check_branch(self) -> None:
        if not (0 <= self.branch_at < self.rollouts):
            raise ValueError(f"branch_at must be in [0, rollouts={self.rollouts}) (0: no branch), got {self.branch_at}")
        if self.trunk and not self.branch_at:
            raise ValueError(f"trunk is a branch's trunk: it needs branch_at > 0, got trunk={self.trunk!r}")
        if self.trunk:
            try:
                fields = json.loads(self.trunk)
            except json.JSONDecodeError as err:
                raise ValueError(f"trunk must be a JSON object of fields, got {self.trunk!r} ({err})") from None
            if not isinstance(fields, dict) or not set(fields) <= set(BRANCHABLE):
                raise ValueError(f"trunk may only set the fields {list(BRANCHABLE)}, got {self.trunk!r}")

    def trunk_config(self) -> TrainConfig:
        """A branch's trunk: this config with ``trunk``'s fields, no branch (errors name the trunk's bad field)."""
        if not self.branch_at:
            raise ValueError("trunk_config: this config is not a branch (branch_at = 0)")
        return replace(self, **json.loads(self.trunk or "{}"), branch_at=0, trunk="")

    def with_trunk(self, fields: dict) -> TrainConfig:
        """This branch with its ``trunk`` set: the trunk takes ``fields``' value (else the default) of every
        :data:`BRANCHABLE` field (a spec passes its base, so the trunk is the cell without its branch values)."""
        defaults = TrainConfig.__dataclass_fields__
        trunk = {f: fields[f] if f in fields else defaults[f].default for f in BRANCHABLE}
        return replace(self, trunk=TrainConfig.trunk_of(self, replace(self, **trunk, branch_at=0, trunk="")))

    @staticmethod
    def trunk_of(branch: TrainConfig, trunk: TrainConfig) -> str:
        """The ``trunk`` string of ``branch`` for a given trunk config (its differing fields, sorted JSON)."""
        a, b = asdict(branch), asdict(trunk)
        other = sorted(k for k in a if a[k] != b[k] and k not in ("branch_at", "trunk", "rollouts"))
        if not set(other) <= set(BRANCHABLE):
            raise ValueError(f"a branch may only change {list(BRANCHABLE)} from its trunk, it changes {other}")
        return json.dumps({k: b[k] for k in other}, sort_keys=True) if other else ""

    def _check_corrections(self) -> None:
        if self.sampler_precision not in SAMPLER_PRECISIONS:
            raise ValueError(f"sampler_precision must be one of {SAMPLER_PRECISIONS}, got {self.sampler_precision!r}")
        if self.sampler_correction is not None:
            check_correction(self.sampler_correction, self.sampler_clip_min, self.sampler_clip_max)
            if self.old_logp != "recompute":
                raise ValueError(
                    f"sampler_correction needs old_logp='recompute' (π_old from the trainer, ρ = π_old/π_sampler); "
                    f"with old_logp={self.old_logp!r} π_old is the sampler's own and every ρ is 1"
                )
            if self.objective == "vespo" and self.sampler_correction.startswith("sequence"):
                raise ValueError(
                    "vespo folds a per-token ρ into its weight: sampler_correction must be token_truncate or "
                    f"token_mask (TRL raises for vespo with a sequence mode too), got {self.sampler_correction!r}"
                )
        elif (self.sampler_clip_min, self.sampler_clip_max) != (None, 3.0):
            raise ValueError("sampler_clip_min / sampler_clip_max are the bounds of sampler_correction, which is off")
        if self.opsm_threshold is not None:
            if not math.isfinite(self.opsm_threshold):
                raise ValueError(f"opsm_threshold must be a finite number or None (off), got {self.opsm_threshold}")
            if self.token_advantage > 0:
                raise ValueError("opsm_threshold reads one Â per response: it needs token_advantage = 0")

    @property
    def sampler_dtype(self):
        """The sampler's autocast dtype: bfloat16 for sampler_precision=bf16 or old_logp=sampler_bf16, else None."""
        import torch

        bf16 = self.sampler_precision == "bf16" or self.old_logp == "sampler_bf16"
        return torch.bfloat16 if bf16 else None

    @property
    def clip(self) -> tuple[float, float] | tuple[None, None]:
        """(ε_low, ε_high) in force: the given values, else the objective's defaults; (None, None) for an objective
        without a clip range (sapo, vespo)."""
        spec = OBJECTIVES[self.objective]
        if spec.clip is None:
            return None, None
        return (
            spec.clip.low if self.eps_low is None else self.eps_low,
            spec.clip.high if self.eps_high is None else self.eps_high,
        )


#: the small CPU preset for tests and smoke notebooks: 2 rollouts of 4 prompts × G = 4
SMOKE = replace(TrainConfig(), prompts_per_rollout=4, group_size=4, minibatches=2, rollouts=2, length=6)
