"""The research record: the book's pages — ``docs/findings.md`` (the overview), one page per finding
(``docs/f1_clipping.md`` …), ``docs/methods.md``, the story, glossary and recipe — generated from the stored results
(``data/results/``), so no page can drift from the data; the interval studies behind the page's intervals
(``intervals/``) and the provenance of every stored cell (``provenance``). It imports the library (``gspo_lab``: the
algorithms, the loop, the runner and the reader); the library never imports it (``tests/test_layout.py``).

    python -m gspo_record                 # regenerate docs/*.md, their figures and docs/findings.lock.json
    python -m gspo_record --check         # exit 1 if the committed page or a figure's input data differ
    python -m gspo_record --lint          # the referee lint over docs/*.md (text rules; build and --check run it too)
    python -m gspo_record provenance      # data/results/provenance.json (--check: compare with a regeneration)

The code follows the pages (issue 36): each finding has a room, a subpackage ``fN/`` holding its page's template
(``f2/f2_collapse.md`` renders ``docs/f2_collapse.md``) and the modules that compute it (its declared rules, its
numbers, its figures); the book's shared pages and their machinery sit at the top. Templates loop but never decide.

Finding rooms (page: modules)
f1/   f1_clipping.md     clipping — 1: clipping fractions and the ε sweep
f2/   f2_collapse.md     collapse — 2, 2b (MoE and dense); ten — 2g at ten seeds; search — 2c (the stability map);
                         spikes — 2d; candidate, mechanism — 2e (the clipped candidate, the interventions, the dose);
                         remeasure, late — 2f (endpoint v2, the primary endpoint, how runs die); plots (the map's and
                         the dose's figures, which notebook 04 shows too)
f3/   f3_volatility.md   volatility — 3: expert volatility
f4/   f4_replay.md       replay — 4: Routing Replay
f5/   f5_precision.md    precision — 5: the premise, training on bf16 log-probs, fresh seeds
f6/   f6_variance.md     variance — 6: gradient variance
f7/   f7_token_adv.md    token_adv — 7: GSPO-token with per-token advantages
f8/   f8_dense.md        dense — 8: dense vs MoE
f9/   f9_precursors.md   precursors — 9: frozen alarm rules scored on held-out runs
f10/  f10_why.md         runs (the section), why (its rules), ten, adam, branch, revert, dual, fresh, sgd, plots
f11/  f11_successors.md  successors, regimes (drift, knobs), corrections (the sampler corrections), arms, ladder
f12/  f12_stale.md       lag (its rules), lag_page, confirm (12b), isolate (12c), curves, widget (notebook 05's panel)

The shared pages and machinery
templates/     story.md, page.md (the overview), methods.md, glossary.md, recipe.md, bookkeeping.md, macros.md
page           compute → render → build / check; headline (the story's and At a glance's short forms), brief (each
               finding page's opening, read from its At a glance row), methods (the methods page's numbers),
               bookkeeping (the specs, the core set, provenance)
rules          Rule / Verdict, the shared collapse thresholds, the registry of every rule; robust, reread (the
               robustness readings, the verdicts a change of interval moved)
fmt, tables    how numbers appear (also the templates' filters); tables several findings read; figures (the per-seed
               and two-share figure kinds); endpoints (each endpoint's declared range)
lint           the referee lint: words that contradict their own numbers (``--lint``; pagetext reads a rendered
               page back into rows and sentences, facts holds what the build records of what it printed)
"""

from gspo_record.cli import main
from gspo_record.page import build, check

__all__ = ["build", "check", "main"]
