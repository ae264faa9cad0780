"""Finding 2f: finding 2's cells re-measured under endpoint v2 (findings part 2) — what changed, the primary endpoint,
and how the runs die.

The first measurement (:data:`~gspo_record.tables.FIRST`) flagged a run collapsed when its last evaluation (one
sample of 64 prompts) fell below 0.5 × its own first (another single sample). Endpoint v2
(:func:`gspo_lab.experiments.summary.endpoint_v2`, declared before the re-measured runs in ``data/specs/f2r_*.toml``)
scores 128 prompts × 2 samples per evaluation, sets the threshold at 0.5 × the pooled cold start, asks for the last
two evaluations below it, and makes late held-out accuracy the primary endpoint.

Rule ``f2s.robust`` (:func:`robust_verdict`, set after the first results: post hoc): a declared verdict is *the same*
on the re-measured cells when its rule gives the same outcome there, else it *changed*. The primary endpoint's
comparisons (rule ``f2r.late``) are in :mod:`gspo_record.f2.late`.
Rule ``f2f.last`` (:func:`last_verdict`, set after the re-measured results: post hoc): a changed verdict *turns on the
runs' last evaluation* when the same rule, with a run counted collapsed as soon as its last evaluation alone lies below
v2's threshold, gives the first measurement's outcome back (runs falling at the end of the run, which v2's two-
evaluation flag cannot yet call); else the change *holds with the last evaluation alone*.
"""

from __future__ import annotations

import pandas as pd

import gspo_record.f2.candidate as f2_candidate
import gspo_record.f2.collapse as f2_collapse
import gspo_record.f2.mechanism as f2_mechanism
from gspo_record.fmt import mean_ci, num, summary
from gspo_record.rules import PENDING, Rule, Verdict, register
from gspo_record.tables import (
    F2,
    FIRST,
    MODELS,
    declared,
    mechanism_table,
    spec,
    spike_table,
    with_base,
    with_labels,
)

__all__ = ["ROBUST", "LAST", "robust_verdict", "last_verdict", "family", "verdict_rows", "section"]

ROBUST = register(
    Rule(
        "f2s.robust",
        "2f",
        {"same": "the same", "flips": "changed"},
        {},
        declared="gspo_record/f2/remeasure.py, after the first measurement's results (post hoc)",
        marker="def robust_verdict(declared: Verdict, two: Verdict) -> Verdict",
        specs=tuple(FIRST.values()) + tuple(F2.values()),
        post_hoc=True,
    )
)
LAST = register(
    Rule(
        "f2f.last",
        "2f",
        {"last": "turns on the runs' last evaluation", "holds": "holds with the last evaluation alone"},
        {},
        declared="gspo_record/f2/remeasure.py, after the re-measured results (post hoc)",
        marker="def last_verdict(first: Verdict, last: Verdict) -> Verdict",
        specs=tuple(F2.values()),
        post_hoc=True,
    )
)
_MODE = ("truncated", "length", "zero_std")


def robust_verdict(declared: Verdict, two: Verdict) -> Verdict:
    """``f2s.robust``: whether a rule's outcome on the re-measured counts equals its outcome on the first ones."""
    if PENDING in (declared.rule_outcome, two.rule_outcome):
        return ROBUST.verdict(PENDING)
    return ROBUST.verdict("same" if declared.rule_outcome == two.rule_outcome else "flips")


def last_verdict(first: Verdict, last: Verdict) -> Verdict:
    """``f2f.last`` on a changed verdict: ``first`` the first measurement's outcome, ``last`` the same rule's on the
    re-measured runs with v2's flag relaxed to the last evaluation alone."""
    if PENDING in (first.rule_outcome, last.rule_outcome):
        return LAST.verdict(PENDING)
    return LAST.verdict("last" if first.rule_outcome == last.rule_outcome else "holds")


def family(names: dict[str, str] = F2) -> pd.DataFrame:
    """Every confirmation run of one measurement of finding 2's M = 16 family (2, 2b, 2e, the dose and its fresh
    seeds), with the collapse flag its endpoint declares (and, for endpoint v2, its late accuracy and mode)."""
    s = spec(names["dose_confirm"])
    fresh = with_base(s, spike_table(s), ("objective", "grad_clip"))
    fresh = fresh.assign(model=fresh["checkpoint"].map(MODELS), source=s.name)
    return pd.concat([mechanism_table(names), with_labels(fresh)], ignore_index=True)


def _counted(groups: dict[str, pd.DataFrame], flag: str) -> tuple[list[int], str]:
    counts, said = [], []
    for label, g in groups.items():
        k, n = int(g[flag].sum()), len(g)
        counts += [k, n]
        said.append(f"{label} {k}/{n}".strip())
    return counts, ", ".join(said)


def verdict_rows(names: dict[str, str], flag: str = "collapsed") -> list[dict]:
    """Each declared collapse verdict of 2, 2b and 2e on one measurement, the runs counted collapsed by column
    ``flag``: ``{rule, where, counts, verdict}``."""
    t, rows = family(names), []

    def add(rule, where, judge, groups):
        counts, said = _counted(groups, flag)
        rows.append({"rule": rule, "where": where, "counts": said, "verdict": judge(*counts)})

    for model, m in t[t.source.isin([names["moe"], names["dense"]])].groupby("model", sort=False):
        for clip in ("off", "1"):
            arms = {o.upper(): m[(m.objective == o) & (m["clip"] == clip)] for o in ("grpo", "gspo")}
            add(
                "f2.collapse",
                f"{model}, grad clip {clip}",
                lambda *c, i=f"f2f.{flag}.{model}.{clip}": f2_collapse.collapse_verdict(*c, 5, i),
                arms,
            )
    for model, m in t[t.source.isin([names["mechanism"], names["dose"]])].groupby("model", sort=False):
        for (objective, clip), r in f2_mechanism.INTERVENTIONS.items():
            arm = m[(m.objective == objective) & (m["clip"] == clip)]
            peak = arm["peak"].median()
            i = f"f2f.{flag}.{r.name}.{model}"
            add(r.name, model, lambda k, n, r=r, p=peak, i=i: f2_mechanism.intervention_verdict(r, k, n, p, n, i),
                {"": arm})  # fmt: skip
    dense = t[(t.source == names["dense"]) & (t.objective == "grpo") & (t["clip"] == "off")]
    add(
        "f2.dense",
        "dense GRPO, grad clip off",
        lambda k, n: f2_collapse.dense_verdict(k, n, n, f"f2f.{flag}.dense"),
        {"": dense},
    )
    cand = declared(spec(names["candidate"]))
    if flag not in cand:
        cand = cand.assign(**{flag: cand["collapsed"]})
    arms = {o.upper(): cand[cand.objective == o] for o in ("grpo", "gspo")}
    add("f2.target", "moe-sort, grad clip 1, M 8, lr 1e-4",
        lambda *c, i=f"f2f.{flag}.target": f2_candidate.target_verdict(*c, 5, i), arms)  # fmt: skip
    fresh = t[t.source == names["dose_confirm"]]
    models = {m: fresh[fresh.model == m] for m in ("MoE", "dense")}
    add("f2e.dose_confirm", "seeds 15-19",
        lambda *c, i=f"f2f.{flag}.dose_confirm": f2_mechanism.dose_confirm_verdict(*c, 0, i), models)  # fmt: skip
    return [row for row in rows if row["verdict"].rule_outcome != PENDING]


def _comparison(first: list[dict], again: list[dict], last: list[dict]) -> list[dict]:
    """The first measurement's verdicts beside the re-measured ones, rule by rule; a changed verdict with its
    ``f2f.last`` reading (``last``: the re-measured verdicts with the last evaluation alone counting)."""
    by = {(r["rule"], r["where"]): r for r in first}
    alone = {(r["rule"], r["where"]): r for r in last}
    rows = []
    for r in again:
        f = by.get((r["rule"], r["where"]))
        if f is None:
            continue
        robust = robust_verdict(f["verdict"], r["verdict"])
        one = alone[(r["rule"], r["where"])]
        why = last_verdict(f["verdict"], one["verdict"]) if robust.outcome == "flips" else None
        rows.append(
            {"rule": r["rule"], "where": r["where"], "first": f, "again": r, "last": one, "robust": robust, "why": why}
        )
    return rows


def _comparison_row(c: dict) -> list:
    why = f"{c['robust'].label}: {c['why'].label}" if c["why"] else c["robust"].label
    return [
        f"`{c['rule']}`",
        c["where"],
        c["first"]["counts"],
        c["first"]["verdict"].label,
        c["again"]["counts"],
        c["again"]["verdict"].label,
        c["last"]["counts"],
        why,
    ]


def _arm_rows(t: pd.DataFrame) -> list[list]:
    rows = []
    for (source, model, _, arm, clip), g in t.groupby(["source", "model", "order", "arm", "clip"], sort=False):
        rows.append(
            [
                model,
                arm,
                clip,
                f"`{source}`",
                len(g),
                f"{int(g['collapsed_v1'].sum())}/{len(g)}",
                f"{int(g['collapsed'].sum())}/{len(g)}",
                f"{int(g['collapsed_last'].sum())}/{len(g)}",
                mean_ci(summary(g["late_acc"])),
                mean_ci(summary(g["reward_auc"])),
            ]
        )
    return rows


def _dual(t: pd.DataFrame) -> list[dict]:
    """Per model: GRPO without clip, GRPO + dual-clip and GSPO side by side (seeds 10-14): largest update's norm
    (median over runs), final and late held-out accuracy (mean), runs whose last evaluation lies below v2's
    threshold."""
    out = []
    for model, m in t[t["source"] != F2["dose_confirm"]].groupby("model", sort=False):
        arms = {}
        for name, objective in (("grpo", "grpo"), ("dual", "grpo_dual_clip"), ("gspo", "gspo")):
            g = m[(m.objective == objective) & (m["clip"] == "off")]
            arms[name] = {
                "peak": num(g["peak"].median()),
                "final": num(g["eval_final"].mean()),
                "late": num(g["late_acc"].mean()),
                "last": f"{int(g['collapsed_last'].sum())}/{len(g)}",
            }
        out.append({"model": model, **arms})
    return out


def _when_last(comparison: list[dict]) -> str:
    """`` (rule `f2f.last` (post hoc…))`` when some changed verdict has an ``f2f.last`` reading, else ``""``."""
    read = [c["why"] for c in comparison if c["why"]]
    return f" (rule `f2f.last`{read[0].when})" if read else ""


def _dual_note(comparison: list[dict]) -> str:
    """2e's sentence on the dual-clip verdicts against the first measurement, read by ``f2f.last``."""
    changed = [c for c in comparison if c["why"] and c["rule"] == "f2e.dual_clip"]
    if not changed:
        return "The dual-clip verdicts are the first measurement's (2f)."
    said = "; ".join(
        f"{c['where']}: {c['why'].label}, {c['last']['counts']} by the last evaluation alone" for c in changed
    )
    when = changed[0]["why"].when
    note = f"The dual-clip verdict changed against the first measurement ({said}; rule `f2f.last`{when}, 2f)."
    if any(c["why"].outcome == "last" for c in changed):
        note += (
            " Where the change turns on the last evaluation, the declared rule's reading rests on v2's"
            " two-evaluation flag, which counts a run that falls at its last evaluation as not (yet) collapsed: a"
            " run's end censors it."
        )
    return note


def _mode_rows(t: pd.DataFrame) -> list[list]:
    rows = []
    for (model, objective, collapsed), g in t.groupby(["model", "objective", "collapsed"], sort=False):
        cells = [
            f"{num(g[f'{n}_early'].median())} → {num(g[f'{n}_late'].median())} "
            f"[{num(g[f'{n}_late'].min())}–{num(g[f'{n}_late'].max())}]"
            for n in _MODE
        ]
        rows.append(
            [
                model,
                objective.upper().replace("_DUAL_CLIP", " + dual-clip"),
                "collapsed" if collapsed else "not collapsed",
                len(g),
                *cells,
            ]
        )
    return rows


def section() -> tuple[dict, dict]:
    t = family(F2)
    first, again = verdict_rows(FIRST), verdict_rows(F2)
    comparison = _comparison(first, again, verdict_rows(F2, "collapsed_last"))
    ctx = {
        "rows": _arm_rows(t),
        "comparison": [_comparison_row(c) for c in comparison],
        "changed": [
            f"`{c['rule']}` ({c['where']}): {c['first']['verdict'].label} → {c['again']['verdict'].label} "
            f"({c['why'].label}: {c['last']['counts']} by the last evaluation alone)"
            for c in comparison
            if c["why"]
        ],
        "changed_rule": _when_last(comparison),
        "dual": _dual(t),
        "dual_note": _dual_note(comparison),
        "n_verdicts": len(comparison),
        "mode": _mode_rows(t),
        "window": 10,
        "v2": {
            name: num(v)
            for name, v in (
                ("moe", t[t.model == "MoE"]["threshold"].iloc[0]),
                ("dense", t[t.model == "dense"]["threshold"].iloc[0]),
            )
        },
    }
    return ctx, {}
