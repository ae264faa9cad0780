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
# # 03 · Clipping fractions: GSPO clips far more tokens than GRPO
#
# **Question.** With the paper's clip ranges, what fraction of tokens does each objective clip, in which unit, and
# how does that move with $\varepsilon$?
#
# **Paper.** GSPO §5.2 and Fig. 2 (fractions of clipped tokens ≈ 0.15 for GSPO vs ≈ 0.0013 for GRPO, read off the
# chart), §5.1 (ε: GSPO 3e-4 / 4e-4, GRPO 0.2 / 0.27; 4 minibatches per rollout batch).

# %% tags=["parameters"]
checkpoint = "moe-sort"
length = 12
prompts = 16
group_size = 8
minibatches = 4
rollouts = 6  # RL steps per objective (each: 1 rollout batch + 4 optimizer steps)
lr = 3e-5
seed = 0
stored_lr = 3e-5  # section 4 reads the stored 5-seed sweep at this arm: lr 3e-5 or 1e-4
stored_minibatches = 4  # ... and M: 2, 4 or 8
results_path = None

# %% [markdown]
# ## Setup: short live runs of both objectives from the same checkpoint
# Same seed, same prompts stream, each objective with its own paper clip range. Every update's log-ratios are kept
# for the what-if sliders below.

# %%
from IPython.display import display

from gspo_lab.clipping import clip_runs, clip_summary
from gspo_lab.config import TrainConfig
from gspo_lab.nb.results import claim, fmt, record_results, takeaway
from gspo_lab.plots import plot_clip_runs
from gspo_lab.widgets import ClipPanel, clip_view

cfg = TrainConfig(checkpoint=checkpoint, length=length, prompts_per_rollout=prompts, group_size=group_size,
                  minibatches=minibatches, rollouts=rollouts, lr=lr, seed=seed)
runs = clip_runs(cfg, ("grpo", "gspo"))

# %% [markdown]
# ## 1. Clipped-token fraction and reward, side by side
# Update $k=0$ of each rollout is on-policy (nothing clipped); $k=1..3$ are off-policy.

# %%
display(plot_clip_runs({name: run.history for name, run in runs.items()}, title="paper ε for each objective"))
summary = clip_summary(runs)
print(f"this run: GSPO clips {summary.loc['gspo', 'clip/token_frac'] / summary.loc['grpo', 'clip/token_frac']:.0f}× "
      "the tokens GRPO clips (the paper, read off Fig. 2: ≈ 100×; the stored 5-seed sweep: section 4)")
summary

# %% [markdown]
# *Figure 1.* Short live runs of GRPO (red) and GSPO (blue) from the same `moe-sort` cold start (4 layers, 16 experts,
# top-2, ~2 M weights), each with its paper ε, `rollouts` RL steps (6 by default) of 4 updates each: left the
# clipped-token fraction per rollout (the mean of its off-policy updates k ≥ 1; log scale), middle the mean reward per
# rollout, right both clip units over the run (tokens, responses; log scale). What to see: the gap between the two
# clipped-token lines — the run's GSPO ÷ GRPO factor is printed above (the claim: at least 10×); counted by responses
# (right) the gap is smaller.

# %% [markdown]
# ## 2. Two units, two library conventions
# `clip/token_frac` counts tokens, a clipped GSPO response counting all its tokens (the paper's Fig. 2, verl's
# `pg_clipfrac`). `clip/seq_frac` counts responses (TRL's sequence-level `clip_ratio/*`; for GRPO a response counts
# if any token is clipped). Comparing a number from one library with the other's compares different units.

# %%
for name, row in summary.iterrows():
    print(f"{name}: tokens {row['clip/token_frac']:.4f} | sequences {row['clip/seq_frac']:.4f} | "
          f"outside the band (any Â) {row['clip/token_frac_outside']:.4f}")

# %% [markdown]
# ## 3. What if ε were different? (a what-if on the statistic, not a re-run)
# Each slider pair recomputes *that objective's* clip fraction on the stored ratios of the run above; each objective
# has its own range around its own paper default. The plain calls are the sliders' twins.

# %%
fig, text = clip_view(runs["gspo"], "gspo", 3e-4, 4e-4)
display(fig)
print(text)
fig, text = clip_view(runs["grpo"], "grpo", 0.2, 0.27)
display(fig)
print(text)

# %% [markdown]
# *Figures 2 and 3.* What-if clip fractions on the stored ratios of Figure 1's runs at each objective's paper ε — GSPO
# at (3e-4, 4e-4) in Figure 2, GRPO at (0.2, 0.27) in Figure 3: left per optimizer step of the stored run, tokens
# (solid) and responses (dashed); right the fraction over the updates k ≥ 1 with the band scaled ×0.1 to ×10 (log
# scale), the dotted line at the paper's ε_low. What to see: every on-policy update (k = 0) clips nothing, the drops to
# 0 on the left; on the right, GRPO's clipped-token fraction stays low over its whole range while GSPO's stays far
# higher over its own.

# %% [markdown]
# The button under each panel launches a short *live* run at the chosen ε (a real re-run, with a progress bar);
# the panel then shows that run's stored ratios.

# %%
gspo_panel = ClipPanel(runs, "gspo")
gspo_panel.widget

# %% [markdown]
# *Figure 4.* Figure 2 as a control: log sliders for GSPO's ε_low and ε_high on its own scale (about 1e-5 to 1e-2,
# starting at the paper's 3e-4 and 4e-4) and a button that re-trains GSPO at the chosen ε. What to see: at the defaults
# it draws Figure 2; after a live run the fractions are that run's, trained with the chosen band, not a what-if.

# %%
grpo_panel = ClipPanel(runs, "grpo")
grpo_panel.widget

# %% [markdown]
# *Figure 5.* Figure 3 as a control: log sliders for GRPO's ε_low and ε_high on its own scale (about 1e-3 to 0.5,
# starting at the paper's 0.2 and 0.27) and a button that re-trains GRPO at the chosen ε. What to see: at the defaults
# it draws Figure 3; after a live run the fractions are that run's, trained with the chosen band, not a what-if.

# %% [markdown]
# ## 4. The same question over 5 seeds and 30 rollouts (stored results, no training)
# The sweep behind finding 1 of `docs/findings.md` (`data/specs/f1_clip_fractions.toml`: the small `sweep` MoE from
# its cold start, grad-norm clip 1.0, 5 confirmation seeds per objective) is stored in `data/results/`; this reads it
# in seconds. Set `stored_lr` (3e-5 or 1e-4) and `stored_minibatches` (2, 4 or 8) in the parameters cell to see
# another arm. Thin lines are seeds, bold their mean.

# %%
from gspo_lab.experiments import stored_curves
from gspo_lab.experiments.stats import per_seed_ratio
from gspo_lab.plots import plot_seed_curves

stored = stored_curves("f1_clip_fractions", "clip/token_frac:mean", lr=stored_lr, minibatches=stored_minibatches)
display(plot_seed_curves(stored, ylabel="clipped-token fraction\n(mean over the rollout's updates)", log=True,
                         title=f"stored sweep: lr {stored_lr:g}, M = {stored_minibatches}"))
stored_ratio = per_seed_ratio(stored, "gspo", "grpo")
print("GSPO / GRPO clipped tokens per seed:", ", ".join(f"{r:.0f}×" for r in stored_ratio))

# %% [markdown]
# *Figure 6.* Finding 1's stored sweep (`f1_clip_fractions`: the 8-expert `sweep` MoE, 4 layers, top-2, ~0.25 M weights,
# L = 12, grad-norm clip 1.0, 30 rollout batches, 5 seeds) at lr `stored_lr` and M = `stored_minibatches` (3e-5 and 4 by
# default): the clipped-token fraction per rollout batch (the mean over its updates; log scale), GRPO (red) and GSPO
# (blue); thin lines are seeds, bold their mean. What to see: at the default arm GSPO's band clips far more tokens than
# GRPO's from the first batch to the last, on every seed — the factors per seed are printed above.

# %% [markdown]
# ## 5. Trust regions as weight profiles: what a "clip" is for GSPO's successors
# Every objective's gradient is a sum over tokens of (a weight) × Â × ∇ log π_θ(token). The *trust region* is how that
# weight moves as the token's ratio w = π_θ / π_old drifts from 1. Below, for a response of one token (where token
# and sequence ratios coincide), the weight per unit Â against log w, by autograd on each objective in the library:
# GRPO's hard clip drops it to 0 past the band for the sign of Â (and leaves it unbounded for Â < 0 — dual-clip
# floors that at c = 3); **CISPO** never zeroes a token, it caps a detached weight at ε_max; **SAPO** replaces the
# clip by a smooth gate σ(τ(w − 1)) whose gradient weight rises and falls on both sides; **VESPO** weights the whole
# response by a Gamma-shaped φ of its product ratio; **GMPO** clips each token's log-ratio to ±0.4 inside a geometric
# mean. So a "clip fraction" means different things: for GRPO and GMPO the tokens whose gradient is zeroed; for CISPO
# the tokens whose weight hit the cap (they still push, at weight ε_max — TRL logs only those with Â > 0); for SAPO
# and VESPO nothing is ever clipped — the kit reports their clip fractions as 0 and their mean weight
# (`weight/token_mean`) instead. The plain call is the sliders' twin. Notebook 06 (`06_successors`) puts the same
# objectives on one model's real rollouts, as points of one design space (how token ratios are combined × what
# bounds them) that its sliders move through.

# %%
from gspo_lab.gradients import trust_region_weights
from gspo_lab.widgets import TrustRegionPanel, trust_region_view

fig, text = trust_region_view(0.2, 5.0, 1.0)
display(fig)
print(text)
profiles = trust_region_weights([-2.0, 0.0, 1.0, 2.0])

# %% [markdown]
# *Figure 7.* Each objective's gradient weight per unit Â for a one-token response against its log-ratio log w, by
# autograd on the library's objectives: left Â > 0, right Â < 0; GRPO (ε = 0.2) and GRPO + dual-clip (c = 3), CISPO
# (ε_max = 5), SAPO (τ = 1), VESPO and GMPO at their defaults. What to see: GRPO's and GMPO's weights fall to exactly 0
# past their bands (for Â < 0 GRPO's also grows without bound on the other side; dual-clip cuts it to 0 past w = 3),
# while CISPO's, SAPO's and VESPO's bend but never reach 0 — the claim below: their smallest weight on log w ∈ [−2, 2]
# is above 0.

# %%
trust_panel = TrustRegionPanel()
trust_panel.widget

# %% [markdown]
# *Figure 8.* Figure 7 as a control: sliders for GRPO's ε (0.05 to 0.8), CISPO's cap ε_max (1.5 to 10) and SAPO's
# temperature τ (about 0.25 to 4). What to see: at the defaults it draws Figure 7; each slider moves only its own
# objective's curve — where GRPO's weight drops to 0, where CISPO's flattens, how wide SAPO's bump is.

# %% [markdown]
# ## What to take away

# %% jupyter={"source_hidden": true}
gspo_tok, grpo_tok = summary.loc["gspo", "clip/token_frac"], summary.loc["grpo", "clip/token_frac"]
ratio = gspo_tok / grpo_tok if grpo_tok > 0 else float("nan")  # NaN never passes: GRPO must clip on its own
rewards = {name: run.history["reward/mean"].mean() for name, run in runs.items()}
soft = profiles[profiles["objective"].isin(["cispo", "sapo", "vespo"])]
grpo_zero = bool((profiles.query("objective == 'grpo' and advantage == 'Â > 0' and log_ratio == 2.0")["weight"] == 0).all())
soft_min = float(soft["weight"].min()) if grpo_zero else float("nan")  # NaN never passes: GRPO's clip must zero
claims = [
    claim("grpo_clips", "GRPO clipped-token fraction (updates k ≥ 1)", grpo_tok, ">", 0.0),
    claim("gspo_clips_10x", f"GSPO / GRPO clipped-token fraction after M = {minibatches} updates", ratio, ">=", 10.0),
    claim("grpo_rarely_clips", "GRPO clipped-token fraction (updates k ≥ 1)", grpo_tok, "<=", 0.05),
    claim("soft_weights_never_zero", "smallest weight of CISPO, SAPO, VESPO on log w ∈ [−2, 2] (GRPO: 0 past its band)",
          soft_min, ">", 0.0),
]
seq_ratio = summary.loc["gspo", "clip/seq_frac"] / max(summary.loc["grpo", "clip/seq_frac"], 1e-12)
takeaway([
    f"With the paper's ranges GSPO clips {fmt(gspo_tok)} of tokens on the off-policy updates, GRPO {fmt(grpo_tok)}: "
    f"{fmt(ratio)}× (stored sweep, per seed: {', '.join(fmt(r) + '×' for r in stored_ratio)}).",
    f"Counted by responses the factor is {fmt(seq_ratio)}×: a clipped GSPO response counts all its tokens. Check the "
    "unit before comparing clip fractions across libraries (TRL counts responses at sequence level, verl tokens).",
    f"GRPO's wide token band almost never binds ({fmt(grpo_tok)}), yet it does not stop a response's sequence ratio "
    "from drifting (notebook 01).",
    f"GSPO's successors bend instead of clipping: the smallest weight CISPO, SAPO and VESPO give a token on "
    f"log w ∈ [−2, 2] is {fmt(soft_min)}, never 0. For them a \"clip fraction\" is not comparable with GRPO's.",
], why="GSPO's narrow band removes whole responses that moved off-policy, and only those; GRPO's band leaves almost "
       "every token in play, including the rare far-off ones whose unbounded weight (Â < 0) drives its largest "
       "updates (notebook 04).", claims=claims)

# %% [markdown]
# ## Record results

# %% jupyter={"source_hidden": true}
numbers = {"gspo_clip_token_frac": gspo_tok, "grpo_clip_token_frac": grpo_tok, "ratio": ratio, "mean_reward": rewards,
           "gspo_clip_seq_frac": summary.loc["gspo", "clip/seq_frac"],
           "grpo_clip_seq_frac": summary.loc["grpo", "clip/seq_frac"],
           "stored_sweep_ratio_per_seed": [float(r) for r in stored_ratio], "soft_weight_min": soft_min}
results = record_results(results_path, "03_clipping", claims, numbers, parameters=dict(checkpoint=checkpoint, rollouts=rollouts))
