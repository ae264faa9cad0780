"""The metric catalogue: every statistic an objective returns, defined once.

Objectives never log. They return an :class:`ObjectiveStats` (frozen, plain floats); the training loop collects
those into a history. Each field's metadata holds its namespaced key and its definition; :func:`catalogue` prints
them as the table below, which is the one place a metric is defined.

Clip fractions come in two *units* and two *meanings*, and the names say which:

* unit ``token``: a fraction of valid tokens. For GSPO a clipped response counts all its tokens (the paper's
  Fig. 2 and verl's ``pg_clipfrac``); for GRPO each token counts on its own.
* unit ``seq``: a fraction of all B responses. GSPO: the response is clipped (TRL's sequence-level
  ``clip_ratio/*``); GRPO: at least one of its tokens is clipped.
* meaning *active* (no suffix, ``_low``, ``_high``): the clip binds for the sign of Â, i.e. it zeroes that unit's
  gradient — ratio > 1 + ε_high with Â > 0 (``high``), ratio < 1 − ε_low with Â < 0 (``low``). This is TRL's
  ``clip_ratio/region_mean`` definition. A ratio exactly on the band's edge is not clipped.
* meaning *outside* (``_outside``): the ratio lies outside [1 − ε_low, 1 + ε_high], whatever the sign of Â.

Drift against a fixed reference band (``drift/outside_grpo_band_*``, issue 37): whatever the objective trained,
which valid tokens with Â ≠ 0 have a token ratio w outside GRPO's band [1 − 0.2, 1 + 0.27] (``objectives.GRPO_CLIP``),
and which of those still carry gradient. A token *carries gradient* when the policy loss's gradient with respect to
its log-prob is nonzero; every objective's is c_{i,t} · Â_{i,t} times its aggregation's positive length and batch
factors, so it is read from the objective's own detached weight c (``weight/token_mean``) as c_{i,t} ≠ 0 (Â ≠ 0 by
selection), without an extra backward or a hook; an objective whose gradient is zeroed elsewhere than in c (SAPO's
±20 clamp of log w) passes its own ``carries``. Tokens with Â = 0 are left out of both: they carry no gradient under
any objective (the loss is linear in Â), so counting them would mix the zero-std share (``adv/zero_std_frac``) into
a number meant to tell objectives apart. Both are shares of the valid tokens, so neither is ever 0/0 (0 when no
token is outside, and 0 with no valid token, as every masked mean here); the share *of the outside tokens* that keep
their gradient is their ratio, read per rollout from the two means (``gspo_lab.experiments.failure.kept_grad_share``:
None, not NaN, for a rollout with no such token). The KL penalty's gradient (β > 0) is not the objective's: not
counted.

KL estimates use samples from π_old (the rollout policy) with w = π_θ / π_old per token: k1 = −log w and
k3 = (w − 1) − log w (Schulman, "Approximating KL divergence", 2020), averaged over valid tokens; both estimate
KL(π_old ‖ π_θ). k3 is >= 0 for every sample; k1 is unbiased but can be negative.

Shapes: B sequences, T tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import torch
from torch import Tensor

from gspo_lab.reductions import masked_mean

__all__ = ["CATALOGUE", "metric", "ObjectiveStats", "objective_stats", "grpo_band_shares", "catalogue"]


#: Every key gspo_lab writes into a metrics table, with its definition: the one catalogue. ObjectiveStats,
#: AdvantageStats and the training loop name keys from here; a key missing here fails at import (``metric``) or in
#: tests/test_metrics_catalogue.py (loop rows, eval rows).
CATALOGUE: dict[str, str] = {
    # index columns of a metrics table (coordinates, not measurements)
    "rollout": "index of the rollout batch (RL step), from 0",
    "update": "index of the optimizer step, from 0",
    "update_in_rollout": "k: optimizer steps already taken on this rollout batch (0 = on-policy)",
    "epoch": "pass over the rollout batch",
    # rewards and advantages of the rollout batch (gspo_lab.advantages)
    "reward/mean": "mean reward over the batch",
    "reward/std": "population std of rewards over the batch",
    "reward/accuracy": "exact-match fraction of the rollout batch (final answer, Task.reward)",
    "reward/minibatch_mean": "mean reward of this minibatch's responses",
    "adv/zero_std_frac": "groups whose rewards are all equal (Â = 0: no signal)",
    "adv/absmax": "max |Â_i| over the batch",
    # clipping (ObjectiveStats)
    "clip/token_frac": "valid tokens whose clip is active for the sign of Â (a clipped GSPO response counts all "
    "its tokens: our reading of the paper's Fig. 2, which never defines a clipped token)",
    "clip/token_frac_low": "valid tokens with ratio < 1−ε_low and Â < 0",
    "clip/token_frac_high": "valid tokens with ratio > 1+ε_high and Â > 0",
    "clip/token_frac_outside": "valid tokens whose ratio lies outside [1−ε_low, 1+ε_high], any Â",
    "clip/seq_frac": "responses (of all B) with at least one clip-active token",
    "clip/seq_frac_low": "responses with a low-clip-active token (Â < 0)",
    "clip/seq_frac_high": "responses with a high-clip-active token (Â > 0)",
    "clip/seq_frac_outside": "responses with at least one token whose ratio lies outside the band, any Â",
    # importance ratios (ObjectiveStats)
    "ratio/tok_log_mean": "mean of log w_{i,t} over valid tokens",
    "ratio/tok_log_std": "population std of log w_{i,t} over valid tokens",
    "ratio/tok_log_absmax": "max |log w_{i,t}| over valid tokens",
    "ratio/seq_log_mean": "mean of log s_i over non-empty responses",
    "ratio/seq_log_std": "population std of log s_i over non-empty responses",
    "ratio/seq_log_absmax": "max |log s_i| over non-empty responses",
    # KL(π_old‖π_θ) on the minibatch (ObjectiveStats)
    "kl/k1": "mean over valid tokens of −log w_{i,t}: KL(π_old‖π_θ), unbiased",
    "kl/k3": "mean over valid tokens of w_{i,t} − 1 − log w_{i,t}: KL(π_old‖π_θ), >= 0",
    # the trust region as a weight (ObjectiveStats)
    "weight/token_mean": "mean over valid tokens of the detached factor c_{i,t} with which the objective's gradient "
    "is Σ c_{i,t} Â_{i,t} ∇log π_θ(y_{i,t}) before its aggregation's length and batch factors: w_{i,t} (GRPO) or "
    "s_i (GSPO) where the clip does not bind and 0 where it does; min(r, ε_max) (CISPO); clip(r, 1−ε_low, 1+ε_high) "
    "(cispo_clip); min(r, ε_max) where cispo_mask's mask keeps the token and 0 where it does not; SAPO's gate "
    "4σ(x)(1−σ(x))·r; VESPO's φ(w); times a sampler correction's ρ and mask when one is on. 1 on-policy for every "
    "objective; objectives without a clip (sapo, vespo) report every clip/* fraction as 0 and are read here",
    # drift against GRPO's band, whatever the objective (ObjectiveStats; module docstring)
    "drift/outside_grpo_band_frac": "valid tokens with Â ≠ 0 whose token ratio w lies outside GRPO's band "
    "[1−0.2, 1+0.27] (objectives.GRPO_CLIP), whatever the objective trained; for grpo at its own ε, "
    "clip/token_frac_outside less the Â = 0 tokens",
    "drift/outside_grpo_band_grad_frac": "valid tokens of drift/outside_grpo_band_frac whose policy-loss gradient "
    "with respect to their log-prob is nonzero (c_{i,t} ≠ 0 in weight/token_mean's terms), as a share of all valid "
    "tokens: GRPO's clip-active tokens (cispo_mask's masked ones) drop out, CISPO and cispo_clip keep them all; its "
    "ratio to drift/outside_grpo_band_frac per rollout is the share that keeps its gradient "
    "(experiments.failure.kept_grad_share)",
    # sampler–trainer corrections (gspo_lab.corrections; only when sampler_correction or opsm_threshold is set)
    "correction/logp_diff_mean": "mean over valid tokens of |log π_old − log π_sampler|: the trainer's recomputed "
    "π_old against the sampler's own log-probs (TRL sampling/sampling_logp_difference/mean)",
    "correction/rho_mean": "mean over valid tokens of the applied ρ = π_old/π_sampler after truncation or masking (a "
    "sequence mode's ρ counts at each of its tokens; TRL's sampling/importance_sampling_ratio/mean counts sequences "
    "there)",
    "correction/masked_frac": "valid tokens whose ρ a *_mask mode set to 0 (a masked sequence counts all its tokens)",
    "correction/truncated_frac": "valid tokens whose ρ a *_truncate mode clamped to a bound",
    "correction/opsm_dropped_frac": "responses (of all B) dropped by off-policy sequence masking (Â < 0 and mean "
    "log(π_sampler/π_θ) > δ)",
    # stale rollouts (gspo_lab.staleness; only when rollout_lag > 0; per rollout batch)
    "stale/lag": "rollout batches between the weights that sampled the batch and those it is trained from",
    "stale/kl_k3": "k3 of KL(π_behav‖π_current) over valid tokens: the sampler's weights against the current ones",
    "stale/ess_frac": "(Σ w)² / (B Σ w²) of the responses' weights w = π_current(y)/π_behav(y), in (0, 1]",
    # counts (ObjectiveStats)
    "count/seqs": "responses in the batch (B), empty ones included",
    "count/tokens": "valid tokens in the batch (Σ_i |y_i|)",
    "count/empty_seqs": "responses with no valid token (contribute 0 to the loss)",
    # the update (gspo_lab.step)
    "loss/policy": "the objective's loss (−J) on this minibatch",
    "loss/total": "the loss the optimizer minimised: loss/policy + β · ref/kl_k3",
    "ref/kl_k3": "KL(π_θ‖π_ref) k3 estimate to the reference policy (the cold start), GRPO-aggregated; only when "
    "β > 0; with kl_bias_correction each token's k3 times its ratio to π_old (TRL's default)",
    "optim/lr": "learning rate used by this step",
    "grad/norm": "gradient norm before clipping",
    "grad/clipped": "1 when a cap in force (grad_clip, or grad_clip_rel × the recent median) bound this update, else 0",
    "grad/skipped": "1 when this update took no optimizer step (grad_skip: its pre-clip norm exceeded the threshold)",
    "grad/spike": "1 when this update's pre-clip norm exceeded grad_skip and TrainConfig.spike acted on it "
    "(logged only with spike set)",
    "grad/norm_own": "norm_of arms: the norm of this objective's own gradient, before it took the other's norm",
    "grad/norm_other": "norm_of arms: the norm of the other objective's gradient of the same minibatch (the norm "
    "applied)",
    "grad/cos_other": "norm_of arms: cosine between this objective's and the other objective's gradient",
    "grad/norm_embed": "pre-clip gradient norm of the token embeddings (gspo_lab/grad_shaping.py groups)",
    "grad/norm_lm_head": "pre-clip gradient norm of the output projection",
    "grad/norm_router": "pre-clip gradient norm of the MoE routers (MoE only)",
    "grad/norm_mlp": "pre-clip gradient norm of the experts (MoE) or the MLPs (dense)",
    "grad/norm_attn": "pre-clip gradient norm of the attention blocks (projections and q/k norms)",
    "grad/norm_norm": "pre-clip gradient norm of the RMSNorm weights outside attention",
    "adam/peak_embed": "after the step: largest |g| / (√v̂ + eps) over the embeddings' coordinates (g the gradient "
    "the step used, v̂ AdamW's bias-corrected second moment including it; at most √((1 − β2^t) / (1 − β2)), reached "
    "when g dominates v: 1 at step 1, 9.8 at step 100, 31.6 in the limit)",
    "adam/peak_lm_head": "the same over the output projection",
    "adam/peak_router": "the same over the MoE routers (MoE only)",
    "adam/peak_mlp": "the same over the experts (MoE) or the MLPs (dense)",
    "adam/peak_attn": "the same over the attention blocks",
    "adam/peak_norm": "the same over the RMSNorm weights outside attention",
    "policy/entropy": "mean entropy of π_θ(·|x, y_<t) at the sampling temperature over valid response tokens",
    "response/length": "mean valid response tokens (<eos> included) in the rollout batch",
    "response/truncated_frac": "responses without <eos> within max_new_tokens",
    "moe/expert_change": "(token, layer) top-k sets differing between π_old and π_θ (routing.expert_change_frac)",
    "moe/expert_swap": "activated experts of π_θ that π_old did not use (routing.expert_swap_frac)",
    # held-out evaluation (gspo_lab.evaluate; rows of a run's eval.csv, keyed by rollout = rollouts completed)
    "eval/accuracy_sampled": "exact-match fraction (final answer) of one response per prompt on the first "
    "eval_prompts prompts of the eval split at the training length, sampled at the training temperature",
    "eval/accuracy_greedy": "the same with argmax decoding",
    "eval/response_length_sampled": "mean valid response tokens (<eos> included) of the sampled eval responses",
    "eval/response_length_greedy": "mean valid response tokens (<eos> included) of the greedy eval responses",
    "eval/truncated_frac_sampled": "sampled eval responses without <eos> within the budget",
    "eval/truncated_frac_greedy": "greedy eval responses without <eos> within the budget",
    "time/rollout_s": "seconds spent sampling and scoring this rollout batch (incl. π_old forwards)",
    "time/update_s": "seconds of this optimizer step (forward, backward, step)",
}


def metric(key: str):
    """A dataclass field whose metadata names its catalogue key (KeyError here if the key is not catalogued)."""
    return field(metadata={"key": key, "doc": CATALOGUE[key]})


@dataclass(frozen=True)
class ObjectiveStats:
    """Detached statistics of one objective evaluation. ``as_dict()`` gives the namespaced keys."""

    clip_token_frac: float = metric("clip/token_frac")
    clip_token_frac_low: float = metric("clip/token_frac_low")
    clip_token_frac_high: float = metric("clip/token_frac_high")
    clip_token_frac_outside: float = metric("clip/token_frac_outside")
    clip_seq_frac: float = metric("clip/seq_frac")
    clip_seq_frac_low: float = metric("clip/seq_frac_low")
    clip_seq_frac_high: float = metric("clip/seq_frac_high")
    clip_seq_frac_outside: float = metric("clip/seq_frac_outside")
    tok_log_ratio_mean: float = metric("ratio/tok_log_mean")
    tok_log_ratio_std: float = metric("ratio/tok_log_std")
    tok_log_ratio_absmax: float = metric("ratio/tok_log_absmax")
    seq_log_ratio_mean: float = metric("ratio/seq_log_mean")
    seq_log_ratio_std: float = metric("ratio/seq_log_std")
    seq_log_ratio_absmax: float = metric("ratio/seq_log_absmax")
    kl_k1: float = metric("kl/k1")
    kl_k3: float = metric("kl/k3")
    n_seqs: int = metric("count/seqs")
    n_tokens: int = metric("count/tokens")
    n_empty_seqs: int = metric("count/empty_seqs")
    weight_token_mean: float = metric("weight/token_mean")
    grpo_band_outside_frac: float = metric("drift/outside_grpo_band_frac")
    grpo_band_outside_grad_frac: float = metric("drift/outside_grpo_band_grad_frac")

    def as_dict(self) -> dict[str, float]:
        """{namespaced key: value}, e.g. ``{"clip/token_frac": 0.15, ...}``."""
        return {f.metadata["key"]: getattr(self, f.name) for f in fields(self)}


def catalogue(prefix: str = "") -> dict[str, str]:
    """{key: definition} of every catalogued metric (those starting with ``prefix``, e.g. ``"clip/"``)."""
    return {k: v for k, v in CATALOGUE.items() if k.startswith(prefix)}


def _std_absmax(x: Tensor, mask: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Masked mean, population std and max |x| over all masked-in entries (0 when there are none)."""
    mean = masked_mean(x, mask, dim=None)
    var = masked_mean((x - mean) ** 2, mask, dim=None)
    absmax = x.abs().where(mask, x.new_zeros(())).max() if x.numel() else x.new_zeros(())
    return mean, var.sqrt(), absmax


@torch.no_grad()
def grpo_band_shares(
    tok_log_ratio: Tensor, adv: Tensor, mask: Tensor, carries: Tensor, grpo_band: tuple[float, float]
) -> tuple[Tensor, Tensor]:
    """``drift/outside_grpo_band_frac`` and ``drift/outside_grpo_band_grad_frac`` (module docstring), as 0-d tensors.

    Args:
        tok_log_ratio: (B, T) log w_{i,t}; adv: (B, T) Â at each token; mask: (B, T) bool, True at valid tokens.
        carries: (B, T) bool, True where the loss's gradient with respect to the token's log-prob is nonzero.
        grpo_band: GRPO's (ε_low, ε_high): the band [1 − ε_low, 1 + ε_high] on w.
    Returns:
        (outside, kept): the shares of valid tokens with Â ≠ 0 and w outside the band, and of those that carry
        gradient; each 0, not NaN, when there is none (or no valid token).
    """
    tok_w = tok_log_ratio.exp()
    outside = mask & (adv != 0) & ((tok_w < 1 - grpo_band[0]) | (tok_w > 1 + grpo_band[1]))
    dt = tok_log_ratio.dtype
    return masked_mean(outside.to(dt), mask, dim=None), masked_mean((outside & carries).to(dt), mask, dim=None)


@torch.no_grad()
def objective_stats(
    tok_log_ratio: Tensor,
    clip_log_ratio: Tensor,
    adv: Tensor,
    mask: Tensor,
    eps_low: float,
    eps_high: float,
    grad_weight: Tensor | None = None,
    *,
    factor: Tensor | None = None,
    zeroed: Tensor | None = None,
    grpo_band: tuple[float, float],
    carries: Tensor | None = None,
) -> ObjectiveStats:
    """Clip, ratio and KL statistics of one objective evaluation.

    Args:
        tok_log_ratio: (B, T) log w_{i,t}, 0 at padding.
        clip_log_ratio: (B, T) log of the ratio the objective clips, at each token (log w_{i,t} for GRPO; log s_i
            broadcast over the response for GSPO; log s_{i,t} for GSPO-token).
        adv: (B, T) advantage at each token (a per-sequence Â_i broadcast).
        mask: (B, T) bool, True at valid tokens.
        eps_low, eps_high: the clip band [1 − eps_low, 1 + eps_high].
        grad_weight: (B, T) the detached gradient factor c_{i,t} of ``weight/token_mean``; None = the hard clip's:
            exp(clip_log_ratio) where the clip does not bind for the sign of Â, 0 where it does (and where ``zeroed``,
            (B, T) bool, is True: e.g. dual-clip's floor).
        factor: (B, T) the sampler correction's factor on each token's loss (``sampler_ratio`` × ``seq_keep``), which
            multiplies the gradient weight too; None = none.
        grpo_band: GRPO's (ε_low, ε_high) (``objectives.GRPO_CLIP``), the fixed band of ``drift/outside_grpo_band_*``
            whatever the objective's own (passed in: the objectives import this module, not the other way round).
        carries: (B, T) bool, True where the loss's gradient with respect to logp is nonzero; None = ``grad_weight``
            (times ``factor``) nonzero (module docstring).
    """
    weight = clip_log_ratio.exp()
    low = mask & (adv < 0) & (weight < 1 - eps_low)
    high = mask & (adv > 0) & (weight > 1 + eps_high)
    outside = mask & ((weight < 1 - eps_low) | (weight > 1 + eps_high))
    fdt = tok_log_ratio.dtype
    lengths = mask.sum(-1)
    nonempty = lengths > 0
    log_s = masked_mean(tok_log_ratio, mask, dim=-1)
    tok = _std_absmax(tok_log_ratio, mask)
    seq = _std_absmax(log_s.unsqueeze(0), nonempty.unsqueeze(0))
    k3 = torch.expm1(tok_log_ratio) - tok_log_ratio  # w − 1 − log w, exact near w = 1
    values = torch.stack(
        [
            *(masked_mean(c.to(fdt), mask, dim=None) for c in (low | high, low, high, outside)),
            *(c.any(-1).to(fdt).mean() for c in (low | high, low, high, outside)),
            *tok,
            *seq,
            -masked_mean(tok_log_ratio, mask, dim=None),
            masked_mean(k3, mask, dim=None),
        ]
    ).tolist()
    counts = [mask.shape[0], int(lengths.sum()), int((~nonempty).sum())]
    if grad_weight is None:
        grad_weight = torch.where(low | high if zeroed is None else low | high | zeroed, 0.0, weight)
    if factor is not None:
        grad_weight = grad_weight * factor
    if carries is None:
        carries = grad_weight != 0
    weights = [masked_mean(grad_weight.to(fdt), mask, dim=None), *grpo_band_shares(tok_log_ratio, adv, mask, carries,
               grpo_band)]  # fmt: skip
    return ObjectiveStats(*values, *counts, *torch.stack(weights).tolist())
