"""Finding 2f: how much finding 2's verdicts lean on the declared collapse endpoint — a sensitivity check on the
stored runs, labelled so (findings part 2 makes a ≥ 256-sample endpoint the declared one and re-measures).

The declared flag reads one τ = 1 sample of 64 prompts at the last evaluation against 0.5 × another single sample at
rollout 0. Beside it, from the same stored evaluation rows (:func:`gspo_lab.experiments.summary.endpoints`): the
*two-evaluation* rule (the last two evaluations both below the threshold) and *late held-out accuracy* (the mean of
the evaluations at rollouts ≥ 40 of 80), compared between arms per seed; and how the runs die (truncation, response
length, zero-std groups early vs late: a description).

Rule ``f2s.robust`` (:func:`robust_verdict`): a declared verdict is *the same* under the two-evaluation rule when the
rule gives the same outcome on the two-evaluation counts, else it *flips*. Rule ``f2s.late_diff``
(:func:`late_diff_verdict`): an arm's late held-out accuracy minus its comparison arm's, paired by seed, is *higher* /
*lower* when its 95 % interval excludes 0, else *no difference shown*. Both set after the results (post hoc).
"""

from __future__ import annotations

import pandas as pd

import gspo_lab.findings.f2_candidate as f2_candidate
import gspo_lab.findings.f2_collapse as f2_collapse
import gspo_lab.findings.f2_mechanism as f2_mechanism
from gspo_lab.experiments.stats import interval_sign, paired_diff
from gspo_lab.experiments.store import finished, load_result, results_dir
from gspo_lab.experiments.summary import endpoints
from gspo_lab.findings.fmt import diff_cell, mean_ci, num, summary
from gspo_lab.findings.rules import PENDING, Rule, Verdict, register
from gspo_lab.findings.tables import mechanism_table, spec, spike_table, with_base, with_endpoints, with_labels

__all__ = ["ROBUST", "LATE_DIFF", "robust_verdict", "late_diff_verdict", "family", "section"]

_POST_HOC = "gspo_lab/findings/f2_sensitivity.py, after the results (post hoc)"
_FAMILY = ("f2_collapse_moe", "f2_collapse_dense", "f2_mechanism", "f2_clip_dose", "f2_clip_dose_confirm")
ROBUST = register(
    Rule(
        "f2s.robust",
        "2f",
        {"same": "the same", "flips": "flips"},
        {},
        declared=_POST_HOC,
        marker="def robust_verdict(declared: Verdict, two: Verdict) -> Verdict",
        specs=_FAMILY,
        post_hoc=True,
    )
)
LATE_DIFF = register(
    Rule(
        "f2s.late_diff",
        "2f",
        {"higher": "higher", "lower": "lower", "none": "no difference shown"},
        {"LEVEL": 0.95},
        declared=_POST_HOC,
        marker="def late_diff_verdict(diff: pd.Series) -> Verdict",
        specs=_FAMILY,
        post_hoc=True,
    )
)
#: early and late windows of a run for the collapse mode (rollouts from the start / before the end)
MODE_WINDOW = 10
_MODE = {
    "truncated": "response/truncated_frac:mean",
    "length": "response/length:mean",
    "zero_std": "adv/zero_std_frac:mean",
}


def robust_verdict(declared: Verdict, two: Verdict) -> Verdict:
    """``f2s.robust``: whether a rule's outcome on the two-evaluation counts equals its declared outcome."""
    if PENDING in (declared.outcome, two.outcome):
        return ROBUST.verdict(PENDING)
    return ROBUST.verdict("same" if declared.outcome == two.outcome else "flips")


def late_diff_verdict(diff: pd.Series) -> Verdict:
    """``f2s.late_diff`` on per-seed differences of late held-out accuracy."""
    if len(diff) < 2:
        return LATE_DIFF.verdict(PENDING)
    return LATE_DIFF.verdict({1: "higher", -1: "lower", 0: "none"}[interval_sign(diff)])


def _run_details(source: str, key: str) -> dict:
    result = load_result(results_dir(source) / f"{key}.json.gz")
    pr = pd.DataFrame({k: pd.Series(v, dtype=float) for k, v in result["per_rollout"].items() if k in _MODE.values()})
    mode = {
        f"{name}_{when}": float(part[col].mean())
        for name, col in _MODE.items()
        for when, part in (("early", pr.head(MODE_WINDOW)), ("late", pr.tail(MODE_WINDOW)))
    }
    return {**endpoints(result), **mode}


def family() -> pd.DataFrame:
    """Every confirmation run of finding 2's M = 16 family (2, 2b, 2e, the dose and its fresh seeds): arm, grad
    clip, model, seed, the declared flag, the sensitivity endpoints and the collapse-mode windows."""
    t = mechanism_table()
    s = spec("f2_clip_dose_confirm")
    fresh = with_base(s, spike_table(s), ("objective", "grad_clip"))
    fresh = fresh.assign(model=fresh["checkpoint"].map({"moe-sort": "MoE", "dense-sort": "dense"}), source=s.name)
    t = pd.concat([t, with_labels(fresh)], ignore_index=True)
    details = pd.DataFrame([_run_details(src, key) for src, key in zip(t["source"], t["key"], strict=True)])
    return pd.concat([t.reset_index(drop=True), details], axis=1)


def _counts(g: pd.DataFrame) -> tuple[int, int, int]:
    return int(g["collapsed"].sum()), int(g["collapsed_two"].sum()), len(g)


def _both(rule: str, where: str, judge, groups: dict[str, pd.DataFrame]) -> dict:
    """One verdict row: ``judge(k_1, n_1, k_2, n_2, …)`` on the declared and on the two-evaluation counts of
    ``groups`` (label -> runs), and whether the two agree (``f2s.robust``)."""
    declared, two, said, said_two = [], [], [], []
    for label, g in groups.items():
        d, t2, n = _counts(g)
        declared += [d, n]
        two += [t2, n]
        said.append(f"{label} {d}/{n}".strip())
        said_two.append(f"{label} {t2}/{n}".strip())
    dv, tv = judge(*declared), judge(*two)
    return {
        "rule": rule,
        "where": where,
        "declared_counts": ", ".join(said),
        "two_counts": ", ".join(said_two),
        "declared": dv,
        "two": tv,
        "robust": robust_verdict(dv, tv),
    }


def _verdict_rows(t: pd.DataFrame) -> list[dict]:
    """Each declared collapse verdict of 2, 2b and 2e, on the declared flag and on the two-evaluation rule."""
    rows = []
    seeds = t[t.source == "f2_collapse_moe"]["seed"].nunique()
    for model, m in t[t.source.isin(["f2_collapse_moe", "f2_collapse_dense"])].groupby("model", sort=False):
        for clip in ("off", "1"):
            arms = {o.upper(): m[(m.objective == o) & (m["clip"] == clip)] for o in ("grpo", "gspo")}
            judge = lambda *c: f2_collapse.collapse_verdict(*c, seeds)  # noqa: E731
            rows.append(_both("f2.collapse", f"{model}, grad clip {clip}", judge, arms))
    for model, m in t[t.source.isin(["f2_mechanism", "f2_clip_dose"])].groupby("model", sort=False):
        for (objective, clip), r in f2_mechanism.INTERVENTIONS.items():
            arm = m[(m.objective == objective) & (m["clip"] == clip)]
            peak = arm["peak"].median()
            judge = lambda k, n, r=r, peak=peak: f2_mechanism.intervention_verdict(r, k, n, peak, n)  # noqa: E731
            rows.append(_both(r.name, model, judge, {"": arm}))
    dense = t[(t.source == "f2_collapse_dense") & (t.objective == "grpo") & (t["clip"] == "off")]
    rows.append(
        _both("f2.dense", "dense GRPO, grad clip off", lambda k, n: f2_collapse.dense_verdict(k, n, n), {"": dense})
    )
    c = spec("f2_confirm_clip")
    cand = with_endpoints(c, finished(c, "confirm"))
    arms = {o.upper(): cand[cand.objective == o] for o in ("grpo", "gspo")}
    rows.append(
        _both(
            "f2.target",
            "moe-sort, grad clip 1, M 8, lr 1e-4",
            lambda *c: f2_candidate.target_verdict(*c, len(cand)),
            arms,
        )
    )
    fresh = t[t.source == "f2_clip_dose_confirm"]
    models = {m: fresh[fresh.model == m] for m in ("MoE", "dense")}
    rows.append(_both("f2e.dose_confirm", "seeds 15-19", lambda *c: f2_mechanism.dose_confirm_verdict(*c, 0), models))
    return [row for row in rows if row["declared"].outcome != PENDING]


#: the late-accuracy comparisons, per model: (arm, its comparison arm), arms named "<objective> clip <clip>"
COMPARISONS = (
    ("grpo_dual_clip clip off", "grpo clip off"),
    ("grpo clip 30", "grpo clip off"),
    ("grpo clip 10", "grpo clip off"),
    ("grpo clip 1", "grpo clip off"),
    ("gspo clip off", "grpo clip off"),
    ("grpo_dual_clip clip off", "grpo clip 30"),
)


def _late_rows(t: pd.DataFrame) -> list[dict]:
    base = t[t.source != "f2_clip_dose_confirm"].assign(arm_id=lambda d: d["objective"] + " clip " + d["clip"])
    rows = []
    for model, m in base.groupby("model", sort=False):
        for arm, other in COMPARISONS:
            diff = paired_diff(m, arm, other, "late_acc")
            rows.append(
                {
                    "model": model,
                    "arm": arm,
                    "other": other,
                    "diff": diff_cell(diff),
                    "verdict": late_diff_verdict(diff),
                }
            )
    return rows


def _arm_rows(t: pd.DataFrame) -> list[list]:
    rows = []
    for (source, model, _, arm, clip), g in t.groupby(["source", "model", "order", "arm", "clip"], sort=False):
        d, two, n = _counts(g)
        near = g.loc[g["margin_prompts"].abs().idxmin()]
        rows.append(
            [
                model,
                arm,
                clip,
                f"`{source}`",
                n,
                f"{d}/{n}",
                f"{two}/{n}",
                f"seed {int(near['seed'])}: {num(near['margin_prompts'])}",
                mean_ci(summary(g["late_acc"])),
                mean_ci(summary(g["reward_auc"])),
            ]
        )
    return rows


def _mode_rows(t: pd.DataFrame) -> list[list]:
    rows = []
    for (model, objective, collapsed), g in t.groupby(["model", "objective", "collapsed"], sort=False):
        cells = [
            f"{num(g[f'{name}_early'].median())} → {num(g[f'{name}_late'].median())} "
            f"[{num(g[f'{name}_late'].min())}–{num(g[f'{name}_late'].max())}]"
            for name in _MODE
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
    t = family()
    verdicts, late = _verdict_rows(t), _late_rows(t)
    verdict_rows = [
        [
            f"`{v['rule']}`",
            v["where"],
            v["declared_counts"],
            v["declared"].label,
            v["two_counts"],
            v["two"].label,
            v["robust"].label,
        ]
        for v in verdicts
    ]
    late_rows = [[r["model"], r["arm"], r["other"], r["diff"], r["verdict"].label] for r in late]
    ctx = {
        "verdicts": verdicts,
        "interventions": [v for v in verdicts if v["rule"] in ("f2e.dual_clip", "f2e.clip10", "f2e.clip30")],
        "dual_clip_late": [r for r in late if r["arm"] == "grpo_dual_clip clip off"],
        "late": late,
        "verdict_rows": verdict_rows,
        "flipped": [f"`{v['rule']}` ({v['where']})" for v in verdicts if v["robust"].outcome == "flips"],
        "late_rows": late_rows,
        "rows": _arm_rows(t),
        "mode": _mode_rows(t),
        "window": MODE_WINDOW,
    }
    return ctx, {}
