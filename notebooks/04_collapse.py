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
# # 04 · GRPO collapse, MoE routing and Routing Replay
#
# **Question.** Why is GSPO stable where GRPO collapses? What does one update do to an MoE's routing, what does
# Routing Replay change, what does a collapse look like as it happens, how often does it happen over every stored
# run, does anything announce it — and why does a grad-norm cap save GRPO?
#
# **Paper.** GSPO §5.3 (≈ 10 % of activated experts change after one update; GRPO on the MoE needs Routing Replay to
# converge, GSPO does not), §5.5 (GRPO's collapse, often irreversible). `docs/findings.md` findings 2-4, 9 and 10 hold
# the rates and verdicts read here.

# %% tags=["parameters"]
checkpoint = "moe-sort"
length = 12
prompts = 16
group_size = 8
routing_minibatches = 4
routing_lr = 1e-4  # section 1: a learning rate where the paper's ~10 % is within reach (finding 3)
live_rollouts = 10  # section 2: RL steps per objective (the full tier runs 80, where the collapses come)
live_eval_every = 10
live_eval_prompts = 64
seed = 0
results_path = None

# %% [markdown]
# ## Setup

# %%
from IPython.display import display

from gspo_lab.analysis import routing_change
from gspo_lab.config import TrainConfig
from gspo_lab.nb.results import claim, fmt, record_results, takeaway
from gspo_lab.paths import runs_dir

# %% [markdown]
# ## 1. One update moves the routing; Routing Replay puts it back
# One rollout batch, one GRPO update on its first minibatch; then, per MoE layer, the share of (token, layer)
# top-k expert sets that differ from π_old's — for π_θ's own forward (*natural*: what GRPO's token ratios compare),
# and for the forward under Routing Replay, measured at the experts (*replayed*).

# %%
routing_cfg = TrainConfig(checkpoint=checkpoint, length=length, prompts_per_rollout=prompts, group_size=group_size,
                          minibatches=routing_minibatches, lr=routing_lr, objective="grpo", seed=seed)
routing = routing_change(routing_cfg, updates=1)
routing

# %% [markdown]
# ## 2. Watch one collapse
# GRPO and GSPO from the same cold start in the regime finding 2 confirmed (`moe-sort`, L = 12, M = 16, lr 5e-5, no
# grad-norm clip). Each run saves its state under `runs/04_live/` after every RL step: running the cell again (or
# after a kernel restart) resumes or reads it back. One seed's outcome is chaotic (another CPU rounds differently):
# the rates are in section 3. The panel below re-runs the pair with grad-norm clipping or Routing Replay switched
# on, again side by side, its plot following both runs as they train (`LivePanel`; its twin is the cell above).

# %%
from gspo_lab.live import live_runs
from gspo_lab.widgets import LivePanel, live_view

live_cfgs = {name: TrainConfig(checkpoint=checkpoint, length=length, prompts_per_rollout=prompts,
                               group_size=group_size, minibatches=16, lr=5e-5, grad_clip=None, objective=name.lower(),
                               seed=seed, rollouts=live_rollouts, eval_every=live_eval_every,
                               eval_prompts=live_eval_prompts)
             for name in ("GRPO", "GSPO")}
live = live_runs(live_cfgs, runs_dir() / "04_live")
fig, live_text = live_view(live)
display(fig)
print(live_text)

# %% [markdown]
# *Figure 1.* The live pair: GRPO (red) and GSPO (blue) trained from the same `moe-sort` cold start (4 layers, 16
# experts, top-2, ~2 M weights) in finding 2's regime (L = 12, M = 16, lr 5e-5, no grad-norm cap), one seed, six panels
# against the rollout batch: held-out accuracy (sampled), training reward, clipped tokens, the largest pre-clip gradient
# norm, truncated responses and expert change per update (a tick at a log axis marks a 0). What to see: with
# `live_rollouts` = 10 (the default) the runs have only begun; over the full tier's 80 a collapse shows as GRPO's
# accuracy and reward falling and staying down — or not, on one seed (the rates are Figure 3's).

# %%
live_panel = LivePanel(live_cfgs, runs_dir() / "04_live", initial=live)
live_panel.widget

# %% [markdown]
# *Figure 2.* Figure 1 as a control: toggles for a grad-norm clip of 1.0 and for Routing Replay (GRPO on the MoE only),
# and a button that trains (or resumes) the pair side by side, the plot following both runs. What to see: before a click
# it draws Figure 1; with the cap on, how GRPO's largest gradient norm and its accuracy compare with Figure 1's (one
# seed; Figure 4 has the cap over seeds).

# %% [markdown]
# ## 3. Every stored run (no training)
# Finding 2's runs, re-measured under endpoint v2 (256 samples per evaluation; collapsed = the last two evaluations
# below 0.5 × the pooled cold start), and the exploratory searches (2 seeds, 64 prompts per evaluation, marked "s").

# %%
import pandas as pd

from gspo_record.f2.search import stability_table
from gspo_record.tables import dose_table
from gspo_record.f2.plots import plot_dose, plot_stability

stability = stability_table()
display(plot_stability(stability))

# %% [markdown]
# *Figure 3.* Every stored `moe-sort` run of finding 2 at L = 12 (Routing Replay left out), one column per objective
# and, per grad-norm cap (off, 1), two rows of maps over learning rate × minibatches M: the collapsed runs (each cell
# reads collapsed / runs; "s": search seeds only) and the late held-out accuracy (the mean of the evaluations at
# rollouts ≥ 40 of 80). What to see: where the red cells are — without a cap GRPO collapses at M = 16 where GSPO does
# not, while at a cap of 1 both collapse at large learning rates (finding 2's map: a boundary moved, not immunity).

# %% [markdown]
# The grad-norm dose: late held-out accuracy as the cap tightens, GRPO beside GSPO, on the MoE and its dense twin.

# %%
dose = dose_table()
display(plot_dose(dose))

# %% [markdown]
# *Figure 4.* Late held-out accuracy (rollouts ≥ 40 of 80) against the grad-norm cap, loosest (no cap) to tightest (1),
# in finding 2's regime (L = 12, M = 16, lr 5e-5), one panel per model — `moe-sort` (~2 M weights) and its dense twin
# `dense-sort` (~0.4 M) — GRPO (red), GRPO + dual-clip without a cap (pink) and GSPO without a cap and at 1 (blue); bars
# are 95 % intervals over seeds. What to see: how far GRPO's line climbs towards GSPO's as the cap tightens, on both
# models.

# %% [markdown]
# The verdicts, from the findings page's rules (finding 2 and its re-measurement, 2f):

# %%
from gspo_record.f2.collapse import section as collapse_section
from gspo_record.f2.late import context as late_context
from gspo_record.f4.replay import section as replay_section

collapse, _ = collapse_section()
for v in collapse["verdicts"]:
    print(f"grad clip {v['clip']}: {v['verdict']}")
replay, _ = replay_section()
for v in replay["verdicts"]:
    print(f"Routing Replay, grad clip {v['clip']}: {v['verdict']}")
late = late_context()["rows"]
display(pd.DataFrame(late, columns=["model", "arm", "minus", "late held-out acc., paired", "reading (f2r.late)"]))

# %% [markdown]
# How a run dies, and any stored arm with all its seeds: pick an arm and a metric (truncation, zero-std groups,
# gradient norm…). The call below is the selector's twin.

# %%
from gspo_lab.experiments.read import stored_arms
from gspo_record.tables import F2
from gspo_lab.widgets import ArmPanel, arm_view

arms = stored_arms([F2["moe"], F2["dense"], F2["mechanism"], F2["dose"], F2["candidate"]])
fig, text = arm_view(arms[0], "response/truncated_frac:mean")
display(fig)
print(text)

# %% [markdown]
# *Figure 5.* One stored arm's seeds for one metric, per rollout batch: by default the first arm — `moe-sort` GRPO
# without a grad-norm cap in finding 2's regime (L = 12, M = 16, lr 5e-5), 5 seeds — and its share of truncated
# responses (no `<eos>`); thin lines are seeds, the bold line their mean. What to see: with the defaults the truncated
# share jumps in several seeds from about rollout 30, while their held-out accuracy (Figure 6) is already falling from
# rollout 10.

# %%
arm_panel = ArmPanel(arms)
arm_panel.widget

# %% [markdown]
# *Figure 6.* Figure 5 as a selector: any stored arm of finding 2 (the MoE, its dense twin, the mechanism and dose arms,
# the candidate cells) and any of its per-rollout metrics; it opens on the same arm's held-out accuracy. What to see:
# with the defaults, the five GRPO runs' accuracy falls after rollout 10 and ends near 0; pick the GSPO arm beside it to
# compare.

# %% [markdown]
# ## 4. What comes before a collapse?
# Alarm rules on per-rollout signals (`gspo_lab/precursors.py`), chosen on the first measurement's runs (exploratory:
# those runs had been read for findings 2d-2e) and frozen in `data/precursors/rules_v1.toml`, then scored on runs they
# were not chosen on. Finding 9 of the page, with its rule.

# %%
from gspo_record.f9.precursors import section as precursor_section

precursors, _ = precursor_section()
columns = ["signal", "factor", "warned ≥ 5 ahead", "false alarms", "median lead"]
print(f"held-out runs: {precursors['held_out']} ({precursors['collapsing']} collapsing, {precursors['stable']} stable)")
display(pd.DataFrame(precursors["held_rows"], columns=[*columns, "verdict (f9.skill)"]))

# %% [markdown]
# ## 5. Why? Size or content of GRPO's updates (finding 10)
# Interventions declared with both accounts' predictions before their runs (`data/specs/f10_*.toml`): each
# objective's direction applied at the other's gradient norm (the 2×2), skipping large updates instead of shrinking
# them, a relative cap for both objectives, dual-clip under a cap, four ways a spike can enter AdamW (f10w), branches
# from GRPO's saved states before and after its collapse's onset (f10z), and the 2×2 under plain SGD (f10y).
# *Size* predicts GRPO's direction at GSPO's norm does as well as GSPO; *content* predicts GSPO's direction at GRPO's
# norm does. The verdicts are the page's rules; cells still running show as pending.

# %%
from gspo_record.f10.runs import section as why_section

why, why_figures = why_section()
two_by_two, plot_two_by_two = why_figures["f10_two_by_two"]  # the page's figure: its data and its plot function
display(plot_two_by_two(two_by_two))
display(pd.DataFrame(why["effects"], columns=["model", "effect", "late held-out acc., paired", "reading (f10.late)"]))
for v in why["two_verdicts"]:
    print(f"{v['model']}: {v['verdict']}")

# %% [markdown]
# *Figure 7.* Finding 10's norm × direction 2×2 on its first five seeds: late held-out accuracy of GRPO runs whose
# update took GRPO's (red) or GSPO's (blue) direction, rescaled to GRPO's or GSPO's norm, on `moe-sort` and its dense
# twin `dense-sort` (finding 2's regime, no grad-norm cap); small dots are seeds, large dots their mean. What to see: a
# line that climbs from left to right says the norm matters; red and blue apart at one norm say the direction does. The
# ten-seed reading (finding 10t on the findings page) supersedes this one.

# %%
display(pd.DataFrame(why["shrink_cmp"], columns=["model", "comparison", "late held-out acc., paired", "verdict"]))
fresh = f"fresh seeds {why['fresh_seeds']}"
display(pd.DataFrame(why["fresh"], columns=["model", "comparison", "seeds 30-34", fresh, "verdict", "robustness"]))
display(pd.DataFrame(why["skip_ten"]["rows"], columns=why["skip_ten"]["header"]))  # skip vs shrink at ten seeds
display(pd.DataFrame(why["duals"], columns=["model", "cap", "collapsed, dual-clip + cap", "collapsed, cap alone",
                                            "dual-clip + cap − cap, paired", "verdict (f10.dual_cap)"]))
display(pd.DataFrame(why["dual_ten"]["rows"], columns=why["dual_ten"]["header"]))  # dual-clip under a cap, ten seeds
for a in why["accounts"]:  # rule f10.account, written after the results
    print(f"together, {a['model']}: {a['verdict']}{a['verdict'].when}")
display(pd.DataFrame(why["adam"]["rows"], columns=why["adam"]["header"]))  # where inside AdamW a spike harms (f10w)
for a in why["adam"]["accounts"]:  # rule f10w.account, declared before its runs
    print(f"inside AdamW, {a['model']}: {a['verdict']} [{a['sure']}]")
display(pd.DataFrame(why["branch"]["rows"], columns=why["branch"]["header"]))  # paired branches from saved states
display(pd.DataFrame(why["revert"]["rows"], columns=why["revert"]["header"]))  # branches after the onset (reversible?)
print(f"branch points (after each trunk's onset): {why['revert']['points']}; trunks unaided, after − before: "
      f"{why['revert']['trunk_change']}")
display(pd.DataFrame(why["sgd_two"]["rows"], columns=why["sgd_two"]["header"]))  # the 2×2 under plain SGD (f10y)

# %% [markdown]
# ## What to take away

# %% jupyter={"source_hidden": true}
total = routing[routing["layer"] == "all"].iloc[0]
claims = [
    claim("routing_moves", f"share of top-k expert sets changed after one update (lr {routing_lr:g}, all layers)",
          total["natural"], ">", 0.0),
    claim("replay_exact", "share changed in the forward under Routing Replay (measured at the experts)",
          total["replayed"], "<=", 0.0),
]
# the verdicts below are the book's own words (docs/book.json, written by `python -m gspo_record`), not this notebook's
from gspo_record.takeaways import glance

replay_off = next(v for v in replay["verdicts"] if v["clip"] == "off")
warned = precursors["warns"]
takeaway([
    f"One GRPO update at lr {routing_lr:g} changes {fmt(total['natural'])} of the MoE's top-k expert sets; Routing "
    f"Replay makes the ratio's forward reuse π_old's experts exactly ({fmt(total['replayed'])} changed). Whether that "
    f"rescues GRPO: {replay_off['verdict']}.",
    f"Collapse, in the book's words: {glance('2')['verdict']} The live runs above are one seed each; the map over "
    "seeds is the evidence.",
    f"Alarm signals scored on {precursors['held_out']} runs they were not chosen on: "
    f"{len(warned)} of {len(precursors['verdicts'])} warn ahead better than chance ({', '.join(warned) or 'none'}).",
], why="GSPO's sequence clip keeps its updates' norms small where GRPO's rare far-off tokens make huge ones; how "
       f"much of GSPO's stability that explains is finding 10's verdict: {glance('10')['verdict']}",
   claims=claims)

# %% [markdown]
# ## Record results

# %% jupyter={"source_hidden": true}
numbers = {"routing": routing.to_dict(orient="records"), "live": live_text,
           "live_final_accuracy": {n: float(r.evals["eval/accuracy_sampled"].iloc[-1]) for n, r in live.items()}}
results = record_results(results_path, "04_collapse", claims, numbers, parameters=dict(live_rollouts=live_rollouts))
