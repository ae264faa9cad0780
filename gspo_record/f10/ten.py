"""Finding 10's norm × direction 2×2 at ten seeds (issue 22): ``f10_direction_norm``'s seeds 30-34 pooled with the
fresh seeds 60-64 of ``data/specs/f10t_two_by_two_ten.toml``; and skip vs shrink the same way (``f10_shrink_skip``'s
seeds 30-34 with ``data/specs/f10u_shrink_skip_ten.toml``'s 60-64, rule ``f10u.skip_shrink``: SKIP − SHRINK by the
Student-t interval over the ten seeds, with the same robustness re-readings).

Rule ``f10t.two_by_two`` per model: ``f10.two_by_two``'s outcomes and logic on the ten seeds, each of the four paired
effects *higher* when its 95 % Student-t interval lies above 0 (:func:`gspo_lab.experiments.stats.declared_t_sign`:
Student-t as declared through stats version 3, the page's transformed t from version 4). Declared with it: re-read
with each seed left out, on training-reward AUC and on the final evaluation alone; a verdict that changes under any of
them is *fragile*. Beside it, the fresh seeds alone under the same rule.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial

import pandas as pd

import gspo_lab.experiments.reading as reading
from gspo_lab.experiments.stats import paired_diff
from gspo_record.f10.two_by_two import declared_interval
from gspo_record.f10.why import (
    ACCOUNT,
    EFFECTS,
    SKIP_SHRINK,
    SPECS,
    TWO_BY_TWO,
    _signed,
    account_verdict,
    effects,
    two_by_two_verdict,
)
from gspo_record.fmt import diff_cell, robustness
from gspo_record.rules import PENDING, Rule, register
from gspo_record.tables import progress, spec

__all__ = [
    "TEN",
    "SKIP_TEN",
    "ACCOUNT_TEN",
    "ten_account_verdict",
    "ten_verdict",
    "robust_ten",
    "section",
    "skip_ten_verdict",
    "robust_skip",
    "skip_section",
    "reread_flips",
    "paired_flips",
]

SEEDS = 10


def ten_rule(name: str, like: Rule, spec_name: str, marker: str) -> Rule:
    """A ten-seed reading's rule, registered: ``like``'s outcomes read with the Student-t interval its spec
    ``spec_name`` declared before its runs; ``marker`` is the spec's text that introduced it. It supersedes ``like``
    (a summary reading ``like`` beside it fails the referee lint)."""
    declared = f"data/specs/{spec_name}.toml, before its runs (Student-t interval, ten seeds)"
    return register(Rule(name, "10", dict(like.outcomes), {"LEVEL": 0.95}, declared, marker, specs=(spec_name,),
                         null=like.null, null_count=like.null_count, supersedes=(like.name,),
                         reads=like.reads))  # fmt: skip


TEN = ten_rule("f10t.two_by_two", TWO_BY_TWO, SPECS["ten"], "Rule f10t.two_by_two per model, declared here")


def ten_verdict(diffs: dict[str, pd.Series], id: str = "f10t.two_by_two"):
    """Rule ``f10t.two_by_two`` on the four effects' per-seed differences: statement ``id``."""
    return two_by_two_verdict(diffs, TEN, declared_interval, id)


def reread_flips(read, m: pd.DataFrame, outcome: str, name=lambda v: v.label) -> list[str]:
    """The declared re-readings under which ``read(runs, column) -> Verdict`` leaves ``outcome``: training-reward AUC,
    the final evaluation alone, and late accuracy with each seed left out."""
    flips = []
    with reading.inner():
        for what, column in (("training-reward AUC", "reward_auc"), ("final evaluation", "eval_final")):
            if (other := read(m, column)).outcome != outcome:
                flips.append(f"{what}: {name(other)}")
        for seed in sorted(m["seed"].unique()):
            if (other := read(m[m["seed"] != seed], "late_acc")).outcome != outcome:
                flips.append(f"without seed {seed}: {name(other)}")
    return flips


def paired_flips(measure, judge, m: pd.DataFrame, outcome: str, name=lambda v: v.label) -> list[str]:
    """:func:`reread_flips` of ``read(runs, column) = judge(measure(runs, column))``, where ``measure`` gives per-seed
    values indexed by seed (a Series, or a tuple or dict of them), each seed's entry read from that seed's runs alone
    (:func:`~gspo_lab.experiments.stats.paired_diff`): a seed left out drops its entry, so the leave-one-out readings
    drop it from the late-accuracy measure rather than measure every table without it (the same values, a fraction
    of the time)."""
    flips = []
    with reading.inner():
        for what, column in (("training-reward AUC", "reward_auc"), ("final evaluation", "eval_final")):
            if (other := judge(measure(m, column))).outcome != outcome:
                flips.append(f"{what}: {name(other)}")
        late = measure(m, "late_acc")
        for seed in sorted(m["seed"].unique()):
            if (other := judge(_without(late, seed))).outcome != outcome:
                flips.append(f"without seed {seed}: {name(other)}")
    return flips


def _without(measured, seed):
    """``measured`` (:func:`paired_flips`) with ``seed``'s entries dropped."""
    if isinstance(measured, dict):
        return {k: _without(v, seed) for k, v in measured.items()}
    if isinstance(measured, tuple):
        return tuple(_without(v, seed) for v in measured)
    return measured.drop(seed, errors="ignore")


def robust_ten(m: pd.DataFrame, read=ten_verdict, seeds: int = SEEDS) -> tuple:
    """(verdict, flips) on one model's pooled 2×2 runs (arm_id A-D, seed, late_acc, reward_auc, eval_final):
    ``read`` (the four effects -> Verdict; default ``f10t.two_by_two``) with the declared re-readings, provisional
    below ``seeds`` seeds per arm."""
    verdict = read(effects(m))
    if verdict.outcome == PENDING:
        return verdict, []
    flips = paired_flips(effects, read, m, verdict.outcome, lambda v: v.label.split(":")[0])
    done = m.groupby("arm_id")["seed"].nunique().min() if len(m) else 0
    if done < seeds:
        verdict = replace(verdict, provisional=f"{done} of {seeds} seeds finished")
    return verdict, flips


def section(table: pd.DataFrame) -> dict:
    """The ten-seed reading from finding 10's runs table (:func:`gspo_record.f10.runs.runs`)."""
    rows, verdicts = [], []
    pool = table[table["source"].isin([SPECS["two"], SPECS["ten"]]) & table["arm_id"].isin(list("ABCD"))]
    for model, m in pool.groupby("model", sort=False):
        verdict, flips = robust_ten(m, partial(ten_verdict, id=f"f10t.two_by_two.{model}"))
        fresh = ten_verdict(effects(m[m["source"] == SPECS["ten"]]), f"f10t.fresh.{model}")
        cells = [diff_cell(d) for d in effects(m).values()]
        sure = robustness(flips)
        rows.append([model, *cells, verdict.short, fresh.label.split(":")[0], sure])
        verdicts.append({"model": model, "verdict": verdict, "sure": "fragile" if flips else "robust"})
    header = ["model", *EFFECTS, "f10t.two_by_two (seeds 30-34 + 60-64)", "fresh seeds alone", "robustness"]
    return {"progress": progress(spec(SPECS["ten"])), "rows": rows, "verdicts": verdicts, "header": header}


SKIP_TEN = ten_rule(
    "f10u.skip_shrink", SKIP_SHRINK, SPECS["shrink_ten"], "Rule f10u.skip_shrink per model, declared here"
)


def skip_ten_verdict(diff: pd.Series, id: str = "f10u.skip_shrink"):
    """Rule ``f10u.skip_shrink`` on per-seed SKIP − SHRINK differences (pending without two seeds): statement ``id``."""
    return _signed(SKIP_TEN, diff, declared_interval, id)


def robust_paired(m: pd.DataFrame, arm: str, base: str, read) -> tuple:
    """(verdict, flips, difference): ``read`` (per-seed differences -> Verdict) on ``arm`` − ``base`` of late
    accuracy over the pooled runs ``m`` (seed, late_acc, reward_auc, eval_final), with the declared re-readings
    (:func:`reread_flips`); provisional below :data:`SEEDS` paired seeds."""
    diff = paired_diff(m, arm, base, "late_acc")
    verdict = read(diff)
    if verdict.outcome == PENDING:
        return verdict, [], diff
    flips = paired_flips(lambda runs, column: paired_diff(runs, arm, base, column), read, m, verdict.outcome)
    if len(diff) < SEEDS:
        verdict = replace(verdict, provisional=f"{len(diff)} of {SEEDS} seeds finished")
    return verdict, flips, diff


def robust_skip(m: pd.DataFrame, id: str = "f10u.skip_shrink") -> tuple:
    """(verdict, flips, difference) on one model's pooled SKIP and SHRINK runs: leave-one-seed-out, training-reward
    AUC and the final evaluation alone, as declared; statement ``id``."""
    return robust_paired(m, "SKIP", "SHRINK", partial(skip_ten_verdict, id=id))


def skip_section(table: pd.DataFrame) -> dict:
    """Skip vs shrink at ten seeds from finding 10's runs table (:func:`gspo_record.f10.runs.runs`)."""
    rows, verdicts = [], []
    sources = [SPECS["shrink"], SPECS["shrink_ten"]]
    pool = table[table["source"].isin(sources) & table["arm_id"].isin(["SKIP", "SHRINK"])]
    for model, m in pool.groupby("model", sort=False):
        verdict, flips, diff = robust_skip(m, f"f10u.skip_shrink.{model}")
        fresh_diff = paired_diff(m[m["source"] == SPECS["shrink_ten"]], "SKIP", "SHRINK", "late_acc")
        fresh = skip_ten_verdict(fresh_diff, f"f10u.fresh.{model}")
        counts = [
            f"{int(g['collapsed'].sum())}/{len(g)}" for arm in ("SKIP", "SHRINK") for g in [m[m["arm_id"] == arm]]
        ]
        shares = [
            f"{m[m['arm_id'] == 'SKIP']['skipped'].mean():.1%}",
            f"{m[m['arm_id'] == 'SHRINK']['capped'].mean():.1%}",
        ]
        sure = robustness(flips)
        rows.append([model, diff_cell(diff), verdict.short, fresh.label, sure, *counts, *shares])
        verdicts.append({"model": model, "verdict": verdict, "sure": "fragile" if flips else "robust"})
    header = ["model", "SKIP − SHRINK, seeds 30-34 + 60-64", "f10u.skip_shrink", "fresh seeds alone", "robustness",
              "collapsed, SKIP", "collapsed, SHRINK", "updates skipped", "updates capped"]  # fmt: skip
    return {"progress": progress(spec(SPECS["shrink_ten"])), "rows": rows, "verdicts": verdicts, "header": header}


ACCOUNT_TEN = register(
    Rule(
        "f10t.account",
        "10",
        {
            "both": "both accounts carry part: the ten-seed 2×2 reads size or both, and content shows (the 2×2, "
            "skipping over shrinking, or GSPO's lead under equal relative caps)",
            "size": "size: the ten-seed 2×2 reads size; content shown by none of the 2×2, skip vs shrink or equal "
            "relative caps",
            "content": "content: content shows; the ten-seed 2×2 reads neither size nor both",
            "neither": "neither account shown",
        },
        {},
        declared="gspo_record/f10/ten.py, after the results (post hoc)",
        marker="def ten_account_verdict(two_by_two: Verdict, skip_shrink: Verdict, relative: Verdict)",
        specs=(SPECS["ten"], SPECS["shrink_ten"]),
        post_hoc=True,
        supersedes=(ACCOUNT.name,),
    )
)


def ten_account_verdict(two_by_two, skip_shrink, relative, id: str = "f10t.account"):
    """``f10t.account`` (post hoc): ``f10.account``'s combination on the declared ten-seed readings where they exist —
    ``f10t.two_by_two``, ``f10u.skip_shrink`` — and ``f10.relative`` (seeds 30-34; no ten-seed reading of it): a
    joint statement of their numbers. Supersedes ``f10.account``, which read the five-seed verdicts. Its words say
    what each part showed, not the account's absences (issue 35)."""
    parts = (two_by_two, skip_shrink, relative)
    if any(v.outcome == PENDING for v in parts):
        return ACCOUNT_TEN.verdict(PENDING)
    tests = (("the 2×2", two_by_two.outcome in ("content", "both")),
             ("skipping over shrinking", skip_shrink.rule_outcome == "higher"),
             ("GSPO's lead under equal relative caps", relative.rule_outcome == "higher"))  # fmt: skip
    shows = [words for words, on in tests if on]
    said = " and ".join(shows) or "none of the 2×2, skip vs shrink or equal relative caps"
    words = {o: f"{text.split(':')[0]}, with the ten-seed 2×2 reading {two_by_two.outcome}: content shown by {said}"
             for o, text in ACCOUNT_TEN.outcomes.items()}  # fmt: skip
    verdict = account_verdict(*parts, rule=ACCOUNT_TEN, id=id, words=words)
    notes = "; ".join(v.provisional for v in parts if v.provisional)
    return replace(verdict, provisional=notes) if notes else verdict
