"""Finding 11 ("after GSPO"), regime (a): GSPO's successors where GRPO collapses — its rule, runs, table and figure.

The successors (CISPO, SAPO, LUSPO, VESPO, GMPO; :mod:`gspo_lab.objectives`) ran in finding 2's collapse regime on the
seeds of finding 2's stored GRPO and GSPO arms (``data/specs/f11_successors_collapse.toml``), so each is compared
with both, paired by seed, on late held-out accuracy with a 95 % Student-t interval
(:func:`gspo_lab.experiments.stats.t_interval`). Rule ``f11.position`` places each successor relative to the two;
declared with it, the same rule is re-read with each seed left out, on training-reward AUC and on the final
evaluation alone, and a verdict that changes under any of them is marked *fragile*.
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

import gspo_lab.experiments.reading as reading
from gspo_lab.experiments.endpoint_range import DIFFERENCE
from gspo_lab.experiments.stats import declared_t_sign, paired_diff
from gspo_lab.findings.fmt import arm_cell, clip_label, diff_cell, robustness
from gspo_lab.findings.rules import PENDING, Rule, class_verdict, register
from gspo_lab.findings.tables import F2, MODELS, declared, progress, spec, with_base

__all__ = [
    "SPEC",
    "SUCCESSORS",
    "POSITION",
    "position_outcome",
    "position_verdict",
    "position",
    "robust_position",
    "CONFIRM",
    "confirm_verdict",
    "runs",
    "plot_positions",
    "section",
]

SPEC = "f11_successors_collapse"
SPEC_B = "f11b_successors_production"
SPEC_B_DENSE = "f11b_production_dense"  # the dense twin: its own GRPO and GSPO arms, fresh seeds 15-19
SPEC_D = "f11d_production_confirm"  # the post hoc reading of regime (b) on fresh MoE seeds 15-19
#: per regime spec: the stored specs whose GRPO / GSPO runs its arms are paired with (none: the spec runs its own)
STORED = {SPEC: (F2["moe"], F2["dense"]), SPEC_B: (F2["candidate"],), SPEC_B_DENSE: (), SPEC_D: ()}
#: the successors whose weights never zero a unit's gradient: the post hoc reading f11d.confirm puts to fresh seeds
NEVER_ZERO = ("cispo", "sapo", "vespo")
SUCCESSORS = ("cispo", "sapo", "luspo", "vespo", "gmpo")
#: the endpoints the robustness check re-reads the rule on: (name, column)
ENDPOINTS = (("late held-out accuracy", "late_acc"), ("training-reward AUC", "reward_auc"),
             ("final evaluation", "eval_final"))  # fmt: skip
SEEDS = 5

POSITION = register(
    Rule(
        "f11.position",
        "11",
        {
            "above_gspo": "above GSPO",
            "gspo_like": "like GSPO (above GRPO, not shown below GSPO)",
            "between": "between GRPO and GSPO",
            "grpo_like": "like GRPO (below GSPO, not shown above GRPO)",
            "below_grpo": "below GRPO",
            "unresolved": "unresolved (neither difference shown)",
        },
        {"LEVEL": 0.95},
        declared="data/specs/f11_successors_collapse.toml, before its runs (Student-t interval)",
        marker="Rule f11.position per objective and model, on (d_GRPO = objective - GRPO, d_GSPO = objective - GSPO)",
        specs=(SPEC,),
    )
)


POSITION_B = register(
    Rule(
        "f11b.position",
        "11",
        dict(POSITION.outcomes),
        {"LEVEL": 0.95},
        declared="data/specs/f11b_successors_production.toml, before its runs (Student-t interval); its dense twin "
        "f11b_production_dense.toml, before its runs",
        marker="Rule f11b.position per",
        specs=(SPEC_B, SPEC_B_DENSE),
    )
)

CONFIRM = register(
    Rule(
        "f11d.confirm",
        "11",
        {
            "confirmed": "confirmed (like or below GRPO on fresh seeds)",
            "refuted": "refuted (like GSPO, between, or above GSPO on fresh seeds)",
            "unresolved": "unresolved",
        },
        {"LEVEL": 0.95},
        declared="data/specs/f11d_production_confirm.toml, before its runs (the reading it tests is post hoc)",
        marker="Rule f11d.confirm per successor",
        specs=(SPEC_D,),
    )
)
#: f11d.confirm's outcome for each f11b.position outcome
_CONFIRMS = {"grpo_like": "confirmed", "below_grpo": "confirmed", "gspo_like": "refuted", "between": "refuted",
             "above_gspo": "refuted", "unresolved": "unresolved"}  # fmt: skip


def confirm_verdict(position_verdict):
    """Rule ``f11d.confirm`` from the successor's ``f11b.position`` verdict on the fresh seeds."""
    if position_verdict.outcome == PENDING:
        return CONFIRM.verdict(PENDING)
    return CONFIRM.verdict(_CONFIRMS[position_verdict.outcome], position_verdict.provisional)


def position_outcome(d_grpo, d_gspo) -> str:
    """The first outcome of ``f11.position`` that applies, in its declared order, to the paired differences
    (objective − GRPO, objective − GSPO) per seed; PENDING without both."""
    if len(d_grpo) == 0 or len(d_gspo) == 0:
        return PENDING
    above_grpo, vs_gspo = declared_t_sign(d_grpo, DIFFERENCE), declared_t_sign(d_gspo, DIFFERENCE)
    if vs_gspo > 0:
        return "above_gspo"
    if above_grpo > 0:
        return "gspo_like" if vs_gspo == 0 else "between"
    if vs_gspo < 0:
        return "grpo_like"
    if above_grpo < 0:
        return "below_grpo"
    return "unresolved"


def position_verdict(d_grpo, d_gspo, rule: Rule = POSITION):
    """Rule ``f11.position`` (or ``f11b.position``) on the paired differences (objective − GRPO, objective − GSPO)."""
    return rule.verdict(position_outcome(d_grpo, d_gspo))


def position(table: pd.DataFrame, objective: str, metric: str = "late_acc", rule: Rule = POSITION):
    """The position rule for ``objective`` on one model's runs (``arm_id`` = objective, with grpo and gspo)."""
    d_grpo = paired_diff(table, objective, "grpo", metric)
    d_gspo = paired_diff(table, objective, "gspo", metric)
    return position_verdict(d_grpo, d_gspo, rule)


def robust_position(table: pd.DataFrame, objective: str, rule: Rule = POSITION) -> tuple:
    """(verdict, flips): the verdict on the primary endpoint, and each declared re-reading under which it changes —
    every seed left out in turn, the secondary endpoint, the final evaluation alone. Fragile when ``flips``."""
    verdict = position(table, objective, rule=rule)
    if verdict.outcome == PENDING:
        return verdict, []
    flips = []
    with reading.inner():
        for name, column in ENDPOINTS[1:]:
            other = position(table, objective, column, rule)
            if other.outcome != verdict.outcome:
                flips.append(f"{name}: {other.label}")
        for seed in sorted(table["seed"].unique()):
            other = position(table[table["seed"] != seed], objective, rule=rule)
            if other.outcome != verdict.outcome:
                flips.append(f"without seed {seed}: {other.label}")
    done = int((table["arm_id"] == objective).sum())
    if done < SEEDS:
        verdict = replace(verdict, provisional=f"{done} of {SEEDS} seeds finished")
    return verdict, flips


def runs(name: str = SPEC) -> pd.DataFrame:
    """Every finished run of regime spec ``name`` and the stored GRPO / GSPO runs of its regime on the same seeds
    (finding 2's, at the regime's grad clip, without Routing Replay; ``arm_id`` = objective; ``model``; ``source``)."""
    s = spec(name)
    parts = []
    t = declared(s)
    if not t.empty:
        parts.append(with_base(s, t, ("checkpoint", "objective")).assign(source=name))
    for stored in STORED[name]:
        f2 = spec(stored)
        t = with_base(f2, declared(f2), ("checkpoint", "objective", "grad_clip"))
        rr = t.get("routing_replay", pd.Series(False, index=t.index)).fillna(False).astype(bool)
        same_clip = t["grad_clip"].map(clip_label) == clip_label(s.base.get("grad_clip"))
        parts.append(t[same_clip & ~rr].assign(source=stored))
    if not parts:
        return pd.DataFrame(columns=["model", "arm_id", "seed", "late_acc", "collapsed", "source"])
    table = pd.concat(parts, ignore_index=True)
    table = table.assign(arm_id=table["objective"], model=table["checkpoint"].map(MODELS))
    order = table["checkpoint"].map(list(MODELS).index)
    return table.assign(order=order).sort_values("order", kind="stable").drop(columns="order").reset_index(drop=True)


def _rows(table: pd.DataFrame, rule: Rule = POSITION) -> tuple[list, list]:
    rows, verdicts = [], []
    for model, m in table.groupby("model", sort=False):
        for arm in ("grpo", "gspo", *SUCCESSORS):
            g = m[m["arm_id"] == arm]
            if g.empty:
                continue
            k, n = int(g["collapsed"].sum()), len(g)
            cells = [model, arm, arm_cell(g["late_acc"]), f"{k}/{n} ({class_verdict(k, n).label})"]
            if arm in SUCCESSORS:
                verdict, flips = robust_position(m, arm, rule)
                d_grpo, d_gspo = (paired_diff(m, arm, base, "late_acc") for base in ("grpo", "gspo"))
                fragile = robustness(flips)
                cells += [diff_cell(d_grpo), diff_cell(d_gspo), str(verdict), fragile]
                verdicts.append(
                    {
                        "model": model,
                        "objective": arm,
                        "verdict": verdict,
                        "fragile": bool(flips),
                        "sure": "fragile" if flips else "robust",
                    }
                )
            else:
                cells += ["—", "—", f"baseline (`{g['source'].iloc[0]}`)", "—"]
            rows.append(cells)
    return rows, verdicts


def plot_positions(data: pd.DataFrame):
    """Late held-out accuracy per run (dots) and per arm (bar: mean), one panel per model."""
    from matplotlib.figure import Figure

    from gspo_lab.plots import color, label

    models = list(dict.fromkeys(data["model"]))
    fig = Figure(figsize=(5.2 * max(len(models), 1), 3.4))
    axes = fig.subplots(1, max(len(models), 1), squeeze=False)
    for ax, model in zip(axes[0], models, strict=False):
        m = data[data["model"] == model]
        arms = [a for a in ("grpo", "gspo", *SUCCESSORS) if a in set(m["arm_id"])]
        for i, arm in enumerate(arms):
            v = m.loc[m["arm_id"] == arm, "late_acc"]
            ax.bar(i, v.mean(), color=color(arm), alpha=0.35, width=0.7)
            ax.plot([i] * len(v), v, "o", color=color(arm), ms=4)
        ax.set_xticks(range(len(arms)), [label(a) for a in arms], rotation=30, ha="right")
        ax.set_ylim(0, 1)
        ax.set_title(f"{model}: late held-out accuracy (rollouts 40-80)")
        ax.set_ylabel("exact-match accuracy")
    fig.tight_layout()
    return fig


def _regime(names: tuple[str, ...], rule: Rule, figure: str) -> tuple[dict, dict]:
    table = pd.concat([runs(name) for name in names], ignore_index=True)
    rows, verdicts = _rows(table, rule)
    ctx = {
        "progress": [progress(spec(name)) for name in names],
        "rows": rows,
        "verdicts": verdicts,
        "header": [
            "model",
            "objective",
            "late held-out accuracy [95 % t]",
            "collapsed (v2)",
            "− GRPO (paired)",
            "− GSPO (paired)",
            rule.name,
            "robustness",
        ],  # fmt: skip
    }
    data = table[["model", "arm_id", "seed", "late_acc"]].sort_values(["model", "arm_id", "seed"])
    figures = {figure: (data.reset_index(drop=True), plot_positions)} if len(rows) else {}
    return ctx, figures


def _confirm() -> dict:
    """Rule f11d.confirm per never-zeroing successor on the fresh MoE seeds, with its position and collapse count."""
    table = runs(SPEC_D)
    rows, verdicts = [], []
    for objective in NEVER_ZERO:
        g = table[table["arm_id"] == objective]
        if g.empty:
            continue
        position, flips = robust_position(table, objective, POSITION_B)
        verdict = confirm_verdict(position)
        k, n = int(g["collapsed"].sum()), len(g)
        sure = robustness(flips)
        diffs = [diff_cell(paired_diff(table, objective, base, "late_acc")) for base in ("grpo", "gspo")]
        rows.append([objective, arm_cell(g["late_acc"]), f"{k}/{n} ({class_verdict(k, n).label})", *diffs,
                     str(position), str(verdict), sure])  # fmt: skip
        verdicts.append({"objective": objective, "verdict": verdict, "fragile": bool(flips),
                         "sure": "fragile" if flips else "robust"})  # fmt: skip
    baselines = [[arm, arm_cell(g["late_acc"]), f"{int(g['collapsed'].sum())}/{len(g)}"]
                 for arm in ("grpo", "gspo") if len(g := table[table["arm_id"] == arm])]  # fmt: skip
    return {"progress": progress(spec(SPEC_D)), "rows": rows, "verdicts": verdicts, "baselines": baselines}


def section() -> tuple[dict, dict]:
    """Regime (a), the collapse regime; regime (b), the production-like one on both models (``production``); and
    the fresh-seed test of (b)'s post hoc reading (``confirm``)."""
    ctx, figures = _regime((SPEC,), POSITION, "f11_successors")
    ctx["production"], more = _regime((SPEC_B, SPEC_B_DENSE), POSITION_B, "f11b_successors_production")
    ctx["confirm"] = _confirm()
    return ctx, {**figures, **more}
