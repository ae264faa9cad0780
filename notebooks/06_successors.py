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
# # 06 · After GSPO: the successors as one design space
#
# **Question.** The objectives after GSPO — CISPO (in TRL's, verl's and MiniMax-M1's forms), SAPO, GMPO, VESPO,
# LUSPO — differ mainly in two choices: how a response's token ratios are *combined* into the ratio each token's
# gradient reads, and what *bounds* that ratio. On one model's real rollouts, what does each choice do to the tokens
# that drifted off-policy, and when, in stored training runs, does each one die?
#
# **Paper.** GSPO §4 (Eqs. 5-7: the sequence ratio and its clip; Eqs. 10-12: the gradient weights) and the
# successors' own papers, cited in `gspo_lab/objectives/`. Finding 11 of `docs/findings.md` holds the stored runs'
# verdicts quoted in section 3. Notebook 03's section 5 draws the same weights for a response of one token.
#
# **Terms.** A token's *ratio* w = π_θ / π_old (Eq. 3). Its *gradient weight* is what multiplies Â ∇ log π_θ of that
# token in the update, divided by its value on-policy, so 1 means "as on-policy" and 0 means "no gradient". *GRPO's
# band* is [0.8, 1.27] on w, the token-level trust region the paper's GRPO baseline uses.

# %% tags=["parameters"]
checkpoint = "moe-sort"
length = 12
prompts = 16
group_size = 8
updates = 3  # off-policy updates taken on the batch before it is read (the weights read π_θ after the last)
update_objective = "grpo"
lr = 3e-5
draws = 8  # random minibatches per gradient-variance estimate
minibatch = 32
seed = 0
preset = "GSPO"  # where the controls open (a key of gspo_lab.design.PRESETS)
results_path = None

# %% [markdown]
# ## Setup: one rollout batch, K updates
# The batch is sampled once from the `moe-sort` cold start and `updates` GRPO updates are taken on it (notebook 01's
# trace); every objective below reads the same ratios, so the differences are the objectives', not the data's.

# %%
import pandas as pd
from IPython.display import display

from gspo_lab.analysis import offpolicy_trace
from gspo_lab.config import TrainConfig
from gspo_lab.design import PRESETS, preset_gap
from gspo_lab.nb.results import claim, fmt, record_results, takeaway
from gspo_lab.widgets import DesignPanel, controls_of, design_batch, design_view

cfg = TrainConfig(checkpoint=checkpoint, length=length, prompts_per_rollout=prompts, group_size=group_size,
                  objective=update_objective, lr=lr, seed=seed)
trace = offpolicy_trace(cfg, updates)
batch = design_batch(trace, draws=draws, minibatch=minibatch, seed=seed)

# %% [markdown]
# ## 1. The design space, live
# Two axes and a third control (`gspo_lab/design.py` says each in one line with its source):
#
# - **combine**: *token* (each token its own w: GRPO, CISPO, SAPO), *prefix* (the running product of the ratios up to
#   the token, as some later papers do), *geometric* (the response's geometric mean s, GSPO's Eq. 7: one ratio per
#   response), *product* (the response's full ratio W: VESPO);
# - **bound**: *clip* (PPO's hard clip: past the band for the sign of Â the gradient is 0), *clip first* (each token's
#   log-ratio clipped before the combination: GMPO), *mask* (a detached weight, zeroed where the clip would bind:
#   MiniMax-M1's mask on CISPO), *cap* (a detached weight clamped, never zeroed: CISPO), *gate* (SAPO's smooth
#   sigmoid gate), *gamma* (VESPO's Gamma-shaped weight), *none*;
# - the bound's ε, τ, cap or shape on the third slider; the **aggregation** (LUSPO counts each response |y| times:
#   `seq_mean_token_sum`) and **dual-clip's floor** c = 3 as their own controls.
#
# Every preset is a point of this space, and at that point the loss, every token's gradient and the clip statistics
# equal the library objective's (checked on this batch below, and in `tests/test_design.py`). The call is the
# controls' twin.

# %%
fig, text = design_view(batch, *controls_of(preset))
display(fig)
print(text)

# %% [markdown]
# *Figure 1.* Left: every token of the batch with Â ≠ 0 (blue Â > 0, red Â < 0) after `updates` (3 by default) GRPO
# updates on a `moe-sort` batch (4 layers, 16 experts, top-2, ~2 M weights; L = 12, 16 prompts × 8 responses), its
# gradient weight (1 = as on-policy) against its log-ratio log w, at the point of the preset `preset` (GSPO by
# default); dashed lines mark GRPO's band. Right: for every preset, the share of tokens outside GRPO's band that keep a
# gradient (green dot) and the share of tokens clipped (grey cross), the current point on the top row. What to see:
# at GSPO's point every token of a response shares one weight, so a response's tokens fall on one horizontal line or
# all on 0; on the right, which presets keep a gradient on the tokens outside GRPO's band (the claims below check
# CISPO's, SAPO's and GRPO's shares).

# %% [markdown]
# Every preset on this batch: the readouts above and the minibatch gradient's relative variance E‖g − ḡ‖² / ‖ḡ‖² over
# `draws` random minibatches of `minibatch` responses (notebook 02's measure), with each preset's largest difference
# from its library objective (loss, token gradients, clip statistics).

# %%
gap = preset_gap(batch.logp, batch.old_logp, batch.adv, batch.mask)
rows = []
for name, r in batch.presets().items():
    d = PRESETS[name].design
    rows.append({"preset": name, "combine": d.combine, "bound": d.bound, "aggregation": d.aggregation,
                 "outside GRPO's band": r["outside"], "of those keep a gradient": r["kept"],
                 "clipped tokens": r["clip_token_frac"], "clipped responses": r["clip_seq_frac"],
                 "gradient rel. variance": batch.variance(d), "max |Δ| vs library": gap[name]})
presets = pd.DataFrame(rows).set_index("preset")
presets.round(4)

# %%
panel = DesignPanel(batch, preset)
panel.widget

# %% [markdown]
# *Figure 2.* Figure 1 as a control: a preset menu that sets every control, selection sliders for the combination,
# the bound and the bound's parameter, a menu for the aggregation and a dual-clip toggle. What to see: drag
# *combine* from token to geometric with the bound on clip — the dots collapse onto one line per response and the
# clipped share jumps from tokens to whole responses; drag *bound* from clip to cap — the zeros leave.

# %% [markdown]
# ## 2. When each one dies (stored runs, no training)
# Finding 11 trained each successor beside GRPO and GSPO from the same cold starts, in (a) finding 2's collapsing
# regime (no grad-norm cap, M = 16, lr 5e-5) and (b) a cap of 1 with M = 8 and lr 1e-4, on the MoE and its dense twin,
# 5 seeds per arm, and (b) again on 5 fresh MoE seeds. A run *collapsed* when its last two held-out evaluations both
# fell below half the cold start's accuracy; *frozen* when its policy stopped moving (endpoint v2, `docs/methods.md`).

# %%
from gspo_lab.experiments.store import cached
from gspo_record.f11.dies import collapsed_share, death_table, plot_deaths

with cached():
    deaths = death_table()
display(plot_deaths(deaths))

# %% [markdown]
# *Figure 3.* Collapsed runs out of each arm's runs (colour: the collapsed share; "f": runs that froze) per regime,
# on `moe-sort` (left) and its dense twin `dense-sort` (right); "—": not run. What to see: which rows stay dark in
# regime (b), where a cap of 1 keeps GRPO's and GSPO's runs alive, and whether those rows are the objectives whose
# bound never zeroes a token's gradient (CISPO's cap, SAPO's gate) or those that keep a hard clip (LUSPO, GMPO).

# %% [markdown]
# The dose ladder: CISPO and SAPO (with GRPO and GSPO) at learning rates from 1e-5 to 7e-5 and with warm-ups, 5 seeds
# each; each run's late held-out accuracy against how far its first rollout batch moved the policy (rollout-0 KL k3).

# %%
from gspo_record.f11.arms_page import section as arms_section
from gspo_record.f11.ladder_page import section as ladder_section

with cached():
    ladder, ladder_figures = ladder_section()
    arms, _ = arms_section()
import matplotlib.pyplot as plt

ladder_data, plot_ladder = ladder_figures["f11e_ladder"]
ladder_figure = plot_ladder(ladder_data)  # the findings page's figure: a pyplot one, closed once shown (not twice)
display(ladder_figure)
plt.close(ladder_figure)

# %% [markdown]
# *Figure 4.* Finding 11e's ladder: one point per run, late held-out accuracy (rollouts ≥ 40 of 80) against the
# rollout-0 KL k3 on a log axis, per arm, a cross where the run collapsed. What to see: where along the drift axis
# each arm's crosses begin, and whether GRPO's and GSPO's runs reach the same drifts (finding 11e reads this with a
# logistic fit per arm; its statements are on the findings page).

# %% [markdown]
# The CISPO arms that take one piece away at a time (verl's two-sided clip, MiniMax-M1's token mask, a tight cap of
# 1.28) and one update per batch (M = 1), in regime (b) on fresh seeds:

# %%
display(pd.DataFrame(arms["rows"], columns=["arm", "collapsed", "frozen", "kept", "late held-out acc.",
                                            "position vs GRPO and GSPO (f11f.arm)"]))

# %% [markdown]
# ## What to take away

# %% jupyter={"source_hidden": true}
soft = min(presets.loc[n, "of those keep a gradient"] for n in ("CISPO (TRL)", "SAPO"))
grpo_kept = presets.loc["GRPO", "of those keep a gradient"]
regime_b = collapsed_share(deaths, "(b)", ("cispo", "sapo"))
claims = [
    claim("soft_bounds_keep_out_of_band", "CISPO (TRL) and SAPO: smallest share of out-of-band tokens keeping a "
          "gradient", soft, ">=", 0.9),
    claim("grpo_drops_out_of_band", "GRPO: share of out-of-band tokens keeping a gradient", grpo_kept, "<=", 0.4),
    claim("presets_equal_library", "largest |Δ| between a preset's design point and its library objective",
          max(gap.values()), "<=", 1e-9),
    claim("soft_bounds_collapse_under_cap", "CISPO and SAPO in regime (b): smallest collapsed share over both models",
          regime_b, ">=", 0.8),
]
# the verdicts below are the book's own words (docs/book.json, written by `python -m gspo_record`), not this notebook's
from gspo_record.takeaways import glance, statement

mask = statement("f11f.mask")
takeaway([
    f"On this batch, of the tokens outside GRPO's band, GRPO keeps a gradient on {fmt(grpo_kept)} and GSPO on "
    f"{fmt(presets.loc['GSPO', 'of those keep a gradient'])}; CISPO and SAPO keep it on at least {fmt(soft)}: a cap or "
    "a gate never takes a token's gradient away, a clip does.",
    f"Finding 11, in the book's words: {glance('11')['verdict']}",
    f"The token mask on CISPO (finding 11f): {mask['label']}; {mask['number']} ({mask['sure']}).",
], why="The stored runs line up with one design choice, which tokens lose their gradient: the bounds that never zero "
       "a drifted token's gradient (CISPO's cap, SAPO's gate) collapsed in regime (b) where GRPO did not, and CISPO "
       "with MiniMax-M1's mask put back collapsed less (the statement above). A pattern, not a mechanism: the same "
       "arms also move further in their first batch, and the design cannot separate the two (finding 11's reading).",
   claims=claims)

# %% [markdown]
# ## Record results

# %% jupyter={"source_hidden": true}
numbers = {"presets": presets.reset_index().to_dict(orient="records"),
           "deaths": deaths.to_dict(orient="records"), "soft_kept_min": soft, "grpo_kept": grpo_kept,
           "regime_b_collapsed_min": regime_b}
results = record_results(results_path, "06_successors", claims, numbers, parameters=dict(updates=updates))
