"""The findings pages: ``docs/findings.md`` (the overview), one page per finding (``docs/f1_clipping.md`` …),
``docs/methods.md``, the story, glossary and recipe, generated from the stored results (``data/results/``), so no page
can drift from the data.

    python -m gspo_lab.findings            # regenerate docs/*.md, their figures and docs/findings.lock.json
    python -m gspo_lab.findings --check    # exit 1 if the committed page or a figure's input data differ
    python -m gspo_lab.findings --lint     # the referee lint over docs/*.md (text rules; build and --check run it too)

One module per finding (its declared rules, its numbers, its figure), the rules' machinery and shared thresholds in
:mod:`~gspo_lab.findings.rules`, the prose in Markdown templates (``templates/``) that loop but never decide:

rules          Rule / Verdict, the shared collapse thresholds, the registry of every rule
fmt            how numbers appear (also the templates' filters)
tables         tables several findings read (progress, arms, collapse rows, spikes)
f1_clipping    1: clipping fractions and the ε sweep
f2_collapse    2, 2b: collapse in the confirmed regime, MoE and dense
f2_search      2c: the search for the target regime, the stability map
f2_spikes      2d: gradient-norm spikes (post hoc)
f2_candidate   2e: the clipped candidate on fresh seeds, its reward lead and its confirmation
f2_mechanism   2e: the interventions, the dose
f2_remeasure   2f: finding 2 re-measured under endpoint v2: what changed, the primary endpoint, how runs die
f3_volatility  3: expert volatility
f4_replay      4: Routing Replay
f5_precision   5: precision (premise, training on bf16 log-probs, fresh seeds)
f6_variance    6: gradient variance
f7_token_adv   7: GSPO-token with per-token advantages
f8_dense       8: dense vs MoE
f9_precursors  9: what comes before a collapse (frozen alarm rules scored on held-out runs)
bookkeeping    the specs, the core set, provenance
page           compute → render → build / check
lint           the referee lint: words that contradict their own numbers (``--lint``; pagetext reads a rendered
               page back into rows and sentences, facts holds what the build records of what it printed)
"""

from gspo_lab.findings.cli import main
from gspo_lab.findings.page import build, check

__all__ = ["build", "check", "main"]
