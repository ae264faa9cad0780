"""The staleness map (issue 38, item 2): the kit's lag knob beside the asynchronous RL systems people run, each with
its unit and the off-policy correction it pairs with, as their own documentation or source states it.

Each row names the version it was read at. TRL's row is checked against the locked TRL 1.16 by
tests/test_staleness_map.py (its ``AsyncGRPOConfig`` fields and defaults); the others were read from the systems'
source at the commits named (2026-12-05) and are not installed here, so nothing re-checks them. "Steps" differ across
systems (a weight sync, a trainer step counted from the oldest token's policy, a fraction of samples): the *unit*
column says which, and the kit's D maps onto a one-update-per-batch system's count only at M = 1.
"""

from __future__ import annotations

__all__ = ["COLUMNS", "ROWS", "staleness_map"]

COLUMNS = ("system", "knob (default)", "unit", "stale samples", "correction paired with it (defaults)", "read at")

#: one row per system: the kit's first
ROWS: tuple[tuple[str, ...], ...] = (
    ("gspo_lab (this kit)", "`rollout_lag` (0)",
     "rollout batches; minibatch j of a batch at lag D is D·M·epochs + j optimizer steps behind its sampler",
     "none dropped: every batch lags exactly min(t, D)",
     "per run: π_old = the behaviour policy (`old_logp = \"sampler\"`) or a proximal π_old recomputed now "
     "(`old_logp = \"recompute\"`) weighted by `sampler_correction` (token / sequence, truncate / mask) and OPSM",
     "this repository"),
    ("TRL `AsyncGRPOTrainer`", "`max_staleness` (4)",
     "weight syncs, one per `weight_sync_steps` (1) optimizer steps",
     "dropped when consumed", "none: the clipped token ratio uses the generator's log-probs as π_old (ε 0.2); "
     "`vllm_importance_sampling_*` belongs to the synchronous `GRPOConfig` only",
     "TRL 1.16 (the lock; `trl.experimental.async_grpo`, tested); stable from 1.18, not tested here"),
    ("AReaL", "`rollout.max_head_offpolicyness` (0 = synchronous)",
     "model versions, one per train step, counted from the version that generated the first token",
     "not admitted (a capacity rule)",
     "decoupled PPO: `actor.use_decoupled_loss` (false) recomputes a proximal π_old; behaviour weights filtered by "
     "`actor.rejection_sampling` (off; token mask at 5.0 when set)", "v1.0.4, commit 4aef98d"),
    ("PRIME-RL", "`orchestrator.max_off_policy_steps` (8)",
     "trainer steps, from the oldest policy that generated any token, queue time included",
     "dropped, in flight and queued",
     "no proximal π_old: ratio to the inference log-probs, DPPO binary-TV mask (0.2 / 0.2) plus KL (τ 1e-3); "
     "`max_async_level` was removed in v0.6.0", "commit 559b447 (v0.8.1.dev)"),
    ("NeMo-RL (async GRPO)", "`grpo.async_grpo.max_trajectory_age_steps` (1)",
     "training steps (weight versions)", "excluded from the replay buffer",
     "required: `loss_fn.use_importance_sampling_correction` (π_θold / π_generator on the clipped objective); "
     "optional truncation `truncated_importance_sampling_type` (tis / icepop / seq-mask-tis; off)",
     "commit 7ea279a (after v0.7.0)"),
    ("verl one-step-off-policy", "none: one step by design", "training steps", "—",
     "`algorithm.rollout_correction.bypass_mode: true`: the rollout log-probs are π_old (PPO clip against the "
     "behaviour policy); `rollout_is` / `rollout_rs` optional", "commit b178a3c (v0.7.0+, January 2026)"),
    ("verl fully-async", "`async_training.staleness_threshold` (0.1)",
     "a fraction of stale samples per parameter sync (every `trigger_parameter_sync_step` = 4 updates)",
     "oldest dropped when the queue is full",
     "`use_rollout_log_probs: true` (behaviour π_old); `compute_prox_log_prob` (false) with rollout IS "
     "approximates AReaL's decoupled PPO", "commit b178a3c (v0.7.0+, January 2026)"),
    ("Tinker cookbook", "`AsyncConfig.max_steps_off_policy` (required; docs: `sampling_steps_ahead`)",
     "training steps a sample lags (docs: steps sampling runs ahead, which bounds the lag only in a full buffer)",
     "re-queued for resampling (docs: nothing discarded)",
     "`loss_fn = \"importance_sampling\"` with the sampler's log-probs, no clipping (`ppo`, `cispo` selectable)",
     "tinker-cookbook commit 9dfcc3a; docs at commit 8bf7dd6 (which is newer was not established)"),
    ("SkyRL (fully async)", "`trainer.fully_async.max_staleness_steps` (4)",
     "training steps (a capacity rule, held in steady state)", "not scheduled past the budget",
     "`trainer.algorithm.off_policy_correction.tis_ratio_type` (off; token cap 2.0, sequence cap 5.0)",
     "commit a956457"),
)  # fmt: skip


def staleness_map() -> str:
    """The map as a Markdown table (the recipe page's)."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(row) + " |" for row in ROWS]
    return "\n".join(lines)
