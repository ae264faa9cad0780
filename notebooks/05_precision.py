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
# # 05 · Precision and RL infrastructure: a bf16 inference engine against the fp32 trainer
#
# **Question.** How far apart are the likelihoods an RL stack's inference engine (here: the sampler under bf16
# autocast) and its training engine (the fp32 forward of the updates) give the *same* responses — per token, and per
# sequence the way GSPO measures it — and what does that do to each objective's clipping when π_old is taken from the
# inference engine instead of being recomputed?
#
# **Paper.** GSPO §5.4: token-level likelihoods are sensitive to precision differences between the engines, sequence
# likelihoods tolerate them, so GSPO could use the inference engine's likelihoods directly. No numbers are given.

# %% tags=["parameters"]
checkpoints = ["moe-sort", "dense-sort"]
length = 12
prompts = 16
group_size = 8
seed = 0
temperature = 1.0
lag_seeds = "confirm"
top_k = 2  # section 6: the sampler keeps the k most likely tokens
mask_checkpoint = "sweep-addfmt-L7"  # section 8: add_format, 7 digits, responses up to 75 tokens
mask_updates = [2, 8, 16]  # section 8: how many updates the trainer is ahead of the sampler (one panel each)
mask_lengths = [8, 16, 32, 64]  # section 8: how many of a response's tokens the mask reads
mask_prompts = 32  # section 8: prompts of its batch (x group_size responses; at every tier, the claim needs them)
r3_prompts = 32  # section 9: prompts of its batch on the first (MoE) cold start, at every tier
results_path = None

# %% [markdown]
# ## Setup: one rollout batch per cold start and sampler precision, scored by both engines
# The sampler in fp32 is the floor (the same weights and precision, only the KV-cache path differs); under bf16
# autocast it is this kit's stand-in for an inference engine.

# %%
import pandas as pd
from IPython.display import display

from gspo_lab.config import TrainConfig
from gspo_lab.nb.results import claim, fmt, record_results, takeaway
from gspo_lab.objectives import GRPO_CLIP, GSPO_CLIP
from gspo_lab.plots import plot_mismatch
from gspo_lab.precision import first_update_clip, mismatch_samples, mismatch_stats, sampler_mismatch
from gspo_lab.widgets import PrecisionPanel, precision_view

cfgs = {ck: TrainConfig(checkpoint=ck, length=length, prompts_per_rollout=prompts, group_size=group_size, seed=seed,
                        temperature=temperature) for ck in checkpoints}
mismatch = {(ck, p): sampler_mismatch(cfg, p) for ck, cfg in cfgs.items() for p in ("fp32", "bf16")}

# %% [markdown]
# ## 1. The mismatch per token and per sequence
# Δ = log π_sampler − log π_train on every valid response token. Per sequence, length-normalised, |mean_t Δ| is how
# far GSPO's s_i sits from 1 before any update (Eq. 7); summed, Σ_t Δ is the true sequence log-ratio.

# %%
stats = pd.DataFrame({f"{ck} / {p}": mismatch_stats(m) for (ck, p), m in mismatch.items()}).T
display(stats[["tok_mean", "tok_p99", "tok_max", "seq_mean", "seq_p99", "seqsum_mean", "tok_outside_grpo",
               "seq_outside_gspo", "gspo_eps_needed_p99"]])

# %%
bands = {"token": GRPO_CLIP.high, "sequence": GSPO_CLIP.high}  # ε_high; the plot draws each edge at log(1 + ε)
for ck in checkpoints:
    display(plot_mismatch({f"{p} sampler": mismatch_samples(mismatch[(ck, p)]) for p in ("fp32", "bf16")}, bands,
                          title=f"{ck}: share of tokens / responses whose |Δ| exceeds x"))

# %% [markdown]
# *Figures 1 and 2.* One figure per cold start in `checkpoints` — by default `moe-sort` (4 layers, 16 experts, top-2,
# ~2 M weights), then its dense twin `dense-sort` (~0.4 M weights) — on one rollout batch: the share of tokens (left,
# |Δ|) and of responses (right, |mean_t Δ|) whose sampler–trainer mismatch exceeds x, log-log, for the fp32 and the bf16
# sampler; the dotted line is each band's edge log(1 + ε_high), GRPO's on tokens and GSPO's on responses. What to see:
# the bf16 curves lie orders of magnitude right of the fp32 floor; almost no token passes GRPO's edge, while a share of
# the responses lies beyond GSPO's far narrower one.

# %% [markdown]
# Length normalisation shrinks the tail: a response's mean |Δ| is far below its tokens' worst. But GSPO's band is
# also ~700× narrower than GRPO's, so a share of on-policy responses already sits outside it (`seq_outside_gspo`),
# while almost no token sits outside GRPO's (`tok_outside_grpo`). `gspo_eps_needed_p99` is the ε that would keep
# 99 % of responses inside GSPO's band.

# %% [markdown]
# ## 2. The first minibatch, before any update, when π_old is the sampler's
# At k = 0 π_θ is still the policy that sampled, so whatever is clipped there is the engines' disagreement alone —
# the infrastructure cost §5.4 is about. With π_old recomputed by the trainer every ratio is exactly 1.

# %%
first = {f"{ck} / {p}": {f"{o} {k}": v for o, d in first_update_clip(m).items() for k, v in d.items()}
         for (ck, p), m in mismatch.items()}
display(pd.DataFrame(first).T)

# %% [markdown]
# ## 3. Try another precision or temperature
# Each setting samples a fresh batch from the first cold start and scores it once (cached); the call below is the
# panel's twin.

# %%
fig, text = precision_view(cfgs[checkpoints[0]], "bf16", temperature)
display(fig)
print(text)

# %% [markdown]
# *Figure 3.* The same two panels for one sampler setting on the first cold start (`moe-sort` by default): the bf16
# sampler at τ = `temperature` (1.0 by default). What to see: at the defaults it repeats Figure 1's bf16 curves — the
# panel below's starting point; the readout above gives the clip fractions before any update.

# %%
panel = PrecisionPanel(cfgs[checkpoints[0]])
panel.widget

# %% [markdown]
# *Figure 4.* Figure 3 as a control: the sampler's precision (fp32 or bf16) and its temperature τ (0.5 to 1.5), each
# setting sampled and scored once, then cached. What to see: at the defaults it draws Figure 3; how far a setting moves
# the per-response curve (right) against GSPO's edge, and the clip fractions before any update in its readout.

# %% [markdown]
# ## 3b. The other answer: keep π_old recomputed, and correct for the sampler
# Production stacks recompute π_old with the trainer and multiply each token's loss by ρ = π_old / π_sampler (TRL's
# `vllm_importance_sampling_mode`; the kit's `--sampler-correction`, `gspo_lab/corrections.py`): per token or per
# sequence (a *product* over the response, not GSPO's geometric mean), truncated to [min, max] or set to 0 outside it
# (masked). On the bf16 batch above, what each of the four modes does — at TRL's default band (max 3.0) and at a tight
# band chosen only to make the modes visible on a mismatch this small:

# %%
from gspo_lab.precision import correction_table

corr = correction_table(mismatch[(checkpoints[0], "bf16")], {"TRL default (None, 3.0)": (None, 3.0),
                                                             "tight (0.98, 1.02)": (0.98, 1.02)})  # fmt: skip
corr

# %% [markdown]
# ## 4. Training on the sampler's bf16 log-probs (stored results, no training)
# Finding 5 of `docs/findings.md`: finding 1's setting trained with π_old from the bf16 sampler (`sampler_bf16`) or
# recomputed, 5 seeds, then the same grid on 5 fresh seeds. The verdicts are the findings page's rules.

# %%
from gspo_record.f5.confirm import confirm_section
from gspo_record.f5.precision import train_section

train, _ = train_section()
display(pd.DataFrame(train["rows"], columns=["objective", "π_old", "clip range", "seeds", "clipped k = 0",
                                             "clipped k ≥ 1", "held-out acc. final", "minus recomputed, per seed"]))
print("claim (f5.claim):", train["verdict"])
confirm, _ = confirm_section()
display(pd.DataFrame(confirm["rows"], columns=["objective", "π_old", "clip range", confirm["seeds"][0],
                                               confirm["seeds"][1] + " (fresh)", "all 10 seeds", "confirmed?"]))
print("over all 10 seeds (f5.claim):", confirm["pooled"])

# %% [markdown]
# ## 5. Stale rollouts: a lag between sampler and trainer (stored results, no training)
# Notebook 02 followed π_θ away from π_old *within* one rollout batch: minibatch j of M is j updates stale. An
# asynchronous RL system adds a lag *between* batches: the sampler runs D rollout batches ahead of the trainer, so a
# whole batch is D · M updates stale before its first update (`rollout_lag`, `gspo_lab/staleness.py`; finding 12 of
# `docs/findings.md`). Here π_old is the behaviour policy's own log-probs — the weights that sampled the batch — so
# GRPO's and GSPO's ratios see the whole lag, as in an asynchronous trainer that reuses the sampler's log-probs. The
# runs are finding 12's (seed set `lag_seeds`: "confirm" reads the fresh seeds of `data/specs/f12b_lag_confirm.toml`,
# "search" the 2 search seeds of `f12a_lag_search.toml`); the call below is the slider's twin.

# %%
from gspo_record.f12.curves import lag_curves, lag_readout, stored_lags
from gspo_record.f12.widget import LagPanel, lag_view

lag_table = lag_curves(seeds=lag_seeds)
lags = stored_lags(lag_table)
lag_n = lag_table["seed"].nunique()
print(f"{lag_n} seeds per lag ({lag_seeds} set)")
fig, text = lag_view(lag_table, lags[-1])
display(fig)
print(text)

# %% [markdown]
# *Figure 5.* Finding 12's stored runs of GRPO (blue) and GSPO (orange) with the behaviour policy as π_old, mean of
# the seeds per rollout batch, at the largest stored lag (solid; 16 rollout batches, 128-135 optimizer steps behind
# the sampler) and at no lag (dotted): held-out accuracy (left), the share of valid tokens whose clip is active
# (middle), the spread of the token log-ratios log w (right). What to see: the spread of log w grows for both with the
# lag, and GSPO's narrow band clips a far larger share of the stale tokens than GRPO's wide one.

# %%
lag_panel = LagPanel(lag_table)
lag_panel.widget

# %% [markdown]
# *Figure 6.* Figure 5 as a control: the lag D in rollout batches (each of the stored lags, 0 to 16; 0 draws the
# synchronous runs against themselves). What to see: how the clipped share and the spread climb with D, and from which
# lag the stale held-out accuracy leaves the dotted line. Finding 12 reads each arm's drop against its lag 0 with
# intervals; the seeds per lag are printed above Figure 5.

# %% [markdown]
# What clip fraction to expect at a staleness: each arm's clipped share against D with its interval over seeds, in
# both units a trainer may log — tokens (verl's `pg_clipfrac`, TRL's for a per-token ratio) and responses (TRL's for a
# per-sequence ratio, GSPO) — from each run's `clip_token_frac` and `clip_seq_frac` (the mean over its updates). The
# recipe page draws the same chart beside the asynchronous trainers' staleness knobs. Always finding 12's fresh seeds
# (the lag-32 rung where 12c ran it), whatever `lag_seeds` says.

# %%
from gspo_record.f12.clip_lag import at, clip_by_lag, plot_clip_by_lag

clip_lag = clip_by_lag()
display(plot_clip_by_lag(clip_lag))
clip_top = int(clip_lag["lag"].max())
for arm in ("gspo/behaviour", "grpo/behaviour"):
    print(f"{arm}: " + "; ".join(f"{unit} {at(clip_lag, arm, 0, unit)['text']} at lag 0 → "
                                 f"{at(clip_lag, arm, clip_top, unit)['text']} at lag {clip_top}"
                                 for unit in ("tokens", "responses")))

# %% [markdown]
# *Figure 7.* Finding 12's stored runs (10 fresh seeds per point; `f12b_lag_confirm`, and `f12c_lag_isolate` for lag
# 32): the clipped share of tokens (left) and of responses (right) against the lag D in rollout batches (each step of D
# adds M = 8 optimizer steps of staleness), log scales, bars the 95 % interval over seeds; GRPO, GSPO and CISPO with
# the sampler's log-probs as π_old, GRPO with a recomputed π_old and token TIS, GSPO with a recomputed π_old and TRL's
# sequence mask. CISPO's "clip" is its cap binding on a token with Â > 0: that token keeps its gradient. What to see:
# which lines climb with D and which stay at their lag-0 level (the sampler's log-probs against a recomputed π_old),
# and how far apart the two panels put each arm: GSPO has one ratio per response, GRPO one per token (the numbers are
# printed above; the claim below checks GSPO's rise in both units).

# %% [markdown]
# ## 6. Top-k sampling: a biased ratio, and sampling replay
# An inference engine that samples with top-k or top-p draws from the distribution renormalised over the tokens it
# kept, and returns those renormalised log-probs; a trainer that scores the whole vocabulary then sees a ratio equal
# to the kept mass at every token, below 1, before any update (TRL's tracker reports a mean ratio of 0.896 at top_p
# 0.8). Here the sampler keeps the `top_k` most likely tokens (2 by default; the kit's vocabulary has 22) at the first
# cold start, in fp32 so that nothing else differs. The same first minibatch is scored two ways: π_old = the sampler's
# log-probs with the trainer over the whole vocabulary (the bias), and the same π_old with the trainer scoring on the
# tokens the sampler kept at each step (*sampling replay*, `TrainConfig(sampling_replay=True)`). A π_old recomputed by
# the trainer (`old_logp = "recompute"`, the default) sees no bias and needs no correction: both sides score the whole
# vocabulary, every first ratio is exactly 1 (section 2). The call below draws the figure; the table holds the numbers.

# %%
from dataclasses import replace

topk_cfg = replace(cfgs[checkpoints[0]], top_k=top_k)
topk = {f"top-{top_k} sampler π_old": sampler_mismatch(topk_cfg, "fp32"),
        "... with sampling replay": sampler_mismatch(topk_cfg, "fp32", replay=True)}
display(plot_mismatch({name: mismatch_samples(m) for name, m in topk.items()}, bands,
                      title=f"{checkpoints[0]}, top-k {top_k}: share of tokens / responses whose |Δ| exceeds x"))
topk_stats = {name: mismatch_stats(m) for name, m in topk.items()}
topk_clip = {name: first_update_clip(m) for name, m in topk.items()}
display(pd.DataFrame({name: {"mean |Δ| per token (−log kept mass)": topk_stats[name]["tok_mean"],
                             "responses outside GSPO's band": topk_stats[name]["seq_outside_gspo"],
                             "largest |Δ|": float(m.delta.abs().max()),
                             **{f"{o} clipped tokens at k = 0": d["clip/token_frac"] for o, d in topk_clip[name].items()}}
                      for name, m in topk.items()}).T)

# %% [markdown]
# *Figure 8.* One rollout batch of the first cold start (`moe-sort` by default) sampled with top-k (k = `top_k`, 2 by
# default) in fp32: the share of tokens (left, |Δ|) and of responses (right, |mean_t Δ|) whose gap between the
# sampler's log-probs and the trainer's exceeds x, log-log; the dotted lines are GRPO's edge on tokens and GSPO's on
# responses, as in Figures 1 and 2. Without replay Δ is −log of the mass the sampler kept at each token; with replay
# only the fp32 floor is left. What to see: where each curve sits against GSPO's edge (right) and GRPO's (left); the
# table says how many tokens each objective clips at the first update (the claims below check GSPO's share without
# replay and the largest |Δ| with it).

# %% [markdown]
# ## 7. Batch composition: the same weights, the same tokens, other micro-batches
# A trainer scores a batch in micro-batches; on GPUs whose kernels are not batch-invariant the same weights give the
# same tokens different log-probs in bf16 depending on what else is in the micro-batch (reported: 8 % of tokens outside
# [0.9, 1.1], about the size of the sampler–trainer gap). Here the trainer's forward scores one batch of the first cold
# start in micro-batches of 1 row and of 8 rows, in fp32 and under bf16 autocast, on this machine's CPU kernels; the
# bf16 sampler's gap from section 1 is drawn beside it.

# %%
from gspo_lab.precision import batch_composition

composition = {p: batch_composition(cfgs[checkpoints[0]], (1, 8), p) for p in ("fp32", "bf16")}
display(plot_mismatch({**{f"micro-batches 1 vs 8, {p}": mismatch_samples(m) for p, m in composition.items()},
                       "bf16 sampler vs fp32 trainer": mismatch_samples(mismatch[(checkpoints[0], "bf16")])}, bands,
                      title=f"{checkpoints[0]}: share of tokens / responses whose |Δ| exceeds x"))
composition_stats = {p: mismatch_stats(m) for p, m in composition.items()}
display(pd.DataFrame(composition_stats).T[["tok_mean", "tok_p99", "tok_max", "seq_p99", "tok_outside_grpo",
                                           "seq_outside_gspo"]])

# %% [markdown]
# *Figure 9.* One rollout batch of the first cold start (`moe-sort` by default) scored by the trainer's forward in
# micro-batches of 1 row and of 8 rows: the share of tokens (left, |Δ|) and of responses (right, |mean_t Δ|) whose gap
# between the two exceeds x, in fp32 and in bf16, beside the bf16 sampler's gap from the fp32 trainer (Figure 1);
# dotted lines: GRPO's edge on tokens, GSPO's on responses. Zeros (bit-identical log-probs) are left off a log axis.
# What to see: how far left of GSPO's edge the batch-composition curves stay compared with the sampler's; the claim
# below checks the share of responses batch composition alone moves outside GSPO's band in bf16.

# %% [markdown]
# ## 8. The length bias of sequence-level masks
# A sampler correction at the sequence level weighs or drops a whole response by its ratio ρ_t = π_old / π_sampler.
# TRL's `sequence_mask` takes the *product* of the token ratios and drops the response when it passes 3.0 (no lower
# bound by default); SkyRL's default takes their *geometric mean* and drops the response outside [0.99, 1.01]. The
# product's log is a sum over the response, so the same per-token drift drops long responses first; the mean's is
# not. GSPO's own ratio is a geometric mean too, against a much narrower band ([1 − 3e-4, 1 + 4e-4]); it clips rather
# than drops, so its line is the share of responses outside its band.
#
# The drift: one rollout batch of `mask_checkpoint` (add_format, 7 digits, responses up to 75 tokens) sampled in
# fp32, then the trainer takes `mask_updates` GRPO updates on it at the regime's learning rate (3e-5) and scores the
# same responses again: the sampler is k updates behind, what a rollout lag does (section 5). The length: each mask
# reads n tokens drawn at random from each response (the same responses at every n), so every n sees the same
# per-token drift and only the count of tokens changes (a prefix would mix length with position: a response's first
# tokens here drift less than its last). Beside
# TRL's default the product is drawn with a lower bound 1/3, and the geometric mean with the bounds that equal that
# product's at 64 tokens, 3^(±1/64) = [0.983, 1.017]: the two agree at n = 64 by construction, and differ below it.

# %%
import torch

from gspo_lab.corrections import SKYRL_GEO_BOUNDS, masked_at_length
from gspo_lab.plots import plot_mask_length
from gspo_lab.precision import stale_mismatch

torch_gen = torch.Generator().manual_seed(seed)
mask_cfg = TrainConfig(checkpoint=mask_checkpoint, task="add_format", length=7, prompts_per_rollout=mask_prompts,
                       group_size=group_size, minibatches=8, lr=3e-5, seed=seed, temperature=temperature)
stale_drift = stale_mismatch(mask_cfg, tuple(mask_updates))
matched = 3.0 ** (1 / max(mask_lengths))
mask_modes = {"product, TRL's default (ρ > 3)": ("sequence_mask", None, 3.0),
              "product, [1/3, 3]": ("sequence_mask", 1 / 3, 3.0),
              f"geometric, [{1 / matched:.3f}, {matched:.3f}] (= the product's at {max(mask_lengths)})":
                  ("sequence_geo_mask", 1 / matched, matched),
              f"geometric, SkyRL's default {SKYRL_GEO_BOUNDS}": ("sequence_geo_mask", *SKYRL_GEO_BOUNDS),
              "GSPO's band (outside)": ("sequence_geo_mask", 1 - GSPO_CLIP.low, 1 + GSPO_CLIP.high)}
mask_rates = pd.DataFrame([{"drift": f"sampler {k} updates behind", "updates": k, **row}
                           for k, m in stale_drift.items()
                           for row in masked_at_length(m.train_logp, m.sampler_logp, m.mask, mask_modes, mask_lengths,
                                                       torch_gen)])
display(plot_mask_length(mask_rates, title=f"{mask_checkpoint}: responses each sequence mask drops, against the "
                                           "tokens it reads"))
display(mask_rates.pivot_table(index=["updates", "length"], columns="name", values="masked", sort=False).round(3))
print(f"responses read at every n: {int(mask_rates['responses'].iloc[0])} of {mask_prompts * group_size}")

# %% [markdown]
# *Figure 10.* One rollout batch of the add_format cold start (7 digits), sampled in fp32 and scored by the trainer
# after k GRPO updates on it (one panel per k): the share of responses each sequence-level mask drops when it reads n
# tokens drawn at random from each response (x, log scale; only responses with at least the largest n tokens, the same
# ones at every n). Lines: TRL's product mask at its default (drops ρ > 3), the product with a lower bound 1/3, the
# geometric mean with bounds equal to that product's at the largest n, SkyRL's default geometric mask, and the share
# outside GSPO's band. What to see: how much faster the product lines rise with n than the geometric ones; the claim
# below checks it at the middle panel's drift, and the table holds the numbers. The geometric lines rise a little
# too: a mean over few tokens is noisy, and over more it settles at the response's own drift, which for some
# responses lies outside the band; the product's sum grows with n itself. A stale trainer mostly *lowers* the
# sampled responses' likelihood here (ρ < 1), so TRL's one-sided default almost never fires; what its cap would catch
# is drawn beside it. Finding 5's page reads the training runs on these masks (rule f5g.form).

# %% [markdown]
# ## 9. R3: the sampler's routing replayed in the trainer
# In an MoE the inference engine and the trainer can also disagree on *which experts* a token goes through: a router's
# top-k is a discrete choice, and bf16 rounding flips it where two experts' scores nearly tie (production MoE stacks
# report about 10 % of routers per pass). *R3* records the experts the sampler's own passes chose and routes the
# trainer's forward through them (`TrainConfig(sampler_routing_replay=True)`; the gate weights stay the trainer's, so
# the router still learns), leaving only the arithmetic. Finding 4's *R2* replays π_old's routing instead, between the
# trainer's own passes. Here: one batch of the first cold start sampled in bf16 (`r3_prompts` prompts), scored by the
# fp32 trainer with its own routing and with the sampler's replayed, beside an fp32 sampler (the floor, where the
# replay changes nothing).

# %%
from gspo_lab.precision import routing_mismatch

r3_cfg = replace(cfgs[checkpoints[0]], prompts_per_rollout=r3_prompts)
r3 = {p: routing_mismatch(r3_cfg, p) for p in ("fp32", "bf16")}
display(plot_mismatch({"bf16 sampler vs fp32 trainer": mismatch_samples(r3["bf16"]["plain"]),
                       "... with R3": mismatch_samples(r3["bf16"]["r3"]),
                       "fp32 sampler (floor)": mismatch_samples(r3["fp32"]["plain"])}, bands,
                      title=f"{checkpoints[0]}: share of tokens / responses whose |Δ| exceeds x, with and without R3"))
r3_stats = {f"{p}{' + R3' if arm == 'r3' else ''}": mismatch_stats(r3[p][arm]) for p in r3 for arm in ("plain", "r3")}
display(pd.DataFrame(r3_stats).T[["tok_mean", "tok_p99", "tok_max", "seq_p99", "seq_outside_gspo"]])
display(pd.DataFrame({p: r3[p]["per_layer"].numpy() for p in r3},
                     index=pd.Index(range(len(r3["bf16"]["per_layer"])), name="MoE layer")).rename(
    columns=lambda p: f"{p} sampler: (token, layer) sets that differ"))  # fmt: skip

# %% [markdown]
# *Figure 11.* One rollout batch of the first cold start (`moe-sort` by default, `r3_prompts` prompts × `group_size`),
# sampled under bf16 autocast and scored by the fp32 trainer with its own routing and with the sampler's routing
# replayed (R3), beside an fp32 sampler: the share of tokens (left, |Δ|) and of responses (right, |mean_t Δ|) whose
# gap between the sampler's log-probs and the trainer's exceeds x, log-log; dotted lines: GRPO's edge on tokens and
# GSPO's on responses. The second table is the share of each MoE layer's (token, layer) top-k expert sets, over the
# positions whose logits score a response token, in which the trainer's choice differs from the sampler's. What to see:
# R3 pulls in the far tail of the token curve (the tokens whose experts flipped) and barely moves the response curve
# against GSPO's edge, where the arithmetic dominates; the claim below checks the mean per-token gap with R3 against
# without. Finding 5's page reads the training runs with and without R3 (rule f5r.r3).

# %% [markdown]
# ## What to take away

# %% jupyter={"source_hidden": true}
from gspo_record.takeaways import glance, prose  # the book's own words (docs/book.json), not this notebook's

head = checkpoints[0]
bf16, fp32 = mismatch_stats(mismatch[(head, "bf16")]), mismatch_stats(mismatch[(head, "fp32")])
clip = first_update_clip(mismatch[(head, "bf16")])
claims = [
    claim("bf16_mismatch_real", f"{head}: mean per-token |Δ| bf16 ÷ fp32 sampler", bf16["tok_mean"] / fp32["tok_mean"],
          ">=", 100.0),
    claim("seq_tail_lighter", f"{head}, bf16: p99 per-sequence (length-normalised) ÷ p99 per-token |Δ|",
          bf16["seq_p99"] / bf16["tok_p99"], "<", 1.0),
    claim("gspo_clips_before_any_update", f"{head}: GSPO clipped tokens at k = 0, π_old = bf16 sampler",
          clip["gspo"]["clip/token_frac"], ">=", 0.05),
    claim("grpo_barely_clips_before_any_update", f"{head}: GRPO clipped tokens at k = 0, π_old = bf16 sampler",
          clip["grpo"]["clip/token_frac"], "<=", 0.01),
]
stale, sync = lag_readout(lag_table, lags[-1])["lag"], lag_readout(lag_table, lags[-1])["zero"]
spread = "ratio/tok_log_std:mean"
plain, replayed = topk.values()
claims += [
    claim("topk_biases_gspo", f"{head}, top-{top_k} sampler π_old: GSPO clipped tokens at k = 0",
          first_update_clip(plain)["gspo"]["clip/token_frac"], ">=", 0.1),
    claim("replay_restores_ratio_one", f"{head}, top-{top_k} with sampling replay: largest |log w| at k = 0",
          float(replayed.delta.abs().max()), "<=", 1e-4),
    claim("batch_composition_small", f"{head}, bf16: responses outside GSPO's band from micro-batch composition alone "
          "(1 vs 8 rows) ÷ those outside it from the bf16 sampler",
          composition_stats["bf16"]["seq_outside_gspo"] / bf16["seq_outside_gspo"], "<=", 0.25),
    claim("stale_spread_grows", f"GRPO, behaviour π_old: log-ratio spread at lag {lags[-1]} ÷ at lag 0",
          stale["grpo/behaviour"][spread] / sync["grpo/behaviour"][spread], ">=", 2.0),
    claim("gspo_clips_stale_tokens", f"GSPO, behaviour π_old: clipped tokens at lag {lags[-1]} − at lag 0",
          stale["gspo/behaviour"]["clip/token_frac:mean"] - sync["gspo/behaviour"]["clip/token_frac:mean"], ">=", 0.2),
    claim("gspo_clip_rises_in_both_units", f"GSPO, behaviour π_old, tokens and responses: smallest gap between the "
          f"intervals at lag {clip_top} and at lag 0 (lower end − upper end)",
          min(at(clip_lag, "gspo/behaviour", clip_top, u)["lo"] - at(clip_lag, "gspo/behaviour", 0, u)["hi"]
              for u in ("tokens", "responses")), ">=", 0.1),
]
mid = sorted(mask_updates)[len(mask_updates) // 2]
rate = mask_rates[mask_rates["updates"] == mid].set_index(["name", "length"])["masked"]
rise = {name: rate[(name, max(mask_lengths))] - rate[(name, min(mask_lengths))] for name in mask_modes}
product_two, geo_matched = list(mask_modes)[1:3]
claims.append(
    claim("product_mask_biased_by_length", f"sweep-addfmt-L7, sampler {mid} updates behind: rise of the dropped share "
          f"from n = {min(mask_lengths)} to {max(mask_lengths)} tokens, product [1/3, 3] − geometric (matched)",
          rise[product_two] - rise[geo_matched], ">=", 0.03))
claims.append(
    claim("r3_removes_routing_mismatch", f"{head}, bf16 sampler, {r3_prompts} prompts: mean per-token |Δ| with R3 ÷ "
          "without", r3_stats["bf16 + R3"]["tok_mean"] / r3_stats["bf16"]["tok_mean"], "<=", 0.98))
trl_band = corr[corr["band"].str.startswith("TRL")]
touched = float(trl_band[["masked_frac", "truncated_frac"]].max().max())
takeaway([
    f"On {head}, a bf16 sampler and the fp32 trainer disagree by {fmt(bf16['tok_mean'])} per token on average "
    f"(99th percentile {fmt(bf16['tok_p99'])}); an fp32 sampler's floor is {fmt(fp32['tok_mean'])}.",
    f"Per sequence the disagreement is smaller (p99 {fmt(bf16['seq_p99'])}), but GSPO's band is narrower still: with "
    f"π_old from the sampler GSPO clips {fmt(clip['gspo']['clip/token_frac'])} of tokens before any update, GRPO "
    f"{fmt(clip['grpo']['clip/token_frac'])}.",
    f"Training on those log-probs (stored runs, 10 seeds), in the book's words: {glance('5')['verdict']}.",
    f"The production alternative keeps π_old recomputed and weights each token by ρ = π_old / π_sampler; at TRL's "
    f"default band no mode masks or truncates more than {fmt(touched)} of this batch's tokens.",
    f"A lag is the mismatch that grows: {lags[-1]} rollout batches behind its sampler, GRPO's log-ratio spread is "
    f"{fmt(claims[-2].value)}× its synchronous value, and GSPO's band clips "
    f"{fmt(stale['gspo/behaviour']['clip/token_frac:mean'])} of the tokens (no lag: "
    f"{fmt(sync['gspo/behaviour']['clip/token_frac:mean'])}); held-out accuracy GRPO "
    f"{fmt(stale['grpo/behaviour']['eval/accuracy_sampled'])}, GSPO {fmt(stale['gspo/behaviour']['eval/accuracy_sampled'])}"
    f" (no lag: {fmt(sync['grpo/behaviour']['eval/accuracy_sampled'])}, "
    f"{fmt(sync['gspo/behaviour']['eval/accuracy_sampled'])}; means of {lag_n} seeds, finding 12 has the intervals).",
    f"What the stored lag runs show, in the book's words (finding 12): {prose('f12', 'story')}",
    f"Batch composition on this CPU: scoring in micro-batches of 1 and of 8 rows moves "
    f"{fmt(composition_stats['bf16']['seq_outside_gspo'])} of the responses outside GSPO's band in bf16 "
    f"({fmt(composition_stats['fp32']['seq_outside_gspo'])} in fp32), where the bf16 sampler moves "
    f"{fmt(bf16['seq_outside_gspo'])}: the GPU reports of a gap as large as the sampler's are not reproduced here. "
    "The CPU's bf16 kernels decide the first number (it is not the same on CPUs with and without bf16 matrix "
    "units), so the claim compares it with the sampler's share on the same machine.",
    f"Sequence masks read by length, a sampler {mid} updates behind: reading {min(mask_lengths)} tokens of a response "
    f"instead of {max(mask_lengths)}, the product mask [1/3, 3] drops {fmt(rate[(product_two, min(mask_lengths))])} "
    f"of the responses instead of {fmt(rate[(product_two, max(mask_lengths))])}, the geometric mask with the same "
    f"bounds at {max(mask_lengths)} tokens {fmt(rate[(geo_matched, min(mask_lengths))])} instead of "
    f"{fmt(rate[(geo_matched, max(mask_lengths))])}; TRL's one-sided default drops at most "
    f"{fmt(float(mask_rates[mask_rates['name'] == list(mask_modes)[0]]['masked'].max()))} at any drift and length here.",
    f"R3 on {head}: the fp32 trainer picks other experts than the bf16 sampler in "
    f"{fmt(float(r3['bf16']['per_layer'].min()))}-{fmt(float(r3['bf16']['per_layer'].max()))} of the (token, layer) "
    f"sets per layer; replaying the sampler's takes the mean per-token gap from {fmt(r3_stats['bf16']['tok_mean'])} to "
    f"{fmt(r3_stats['bf16 + R3']['tok_mean'])} and the largest from {fmt(r3_stats['bf16']['tok_max'])} to "
    f"{fmt(r3_stats['bf16 + R3']['tok_max'])}, while the responses outside GSPO's band go from "
    f"{fmt(r3_stats['bf16']['seq_outside_gspo'])} to {fmt(r3_stats['bf16 + R3']['seq_outside_gspo'])}.",
    f"A top-{top_k} sampler's own log-probs as π_old carry the kept mass: before any update GSPO clips "
    f"{fmt(first_update_clip(plain)['gspo']['clip/token_frac'])} of the tokens and GRPO "
    f"{fmt(first_update_clip(plain)['grpo']['clip/token_frac'])}; scoring on the sampler's kept tokens (sampling "
    f"replay) leaves a largest |log w| of {fmt(float(replayed.delta.abs().max()))}, the fp32 floor.",
], why="GSPO's ratio averages the engine's per-token rounding over the response, so the mismatch it sees is smaller, "
       "but its band is narrower too: whether the paper's 'use the engine's likelihoods' pays off is the stored "
       "experiment's verdict above, not an argument.", claims=claims)

# %% [markdown]
# ## Record results

# %% jupyter={"source_hidden": true}
numbers = {"stats": stats.to_dict(orient="index"), "first_update_clip": first, "train_verdict": str(train["verdict"]),
           "lag": {"lags": lags, "stale": stale, "sync": sync},
           "batch_composition": composition_stats,
           "mask_length": mask_rates.to_dict(orient="records"),
           "r3": {**r3_stats, "per_layer": {p: r3[p]["per_layer"].tolist() for p in r3}},
           "top_k": {name: {**topk_stats[name], **{o: d for o, d in topk_clip[name].items()}} for name in topk}}
results = record_results(results_path, "05_precision", claims, numbers, parameters=dict(checkpoints=checkpoints,
                                                                                        lag_seeds=lag_seeds))
