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
# # 02 · Gradient analysis: how each objective weights each token
#
# **Question.** Off-policy, GRPO multiplies the gradient of every token by its own ratio $w_{i,t}$; GSPO multiplies
# all tokens of a response by one $s_i$. What does that do to the per-token weights, to the noise of a minibatch
# gradient, and when does GSPO-token differ from GSPO?
#
# **Paper.** GSPO §4.2, Eq. 10 (GSPO) vs Eqs. 11-12 (GRPO), and §4.3 (GSPO-token, Eqs. 13-14). The coefficients
# below are $-\partial\,\mathrm{loss}/\partial \log\pi_\theta(y_{i,t})$ computed by autograd on the objectives
# themselves, divided by $\hat A_i/|y_i|$: what remains is $w_{i,t}$ for GRPO and $s_i$ for GSPO (0 where clipped).

# %% tags=["parameters"]
checkpoint = "moe-sort"
train_length = 12
probe_lengths = [8, 16]
prompts = 16
group_size = 8
updates = 3
update_objective = "grpo"
lr = 3e-5
draws = 8  # random minibatches per gradient-variance estimate (the bootstrap resamples these)
minibatch = 32
seed = 0
kl_beta = 0.04  # section 4: β of the KL term (the GRPO paper's; TRL 1.16 defaults to 0, DeepSeek-R1 used 0.001)
kl_rollouts = 5  # section 4: RL steps at β > 0 before the measured batch (so π_θ has left π_ref)
results_path = None

# %% [markdown]
# ## Setup: one rollout batch, K updates, scored after each

# %%
from IPython.display import display

from gspo_lab.analysis import offpolicy_trace
from gspo_lab.config import TrainConfig
from gspo_lab.gradients import (
                  UNCLIPPED,
                  gspo_token_identity,
                  per_token_advantages,
                  staleness_noise,
                  token_grad_weights,
                  weight_profile,
)
from gspo_lab.nb.results import claim, fmt, record_results, takeaway
from gspo_lab.plots import plot_gradient_variance
from gspo_lab.tasks import get_task
from gspo_lab.widgets import TracePanel, grad_view

cfg = TrainConfig(checkpoint=checkpoint, length=train_length, prompts_per_rollout=prompts, group_size=group_size,
                  objective=update_objective, lr=lr, seed=seed)
trace = offpolicy_trace(cfg, updates, probe_lengths=tuple(probe_lengths))
longest = max(probe_lengths)

# %% [markdown]
# ## 1. Per-token gradient weights (Eq. 10 vs Eqs. 11-12)
# Each row is a response, each column a token. GRPO's colour changes along a row ($w_{i,t}$); GSPO's is one colour
# per row ($s_i$), or 0 when the whole response is clipped.

# %%
fig, text = grad_view(trace, longest, updates)
display(fig)
print(text)

# %% [markdown]
# *Figure 1.* Per-token gradient weights of the longest probe batch (L = 16 by default) after k = `updates` (3 by
# default) GRPO updates taken on a `moe-sort` (4 layers, 16 experts, top-2, ~2 M weights) batch of L = 12: one row per
# response, one column per token, the colour the weight divided by $\hat A_i/|y_i|$ — $w_{i,t}$ for GRPO (left), $s_i$
# for GSPO (right), each with its paper ε; 0 (dark blue) is clipped, grey is padding or $\hat A_i = 0$. What to see:
# GRPO's colour changes along a row, GSPO's rows are one colour each (0 for a whole clipped response).

# %%
panel = TracePanel(trace, view=grad_view, name="grad")
panel.widget

# %% [markdown]
# *Figure 2.* Figure 1 as a control: sliders for the probe length L (the values of `probe_lengths`) and the update index
# k (1 to `updates`); the readout gives each objective's mean within-response std of the weights. What to see: at the
# defaults it draws Figure 1; at any L and k GSPO's within-response std stays 0 while GRPO's does not.

# %% [markdown]
# Clipping shapes the weights by the sign of $\hat A$: for $\hat A>0$ a token ratio above $1+\varepsilon_{high}$ gets
# weight 0, for $\hat A<0$ one below $1-\varepsilon_{low}$. GRPO's surviving weights stay unequal within a response.

# %%
probe = trace.probes[longest]
args = (probe.logp[updates], probe.logp[0], probe.adv, probe.mask)
profiles = {name: weight_profile(token_grad_weights(name, *args), probe.adv, probe.mask) for name in ("grpo", "gspo")}
display(profiles["grpo"].round(4), profiles["gspo"].round(4))

# %% [markdown]
# ## 2. The minibatch gradient's noise vs staleness
# Random minibatches of one rollout batch, the same rows for both objectives and every $k$, clipping off
# (Eqs. 10-12 as written): relative variance $E\|g-\bar g\|^2/\|\bar g\|^2$ (noise over signal) at $\theta_k$.
# At $k=0$ the two gradients are identical; the right panel is GRPO's over GSPO's, with a 5-95 % bootstrap interval
# over the minibatch draws. Above 1: GRPO's per-token weights $w_{i,t}$ made its gradient noisier as data went stale.

# %%
variance = staleness_noise(trace, range(updates + 1), draws=draws, minibatch=minibatch, **UNCLIPPED)
display(plot_gradient_variance(variance, title=f"training batch L = {train_length}, {draws} minibatch draws"))
variance.round(4)

# %% [markdown]
# *Figure 3.* The relative variance $E\|g-\bar g\|^2/\|\bar g\|^2$ of a random minibatch's gradient (`draws` minibatches
# of `minibatch` rows of the L = 12 training batch, clipping off) against the update index k: left GRPO (red) and GSPO
# (blue), right their ratio GRPO ÷ GSPO with its 5-95 % bootstrap interval over the draws (dashed: 1). What to see: at
# k = 0 the two coincide (ratio 1); whether the ratio's interval clears 1 at k ≥ 1 — on one rollout batch it often does
# not, which is why finding 6 reads 5 seeds and three lengths.

# %% [markdown]
# ## 3. GSPO-token ≡ GSPO — until advantages differ per token
# Parameter gradients at $\theta_K$ on one minibatch: with one $\hat A_i$ per response they coincide (§4.3); with
# per-token advantages (an illustrative token-credit signal, not from the paper) GSPO-token differs.

# %%
identity = gspo_token_identity(trace, updates, per_token_advantages(trace.train, get_task("sort")), **UNCLIPPED)
identity

# %% [markdown]
# ## 4. TRL's KL weight: the gradient a ratio of 1 still adds
# With β > 0 the loss carries a KL term to a reference policy π_ref (the cold start here), estimated per token by
# k3 = π_ref/π_θ − log(π_ref/π_θ) − 1 (the GRPO paper's Eq. 4). TRL (since 1.10, `use_bias_correction_kl=True` by
# default) multiplies each token's k3 by the importance ratio w to π_old, keeping w's gradient: the token's w for GRPO,
# the response's sequence ratio, broadcast, for GSPO (`importance_sampling_level="sequence"`). On the first update of a
# batch w = 1, so the loss's value is unchanged, but its gradient gains β·k3·∇log w, a term the GSPO paper's objective
# does not have. Here: `kl_rollouts` RL steps of GRPO at β = `kl_beta` from the cold start, then one fresh batch; on
# its first minibatch (π_θ = π_old), the KL term's gradient w.r.t. each token's log-prob without the weight and the
# part the weight adds (`gspo_lab.penalties.kl_weight_gradient`; tests/test_kl_trl.py checks both against TRL 1.16's
# own loss). The policy gradient of GRPO on the same tokens is the scale.

# %%
from dataclasses import replace

import pandas as pd

from gspo_lab.gradients import kl_weight_report
from gspo_lab.plots import plot_kl_weight

kl = kl_weight_report(replace(cfg, beta=kl_beta), kl_rollouts)
kl_table = kl["table"]
display(plot_kl_weight(kl["parts"], kl["mask"], title=f"{checkpoint}, after {kl_rollouts} RL steps at β = {kl_beta}: "
                                                      "the KL term's gradient per token, and what TRL's weight adds"))
display(pd.DataFrame(kl_table).set_index("objective (weight)"))
print(f"mean k3 per token on this minibatch: {kl['mean_k3']:.4g}")

# %% [markdown]
# *Figure 4.* One minibatch of a fresh rollout batch after `kl_rollouts` GRPO steps at β = `kl_beta`, on its first
# update (π_θ = π_old): per valid token, the magnitude of the unweighted k3 term's gradient w.r.t. the token's
# log-prob (x) against the magnitude of what TRL's ratio weight adds to it (y), for the token ratio (GRPO) and the
# sequence ratio (GSPO), log-log, with the line y = x. What to see: at the token level the addition is k3 itself, of
# second order (its points lie on a line of slope 2), so it matters on the tokens that have moved far from π_ref; at
# the sequence level every token of a response gets the response's mean k3, so tokens whose own KL gradient is near 0
# gain one (the horizontal rows, one per response). The table gives the norms, and the last column their size against
# GRPO's policy gradient at this β. The claim below checks the on-policy identity the paragraph above states.

# %% [markdown]
# ## What to take away

# %% jupyter={"source_hidden": true}
stale = variance.loc[updates]
grpo_spread = profiles["grpo"]["within_response_std"].mean()
claims = [
    claim("gspo_token_identity", "max |∇ GSPO-token − ∇ GSPO| (sequence Â)", identity["max_abs_diff_sequence_adv"], "<=", 1e-6),
    claim("grpo_unequal_weights", "GRPO within-response std of token weights", grpo_spread, ">", 1e-4),
]
claims.append(claim("kl_weight_adds_k3", "TRL's KL weight on-policy: max |added gradient − k3 / (|y| B)| (token) and "
                    "− mean k3 / (|y| B) (sequence), relative", kl["identity"], "<=", 1e-4))
takeaway([
    f"Off-policy, GRPO weights each token of a response by its own $w_{{i,t}}$: the weights within one response spread "
    f"by {fmt(grpo_spread)} (std), where GSPO's are equal by construction "
    f"({fmt(profiles['gspo']['within_response_std'].max())}).",
    f"At update k = {updates} GRPO's minibatch gradient is {fmt(stale['noise_ratio'])}× as noisy as GSPO's relative "
    f"to its mean (5-95 % over draws: {fmt(stale['noise_ratio_lo'])}-{fmt(stale['noise_ratio_hi'])}). On one "
    "rollout batch this interval often includes 1; over 5 seeds and three lengths it is finding 6.",
    f"TRL's default KL weight (use_bias_correction_kl) adds {fmt(kl_table[0]['added ÷ k3 term'])}× the k3 term's "
    f"gradient norm at the token level and {fmt(kl_table[1]['added ÷ k3 term'])}× at GSPO's sequence level, on "
    f"the first update of a batch where every ratio is 1; at β = {kl_beta} that is "
    f"{fmt(kl_table[0]['β · added ÷ ‖∇ policy loss‖'])} and {fmt(kl_table[1]['β · added ÷ ‖∇ policy loss‖'])} of "
    "GRPO's policy gradient norm here.",
    f"GSPO-token equals GSPO with one advantage per response (gradients within "
    f"{fmt(identity['max_abs_diff_sequence_adv'])}) and differs with per-token advantages "
    f"({fmt(identity['max_abs_diff_token_adv'])}).",
], why="GRPO's gradient multiplies each token's score by a ratio drawn from one sample, so stale data can make its "
       "update noisier token by token (finding 6 says where the toy shows it); GSPO scales a whole response by one "
       "ratio and adds no per-token noise.",
   claims=claims)

# %% [markdown]
# ## Record results

# %% jupyter={"source_hidden": true}
# Recorded with its spread, not asserted: over 5 rollout batches (seeds) the ratio's 5 % bootstrap bound is above 1
# for some and below for others; only the across-seed picture shows it (README, notebook 02).
numbers = {
    "staleness_noise": {"k": updates, **stale.to_dict()},
    "rel_variance": variance[["rel_variance_grpo", "rel_variance_gspo"]].to_dict(),
    "identity": identity,
    "kl_weight": kl_table,
    "grpo_spread": grpo_spread,
    "gspo_spread": profiles["gspo"]["within_response_std"].max(),
}
results = record_results(results_path, "02_gradients", claims, numbers, parameters=dict(checkpoint=checkpoint, updates=updates))
