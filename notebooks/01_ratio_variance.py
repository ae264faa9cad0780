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
# # 01 · Importance-ratio variance: token ratios vs sequence ratios
#
# **Question.** After a few off-policy updates, how noisy are GRPO's token ratios $w_{i,t}$ compared with GSPO's
# sequence ratio $s_i$ — and what does length normalisation buy as responses get longer?
#
# **Paper.** GSPO §3 (why token-level importance weights inject noise that accumulates with length) and §4.1
# (Eq. 7: $s_i = \exp(\frac{1}{|y_i|}\sum_t \log w_{i,t})$, "length normalisation ... keeps $s_i$ in one numeric
# range"). Everything below is computed by `gspo_lab`; this notebook only asks questions.

# %% tags=["parameters"]
checkpoint = "moe-sort"  # shipped cold-start Qwen3-MoE (data/checkpoints)
train_length = 12  # problem size of the batch the updates are taken on
probe_lengths = [4, 8, 12, 16, 20]  # fresh batches of these sizes, scored under the same updated policies
prompts = 16  # prompts per batch (× group_size responses)
group_size = 8
updates = 3  # K: off-policy updates (the 2nd..4th minibatch of the paper's 4)
update_objective = "grpo"  # the objective of the updates (GRPO with the paper's ε)
lr = 3e-5
seed = 0
results_path = None  # papermill passes a path; None writes nothing

# %% [markdown]
# ## Setup: one rollout batch, K updates, probes of every length
# `offpolicy_trace` samples a batch from $\pi_{old}$, takes K optimizer steps on its minibatches (the training loop's
# own `update`), and after each step re-scores that batch and fresh probe batches of other lengths.
# All probes see the *same* policy change, so comparing them isolates length.

# %%
from dataclasses import replace

from IPython.display import display

from gspo_lab.analysis import (
    offpolicy_trace,
    prefix_ratio_variance,
    ratio_variance,
    token_clip_vs_sequence_ratio,
    variance_growth,
)
from gspo_lab.config import TrainConfig
from gspo_lab.nb.results import claim, fmt, record_results, takeaway
from gspo_lab.objectives import GRPO_CLIP
from gspo_lab.widgets import RatioPanel, ratio_view, variance_view

cfg = replace(
    TrainConfig(checkpoint=checkpoint, objective=update_objective, lr=lr, seed=seed),
    length=train_length,
    prompts_per_rollout=prompts,
    group_size=group_size,
)
trace = offpolicy_trace(cfg, updates, probe_lengths=tuple(probe_lengths))
longest = max(probe_lengths)
print(f"{updates} updates of {update_objective}; probes {sorted(trace.probes)}; expert change after k updates:",
      [round(x, 4) for x in trace.probes[longest].expert_change])

# %% [markdown]
# ## 1. Token ratios spread wide; the sequence ratio $s_i$ stays narrow
# Left: every token's $\log w_{i,t}$. Middle: GSPO's $\log s_i$, one per response. Right: the true sequence ratio
# $\sum_t \log w_{i,t}$ — what an unnormalised sequence ratio would have to clip.

# %%
fig, text = ratio_view(trace, longest, updates)
display(fig)
print(text)

# %% [markdown]
# *Figure 1.* Histograms of the log importance ratios of the longest probe batch (L = 20 by default) after k = `updates`
# (3 by default) GRPO updates taken on a `moe-sort` (4 layers, 16 experts, top-2, ~2 M weights) batch of L = 12: left
# every token's $\log w_{i,t}$ (counts on a symlog scale), middle GSPO's $\log s_i$ (one per response), right the summed
# $\sum_t \log w_{i,t}$; each panel's title gives its std and largest |·|. What to see: the x-axes — GSPO's $\log s_i$
# stays in a far narrower range than the token log-ratios and their sum.

# %% [markdown]
# Drag the sliders: response length (probe $L$) and the update index $k$. The plain call above is this panel's
# twin — the same function the slider calls.

# %%
panel = RatioPanel(trace)
panel.widget

# %% [markdown]
# *Figure 2.* Figure 1 as a control: sliders for the probe length L (the values of `probe_lengths`) and the update index
# k (1 to `updates`); the readout under the plot gives the three stds. What to see: at the defaults it draws Figure 1;
# compare how the summed log-ratio (right) widens from a short probe to a long one with how GSPO's $\log s_i$ (middle)
# does.

# %% [markdown]
# ## 2. Variance against response length
# Truncating the same responses to their first $n$ tokens: $\mathrm{Var}[\sum_{t\le n}\log w]$ accumulates token
# noise as $n$ grows, while GSPO's length-normalised mean does not. The two are tied by $n^2$ by definition; the
# content is that the summed variance grows roughly *linearly* (token noise adds up), so the normalised one falls
# like $1/n$. Early tokens of a sort are near-deterministic, so raw variances also carry a position effect:
# `var_*_per_token_var` divides by the pooled per-token variance to remove it.

# %%
fig, text = variance_view(trace, longest, updates)
display(fig)
print(text)
prefix = prefix_ratio_variance(trace.probes[longest], updates)
growth = variance_growth(trace.probes[longest], updates, n_from=4)
print(growth)
prefix.round(5)

# %% [markdown]
# *Figure 3.* The variance across responses of the summed log-ratio $\sum_{t\le n}\log w$ (grey) and of GSPO's
# length-normalised mean $\frac{1}{n}\sum_{t\le n}\log w$ (blue), the longest probe's responses (L = 20 by default) cut
# to their first n tokens, after k = `updates` updates (log scale). What to see: the grey curve keeps rising with n
# while the blue one does not — token noise adds up in the sum and averages out in the mean (`sum_growth` above takes
# out the position effect of the near-deterministic first tokens).

# %% [markdown]
# Across the probe batches (different problem sizes, same updated policy):

# %%
table = ratio_variance(trace)
table.round(5)

# %% [markdown]
# ## 3. Token clipping does not bound the sequence ratio
# GRPO clips each $w_{i,t}$ to $[1-\varepsilon_{low}, 1+\varepsilon_{high}]$ separately. Among responses whose every
# token ratio is *inside* that band, how many have a product $\prod_t w_{i,t}$ outside it?

# %%
bound = token_clip_vs_sequence_ratio(trace.probes[longest], updates, GRPO_CLIP.low, GRPO_CLIP.high)
bound

# %% [markdown]
# ## What to take away

# %% jupyter={"source_hidden": true}
claims = [
    claim("sum_grows", f"Var[Σ log w] per token variance grows from n=4 to n={growth['n_to']} (×)",
          growth["sum_growth"], ">=", 3.0),
    claim("token_clip_unbounded", "responses with all tokens inside GRPO's band but the sequence ratio outside",
          bound["frac_sequence_outside"], ">", 0.0),
]
takeaway([
    f"A token ratio is built from one sample of the next-token distribution, so its noise is per token. Summed over "
    f"a response it accumulates: the variance of Σ log w grows {fmt(growth['sum_growth'])}× from 4 to "
    f"{growth['n_to']} tokens.",
    f"GSPO's log s_i is a mean, not a sum: over the same lengths its variance changes by {fmt(growth['mean_growth'])}×, "
    "so one clip range serves every length.",
    f"Clipping tokens one by one does not bound the response: {fmt(bound['frac_sequence_outside'])} of the responses "
    "whose every token ratio lies inside GRPO's band have a sequence ratio outside it.",
], why="GSPO bounds the unit the reward scores — the whole response — with a ratio whose noise does not grow with "
       "length; GRPO's per-token clips leave that response's ratio free to drift.", claims=claims)

# %% [markdown]
# ## Record results

# %% jupyter={"source_hidden": true}
numbers = {
    "sum_growth": growth["sum_growth"],
    "mean_growth": growth["mean_growth"],  # = sum_growth · (4/n)²: arithmetic of the claim above, not a finding
    "expert_change": trace.probes[longest].expert_change,
    "token_clip_bound": bound,
}
results = record_results(results_path, "01_ratio_variance", claims, numbers, parameters=dict(
    checkpoint=checkpoint, updates=updates, prompts=prompts, probe_lengths=probe_lengths, update_objective=update_objective))
