"""The methods page's own numbers (``docs/methods.md``, template ``templates/methods.md``): the interval study that
picks the page's interval, the per-comparison coverage, and the verdicts a change of interval moved. The methods page
also shows the robustness readings (:mod:`~gspo_record.robust`) and the bookkeeping
(:mod:`~gspo_record.bookkeeping`)."""

from __future__ import annotations

__all__ = ["stats_section", "RELABELLED", "departures"]

#: the labels that changed when the verdicts became statements (issue 48): (rule, outcome, before, after, why). No
#: rule's outcome changed; these are words that did not say what the number beside them shows
RELABELLED = (
    ("f12.gspo_vs_grpo", "up", "GSPO tolerates more lag", "GSPO's boundary at a larger lag",
     "the rule compares two largest tolerated lags, each read on the margin; it is not a difference between the arms, "
     "which the paired difference of their drops beside it now states on its own"),
    ("f12.gspo_vs_grpo", "down", "GRPO tolerates more lag", "GRPO's boundary at a larger lag",
     "as above: on the ladder to 32 the drops at lag 32 differ by an interval that holds 0"),
    ("f12.gspo_vs_grpo", "none", "no difference shown", "the same boundary",
     "it was printed beside a paired difference of drops whose interval excludes 0"),
    ("f12.corrections, f12.gspo_vs_grpo, f12c.isolate", "none, both at the ladder's top",
     "… (both tolerate every lag tried, up to 16)",
     "…: both tolerate every lag tried, with \"16 against 16\" beside it",
     "a boundary statement prints the two lags it compares; the paired difference of drops is a statement of "
     "its own"),
    ("f12.tolerates, f12c.lag32", "inconclusive, a gain past the margin", "inconclusive",
     "inconclusive (a gain past the margin)", "the words say which side of the margin the interval crossed"),
    ("f12.learning", "none, below the cold start", "learning nothing shown", "below the cold start",
     "an interval below the cold start's accuracy says so"),
    ("f10.two_by_two, f10t.two_by_two, f10y.two_by_two", "size / content / neither",
     "… no direction (norm) effect shown (with the null kind's sign counts)",
     "… its direction (norm) not shown to [protect], beside all four effects",
     "an effect shown below 0 is shown, not absent; the statement prints each effect's interval and sign count"),
    ("f11e.kl50", "crossing", "collapse sets in near this drift",
     "a logistic fit puts half the runs collapsed at this drift (a fit over the ladder, not a threshold)",
     "the rule fits a curve over every dose; the ladder's own warm-up runs collapse at other drifts, so it names no "
     "threshold"),
    ("f11e.kl50", "every outcome, read on the frozen flag", "… collapsed (\"no run collapsed\", …)",
     "… frozen (\"no run frozen\", …)", "the reading counts frozen runs; its words named collapsed ones"),
    ("collapse.class", "stable", "does not collapse", "stable",
     "the class holds up to 1 collapsed run in 5 (scaled to n); \"does not collapse\" stood beside counts of 1/5"),
    ("f11e.warmup", "saves", "warm-up saves it", "stable with warm-up (at most 1 in 5 collapsed)",
     "\"saves\" compares with the anchor, which the rule does not read: it reads the warm-up dose's collapse count "
     "(at most 1 of 5) beside the delay of its median onset"),
    ("f9.skill, f9v2.skill", "chance", "no better than chance shown", "not distinguished from chance",
     "the rule reads whether two rates' intervals overlap; \"better\" compares, and an overlap excludes no null"),
    ("f11f.mask", "supported", "supported: the mask saves CISPO",
     "supported: with the mask CISPO stayed stable (≤ 1/5 collapsed), without it it collapsed (≥ 4/5), and it did "
     "not end below GRPO",
     "\"saves\" is not what the rule reads: it reads two collapse counts and the mask arm's place against GRPO; "
     "\"did not collapse\" (the words before this) was printed beside a mask arm in which one run of five collapsed, "
     "which the rule counts as stable"),
    ("f11.position and the rules that read it", "every outcome", "… − GSPO: direction consistent (5/5 < 0) …",
     "the rule's words, beside both differences", "each difference prints its own interval and sign count"),
    ("f6.grows, f6b.grows", "none", "shows no trend with L (with length)", "no trend with L (with length) shown",
     "an interval that holds 0 shows no trend; it does not show that there is none"),
    ("f5.claim", "indistinct", "… GRPO and GSPO each end within 0.05 of their recomputed arms …",
     "… GRPO's and GSPO's mean differences from their recomputed arms lie within 0.05 … (the rule reads the means); "
     "the margin's number says when an interval reaches past it",
     "the rule reads each mean against the margin; GSPO's interval reaches past 0.05"),
    ("f5.confirm", "nothing, fresh interval away from 0", "nothing to confirm (fresh seeds: interval excludes 0)",
     "nothing to confirm on the first seeds; the fresh seeds alone show a difference above 0, … (post hoc)",
     "the fresh seeds' difference is a result of its own, read by no rule"),
    ("f3.factor", "raises / lowers / none", "… (intervals separated at k of n learning rates)",
     "… (above the base at lr 3.00e-04 only; no separated effect at the other 3 of 4 learning rates)",
     "\"raises it\" beside one separated learning rate of four read as an effect at all of them"),
    ("f3.factor", "raises / lowers", "raises it / lowers it", "higher where separated, lower nowhere / the mirror",
     "the rule reads k of n learning rates; \"raises it\" said of a variant separated at one of four reads as an "
     "effect at every learning rate"),
    ("f10.dual_cap, f10v.dual_cap", "higher / lower / none", "dual-clip adds protection beyond the cap / hurts "
     "under the cap / under the cap: no effect shown",
     "dual-clip under the cap ends higher / ends lower in late held-out accuracy / no difference in late held-out "
     "accuracy shown",
     "the rule reads a paired difference of late held-out accuracy; \"protection\" was printed beside collapse "
     "counts that were equal"),
)  # fmt: skip


def stats_section(rows: list[dict]) -> dict:
    """Stats version 4: the interval study behind the page's interval (its stored table, data/interval_study.csv,
    and the declared rule that picks from it), and the verdicts that moved from version 3's bootstrap-t."""
    from gspo_lab.experiments.stats import PAGE_INTERVAL, STATS_VERSION
    from gspo_record.intervals import comparison_coverage
    from gspo_record.intervals import interval_study as study
    from gspo_record.reread import T_DECLARED_SPECS
    from gspo_record.rules import RULES

    table = study.stored()
    choice = study.choose(table)
    if choice.method != PAGE_INTERVAL:  # the page's interval is the rule's pick, or the build stops
        raise RuntimeError(f"the interval study's rule picks {choice.method!r}, the page uses {PAGE_INTERVAL!r}")
    wide = study.wide(table)
    label = lambda rule, key: RULES[rule].outcomes.get(key, key)  # noqa: E731
    changed = [[f"`{r['rule']}`", w or f"reading {i + 1}", label(r["rule"], a), label(r["rule"], b)]
               for r in rows for i, w, a, b in r["changed"]]  # fmt: skip
    inputs = study.summarise(table)
    return {
        "version": STATS_VERSION,
        "interval": PAGE_INTERVAL.replace("_", " "),
        "methods": [m.replace("_", " ") for m in wide.columns],
        "study": [
            [group, pop, n, *row] for (group, pop, n), row in zip(wide.index, wide.to_numpy().tolist(), strict=True)
        ],
        "inputs": [
            [m.replace("_", " "), f"{r.min_coverage:.3f}", f"{r.max_leaves:.1%}", f"{r.power:.3f}", f"{r.width:.3f}"]
            for m, r in inputs.iterrows()
        ],  # fmt: skip
        "outcome": choice.outcome,
        "passing": [m.replace("_", " ") for m in choice.passing],
        "floor": study.COVERAGE_FLOOR,
        "t_specs": list(T_DECLARED_SPECS),
        "changed": changed,
        "read": sum(r["read"] for r in rows),
        "per_comparison": comparison_coverage.summary(),
        "relabelled": [[f"`{rule}`" if "," not in rule else ", ".join(f"`{r.strip()}`" for r in rule.split(",")),
                        outcome, before, after, why] for rule, outcome, before, after, why in RELABELLED],
    }  # fmt: skip


#: the trend rules whose declared interval the page departs from (issue 48, item 5): (rule, section, its key, where)
TRENDS = (("f6.grows", "f6", "grows", "noise ratio against L"),
          ("f6b.grows", "f6b", "grows", "noise ratio against response length"),
          ("f6c.gap_grows", "f6c_confirm", "grows", "GSPO − GRPO gap against length, fresh seeds"),
          ("f6c.gap_grows", "f6c_confirm", "secondary", "GRPO token-mean − GRPO gap, fresh seeds"))  # fmt: skip


def departures(ctx: dict) -> list[list[str]]:
    """The methods page's departures from a declared method: each trend rule read on the per-seed slopes' t interval
    (the page's reading) beside the declared percentile bootstrap within lengths."""
    from gspo_record.rules import RULES

    rows = []
    for rule, section, key, where in TRENDS:
        page, declared = ctx[section][key], ctx[section].get(f"{key}_declared", "—")
        words = RULES[rule].outcomes
        read = page.rule_outcome  # the rule's outcome the page's statement reads as
        rows.append([f"`{rule}`", where, words.get(declared, declared), words.get(read, read),
                     "same" if declared == read else "**changed**"])  # fmt: skip
    return rows
