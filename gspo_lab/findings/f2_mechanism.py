"""Finding 2e: the best clipped candidate on fresh seeds, and the interventions on GRPO's spikes, each declared before
its runs.

Rule ``f2.target`` (:func:`target_verdict`, ``f2_confirm_clip.toml`` and issue 9): *the target is met* when GRPO
collapses in ≥ ``COLLAPSES_AT_LEAST`` of 5 and GSPO in ≤ ``TARGET_GSPO_AT_MOST``.

Rules ``f2e.dual_clip``, ``f2e.clip10`` (``f2_mechanism.toml``) and ``f2e.clip30`` (``f2_clip_dose.toml``), by
:func:`intervention_verdict`: an arm at ≤ ``STABLE_AT_MOST`` of 5 collapsed gives the rule's *low* outcome, at ≥
``COLLAPSES_AT_LEAST`` its *high* outcome, in between *inconclusive*; dual-clip's low outcome also needs the largest
update's median norm below ``PEAK_GSPO_RANGE`` (towards GSPO's), else it is inconclusive.

Rule ``f2e.dose_confirm`` (``f2_clip_dose_confirm.toml``): the MoE/dense difference at grad clip 30 is *confirmed* when
on the fresh seeds the MoE collapses in ≥ ``COLLAPSES_AT_LEAST`` of 5 and the dense twin in ≤ ``STABLE_AT_MOST``.
"""

from __future__ import annotations

import pandas as pd

from gspo_lab.experiments.spec import cells
from gspo_lab.experiments.stats import paired_diff, rate_table
from gspo_lab.experiments.store import finished
from gspo_lab.findings.f2_spikes import plot_spikes
from gspo_lab.findings.fmt import clip_label, diff_cell, mean_ci, num, summary
from gspo_lab.findings.rules import (
    COLLAPSES_AT_LEAST,
    PENDING,
    STABLE_AT_MOST,
    TARGET_GSPO_AT_MOST,
    Rule,
    Verdict,
    collapse_class,
    register,
)
from gspo_lab.findings.tables import MODELS, arm_name, collapse_rows, progress, spec, spike_table, with_base

__all__ = [
    "TARGET",
    "INTERVENTIONS",
    "DOSE_CONFIRM",
    "target_verdict",
    "intervention_verdict",
    "dose_confirm_verdict",
    "confirm_section",
    "section",
]

#: f2_mechanism.toml, before its runs: dual-clip brings the largest update "towards GSPO's" below this norm
PEAK_GSPO_RANGE = 100.0
_CLASSES = {"COLLAPSES_AT_LEAST": COLLAPSES_AT_LEAST, "STABLE_AT_MOST": STABLE_AT_MOST}

TARGET = register(
    Rule(
        "f2.target",
        "2e",
        {"met": "the target is met", "not": "the target is not met"},
        {"COLLAPSES_AT_LEAST": COLLAPSES_AT_LEAST, "TARGET_GSPO_AT_MOST": TARGET_GSPO_AT_MOST},
        declared="issue 9 and data/specs/f2_confirm_clip.toml, before the runs",
        marker="Target (issue): GRPO collapsed",
        specs=("f2_confirm_clip",),
    )
)
#: (objective, grad clip) -> the arm's rule; low: its outcome at <= STABLE_AT_MOST of 5, high: >= COLLAPSES_AT_LEAST
INTERVENTIONS = {
    ("grpo_dual_clip", "off"): register(
        Rule(
            "f2e.dual_clip",
            "2e",
            {
                "low": "supports the account (the tokens Eq. 2 leaves unbounded drive the collapse)",
                "high": "refutes the account (those tokens are not the cause)",
                "inconclusive": "inconclusive by the declared rule",
            },
            {**_CLASSES, "PEAK_GSPO_RANGE": PEAK_GSPO_RANGE},
            declared="data/specs/f2_mechanism.toml, before its runs",
            marker="`grpo_dual_clip`, grad clip off",
            specs=("f2_mechanism",),
        )
    ),
    ("grpo", "10"): register(
        Rule(
            "f2e.clip10",
            "2e",
            {
                "low": "capping the spikes at ~3× the typical norm prevents the collapse",
                "high": "capping the spikes at ~3× the typical norm is not enough",
                "inconclusive": "inconclusive by the declared rule",
            },
            _CLASSES,
            declared="data/specs/f2_mechanism.toml, before its runs",
            marker="`grpo` at grad clip 10",
            specs=("f2_mechanism",),
        )
    ),
    ("grpo", "30"): register(
        Rule(
            "f2e.clip30",
            "2e",
            {
                "low": "a cap at 30 still prevents the collapse",
                "high": "the protective cap lies between 10 and 30",
                "inconclusive": "inconclusive by the declared rule",
            },
            _CLASSES,
            declared="data/specs/f2_clip_dose.toml, before its runs",
            marker="GRPO at grad clip 30 (~8x",
            specs=("f2_clip_dose",),
        )
    ),
}
_NAMES = {("grpo_dual_clip", "off"): "dual-clip", ("grpo", "10"): "grad clip 10", ("grpo", "30"): "grad clip 30"}
DOSE_CONFIRM = register(
    Rule(
        "f2e.dose_confirm",
        "2e",
        {"confirmed": "confirmed", "not": "not confirmed"},
        _CLASSES,
        declared="data/specs/f2_clip_dose_confirm.toml, before its runs",
        marker="Declared: the difference is confirmed",
        specs=("f2_clip_dose_confirm",),
    )
)


def target_verdict(k_grpo: int, n_grpo: int, k_gspo: int, n_gspo: int, seeds_declared: int) -> Verdict:
    """``f2.target`` on the candidate's collapsed counts (module docstring)."""
    if not n_grpo or not n_gspo:
        return TARGET.verdict(PENDING)
    met = collapse_class(k_grpo, n_grpo) == "collapses" and k_gspo <= TARGET_GSPO_AT_MOST * n_gspo / 5
    return TARGET.verdict(
        "met" if met else "not", "" if min(n_grpo, n_gspo) >= seeds_declared else "not all seeds finished"
    )


def intervention_verdict(rule: Rule, k: int, n: int, peak_median: float, seeds_declared: int) -> Verdict:
    """One intervention arm's verdict by its declared rule (module docstring)."""
    cls = collapse_class(k, n)
    outcome = {"stable": "low", "collapses": "high", "between": "inconclusive"}.get(cls, PENDING)
    if rule.name == "f2e.dual_clip" and outcome == "low" and not peak_median < PEAK_GSPO_RANGE:
        outcome = "inconclusive"  # no collapse, but the spikes did not shrink either
    return rule.verdict(outcome, "" if n >= seeds_declared else f"{n} of {seeds_declared} seeds")


def dose_confirm_verdict(k_moe: int, n_moe: int, k_dense: int, n_dense: int, cells_declared: int) -> Verdict:
    """``f2e.dose_confirm`` on the fresh seeds' collapsed counts at grad clip 30 (module docstring)."""
    if not n_moe or not n_dense:
        return DOSE_CONFIRM.verdict(PENDING)
    ok = collapse_class(k_moe, n_moe) == "collapses" and collapse_class(k_dense, n_dense) == "stable"
    done = "" if n_moe + n_dense >= cells_declared else "not all cells finished"
    return DOSE_CONFIRM.verdict("confirmed" if ok else "not", done)


def confirm_section() -> tuple[dict, dict]:
    s = spec("f2_confirm_clip")
    table = finished(s, "confirm")
    rates = rate_table(table, ["objective"]).set_index("objective")
    k, n = rates["k"].astype(int), rates["n"].astype(int)
    paired = table.assign(arm_id=table["objective"])
    ctx = {
        "progress": progress(s),
        "rows": collapse_rows(with_base(s, table, ("grad_clip",))),
        "verdict": target_verdict(k["grpo"], n["grpo"], k["gspo"], n["gspo"], len(s.confirm_seeds)),
        "grpo": f"{k['grpo']}/{n['grpo']}",
        "gspo": f"{k['gspo']}/{n['gspo']}",
        "final": diff_cell(paired_diff(paired, "gspo", "grpo", "eval_final")),
        "best": diff_cell(paired_diff(paired, "gspo", "grpo", "eval_best")),
    }
    return ctx, {}


#: the order of 2e's arms on the page: GRPO from no cap to a cap of 1, dual-clip, GSPO
_ORDER = {
    ("grpo", "off"): 0,
    ("grpo", "30"): 1,
    ("grpo", "10"): 2,
    ("grpo", "1"): 3,
    ("grpo_dual_clip", "off"): 4,
    ("gspo", "off"): 5,
}


def mechanism_table() -> pd.DataFrame:
    """Per run: finding 2's no-clip GRPO and GSPO arms, GRPO at grad clip 1.0 (stored, f2_collapse_*) and the
    interventions of f2_mechanism and f2_clip_dose, on both models, seeds 10-14, with typical and largest norms."""
    parts = []
    for ckpt, name in (("moe-sort", "f2_collapse_moe"), ("dense-sort", "f2_collapse_dense")):
        t = spike_table(spec(name))
        if "routing_replay" in t:
            t = t[~t["routing_replay"].astype(bool)]
        t = t[(t.objective == "grpo") | (t["grad_clip"].map(clip_label) == "off")]
        parts.append(t.assign(model=MODELS[ckpt], checkpoint=ckpt, source=name))
    for name in ("f2_mechanism", "f2_clip_dose"):
        s = spec(name)
        t = with_base(s, spike_table(s), ("objective", "grad_clip"))
        parts.append(t.assign(model=t["checkpoint"].map(MODELS), source=name))
    t = pd.concat(parts, ignore_index=True)
    t = t.assign(routing_replay=t.get("routing_replay", pd.Series(False, index=t.index)).fillna(False).astype(bool))
    t = t.assign(arm=t.apply(arm_name, axis=1), clip=t["grad_clip"].map(clip_label))
    t = t.assign(
        order=[_ORDER.get((o, c), 9) for o, c in zip(t["objective"], t["clip"], strict=True)],
        model_order=t["model"].map({m: i for i, m in enumerate(MODELS.values())}),
    )
    return t.sort_values(["model_order", "order", "seed"]).reset_index(drop=True)


def _dose_confirm() -> dict:
    s = spec("f2_clip_dose_confirm")
    table = finished(s, "confirm")
    rates = rate_table(table, ["checkpoint"]).set_index("checkpoint")
    kn = {c: (int(r["k"]), int(r["n"])) for c, r in rates.iterrows()}
    (km, nm), (kd, nd) = kn.get("moe-sort", (0, 0)), kn.get("dense-sort", (0, 0))
    return {
        "moe": f"{km}/{nm}",
        "dense": f"{kd}/{nd}",
        "verdict": dose_confirm_verdict(km, nm, kd, nd, len(cells(s, "confirm"))),
    }


def section() -> tuple[dict, dict]:
    s = spec("f2_mechanism")
    table = mechanism_table()
    rows = []
    for (model, _, arm, clip), g in table.groupby(["model", "order", "arm", "clip"], sort=False):
        rows.append(
            [
                model,
                arm,
                clip,
                f"`{g['source'].iloc[0]}`",
                len(g),
                f"{int(g['collapsed'].sum())}/{len(g)}",
                mean_ci(summary(g["eval_final"])),
                num(g["typical"].median()),
                f"{num(g['peak'].median())} [{num(g['peak'].min())}–{num(g['peak'].max())}]",
                num(g["early_above"].mean()),
            ]
        )
    verdicts = []
    for model, g in table.groupby("model", sort=False):
        for (objective, clip), rule in INTERVENTIONS.items():
            arm = g[(g.objective == objective) & (g["clip"] == clip)]
            if arm.empty:
                continue
            k, peak = int(arm["collapsed"].sum()), arm["peak"].median()
            verdicts.append(
                {
                    "model": model,
                    "name": _NAMES[(objective, clip)],
                    "k": k,
                    "n": len(arm),
                    "norm": f", largest norm median {num(peak)}" if objective == "grpo_dual_clip" else "",
                    "verdict": intervention_verdict(rule, k, len(arm), peak, len(s.confirm_seeds)),
                }
            )
    dose = []  # GRPO's collapse rate and final accuracy as the cap tightens, per model
    for model, g in table[table.objective == "grpo"].groupby("model", sort=False):
        steps = [(c, g[g["clip"] == c]) for c in ("off", "30", "10", "1")]
        dose.append(
            {
                "model": model,
                "steps": [
                    {"clip": c, "k": int(d["collapsed"].sum()), "n": len(d), "final": num(d["eval_final"].mean())}
                    for c, d in steps
                    if len(d)
                ],
            }
        )
    ctx = {
        "progress": progress(s),
        "dose_progress": progress(spec("f2_clip_dose")),
        "rows": rows,
        "verdicts": verdicts,
        "dose": dose,
        "dose_confirm": _dose_confirm(),
    }
    data = table[["model", "clip", "arm", "objective", "seed", "peak", "collapsed"]]
    return ctx, {"f2_mechanism": (data, plot_spikes)}
