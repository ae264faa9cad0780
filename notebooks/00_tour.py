# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python (gspo-lab)
#     language: python
#     name: gspo-lab
# ---

# %% [markdown]
# # 00 · A tour: GRPO, GSPO and GSPO-token on one real rollout batch
#
# **Question.** Take one rollout batch from a real (tiny) Qwen3-MoE policy. What do GRPO, GSPO and GSPO-token each
# compute on it — on-policy, and after one off-policy update?
#
# **Paper.** GSPO §2 (GRPO, Eqs. 2-3), §4.1 (GSPO, Eqs. 5-7), §4.3 (GSPO-token, Eqs. 13-14), §4.2 (they coincide
# on-policy). Ten minutes, no algorithm code here: every number comes from `gspo_lab`.

# %% tags=["parameters"]
checkpoint = "moe-sort"  # shipped cold-start Qwen3-MoE: sorts digit strings, ~40% accurate at temperature 1
length = 12  # sort 12 digits: 13-token responses with <eos>
prompts = 16
group_size = 8
minibatches = 4  # the paper's split of each rollout batch
lr = 3e-5
minibatch_rows = 32  # rows of the on-policy gradient comparison
seed = 0
results_path = None

# %% [markdown]
# ## Setup: sample, score, update once
# One rollout batch from $\pi_{old}$, rewards from the sort verifier, group advantages (Eq. 6), and one GRPO update
# on the first minibatch — after it, the rest of the batch is *off-policy*, as the 2nd minibatch is in the paper.

# %%
from IPython.display import display

from gspo_lab.analysis import compare_objectives, offpolicy_trace
from gspo_lab.config import TrainConfig
from gspo_lab.gradients import on_policy_gradient_gap
from gspo_lab.nb.results import claim, fmt, record_results, takeaway
from gspo_lab.plots import plot_objective_table

cfg = TrainConfig(checkpoint=checkpoint, length=length, prompts_per_rollout=prompts, group_size=group_size,
                  minibatches=minibatches, objective="grpo", lr=lr, seed=seed)
trace = offpolicy_trace(cfg, updates=1)
batch = trace.train
print(f"{len(batch.rewards)} responses, mean reward {batch.rewards.mean():.3f}, "
      f"zero-advantage responses {(batch.adv == 0).float().mean():.2f}")
for p, c, r in list(zip(batch.rollout.problems, batch.rollout.completions, batch.rewards.tolist()))[:4]:
    print(f"{p.prompt:>16} -> {c:<14} target {p.target:<14} reward {r}")

# %% [markdown]
# ## 1. On-policy, the three objectives agree
# With $\pi_\theta = \pi_{old}$ every ratio is exactly 1 and nothing is clipped. The *loss* is then $-\sum_i \hat A_i/B
# = 0$ for every objective (advantages sum to zero in each group), which says nothing; §4.2's corollary is about the
# **gradient**: GRPO's $\frac{1}{|y_i|}\sum_t w_{i,t}\nabla\log\pi$ and GSPO's $s_i\frac{1}{|y_i|}\sum_t\nabla\log\pi$
# coincide when every $w_{i,t} = s_i = 1$. Below: real parameter gradients of the three objectives at $\theta_0$.

# %%
on_policy = compare_objectives(batch, k=0)
gap = on_policy_gradient_gap(trace, ("grpo", "gspo", "gspo_token"), minibatch=minibatch_rows)
print(f"max |∇ difference| between objectives: {gap['max_abs_gap']:.2e} (gradient scale {gap['grad_scale']:.2e})")
on_policy[["loss", "clip/token_frac", "ratio/tok_log_absmax"]]

# %% [markdown]
# ## 2. One update later, they part
# GRPO clips token ratios at (0.2, 0.27); GSPO clips the length-normalised sequence ratio at (3e-4, 4e-4);
# GSPO-token uses GSPO's value with a per-token gradient path and, with one advantage per response, equals GSPO.

# %%
off_policy = compare_objectives(batch, k=1)
keys = ["loss", "clip/token_frac", "clip/seq_frac", "ratio/tok_log_absmax", "ratio/seq_log_absmax", "kl/k3"]
# GSPO-token equals GSPO with one advantage per response (section 3 of notebook 02): one bar for both
display(plot_objective_table(off_policy.drop(index="gspo_token"), keys[1:5], title="one batch after one update"))
off_policy[keys]

# %% [markdown]
# *Figure 1.* One rollout batch of `moe-sort` (4 layers, 16 experts, top-2, ~2 M weights; 16 prompts × 8 responses by
# default) after one GRPO update on its first minibatch, one bar per objective, GRPO (red) and GSPO (blue; GSPO-token
# equals it and is left out): the clipped-token and clipped-response fractions, the largest |token log-ratio| and the
# largest |sequence log-ratio $\log s_i$| — the last two are properties of the batch, the same for both bars. What to
# see: GSPO clips far more tokens than GRPO (first panel) although its sequence log-ratios (last panel) are far smaller
# than the token log-ratios GRPO clips (third): GSPO's band is ~700× narrower.

# %% [markdown]
# ## What to take away

# %% jupyter={"source_hidden": true}
clip_tok = off_policy["clip/token_frac"]
claims = [
    claim("on_policy_gradients_equal", "max |∇ GRPO, GSPO, GSPO-token pairwise difference| / max |∇| at θ_0",
          gap["rel_gap"], "<=", 1e-4),
    claim("gspo_token_equals_gspo", "|loss(GSPO-token) − loss(GSPO)| off-policy",
          abs(off_policy.loc["gspo_token", "loss"] - off_policy.loc["gspo", "loss"]), "<=", 1e-6),
    claim("gspo_clips_more", "GSPO − GRPO clipped-token fraction after one update",
          clip_tok["gspo"] - clip_tok["grpo"], ">=", 0.1),
]
tok_max, seq_max = off_policy.loc["grpo", "ratio/tok_log_absmax"], off_policy.loc["gspo", "ratio/seq_log_absmax"]
takeaway([
    f"On-policy the three objectives' parameter gradients differ by {fmt(gap['rel_gap'])} of their scale: nothing to "
    "choose between them. Everything the paper argues is about off-policy data.",
    f"After one update GRPO's largest token log-ratio is {fmt(tok_max)}, GSPO's largest sequence log-ratio "
    f"{fmt(seq_max)}. Yet with its far narrower band GSPO clips {fmt(clip_tok['gspo'])} of tokens, GRPO "
    f"{fmt(clip_tok['grpo'])} (notebook 03).",
    f"GSPO-token equals GSPO here (their losses differ by {fmt(claims[1].value)}): it only matters with per-token advantages "
    "(notebook 02).",
], why=f"after the same update GSPO's one weight per response moved {fmt(tok_max / seq_max)}× less than GRPO's most "
       "extreme token weight, so the per-token noise GRPO multiplies into its gradient never enters GSPO's.",
   claims=claims)

# %% [markdown]
# ## Record results

# %% jupyter={"source_hidden": true}
headline = off_policy[["loss", "clip/token_frac", "clip/seq_frac"]].to_dict()
numbers = {"off_policy": headline, "on_policy_gradient_gap": gap, "mean_reward": batch.rewards.mean()}
results = record_results(results_path, "00_tour", claims, numbers, parameters=dict(checkpoint=checkpoint, length=length))
