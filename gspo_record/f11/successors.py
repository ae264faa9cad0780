"""Finding 11 ("after GSPO"): GSPO's successors beside GRPO and GSPO in three regimes — its rules, tables and figures.

The successors (CISPO, SAPO, LUSPO, VESPO, GMPO; :mod:`gspo_lab.objectives`) ran in finding 2's regime without a
grad-norm clip (M = 16, lr 5e-5) on the seeds of finding 2's stored GRPO and GSPO arms
(``data/specs/f11_successors_collapse.toml``), so each is compared with both, paired by seed, on late held-out accuracy
with the interval its spec declared (:func:`gspo_lab.experiments.stats.declared_t_sign`: Student-t, from stats
version 4 the page's transformed t). Regime (b) (grad-norm clip 1, M = 8, lr 1e-4) and its fresh-seed re-run are
named by those knobs, each objective's rollout-0 drift beside them (:mod:`gspo_record.f11.regimes`). Rule
``f11.position`` places each successor relative to the two; declared with it, the same rule is re-read with each seed
left out, on training-reward AUC and on the final evaluation alone, and a verdict that changes under any of them is
marked *fragile*.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial

import pandas as pd

import gspo_lab.experiments.reading as reading
import gspo_record.f11.regimes as regimes
from gspo_lab.experiments.endpoint_range import DIFFERENCE
from gspo_lab.experiments.stats import declared_t_interval, paired_diff
from gspo_record.f11.plots import plot_positions
from gspo_record.f11.regimes import SPEC, SPEC_B, SPEC_B_DENSE, SPEC_D, runs
from gspo_record.fmt import arm_cell, diff_cell, robustness
from gspo_record.joint import Joint, combination
from gspo_record.rules import PENDING, Rule, register
from gspo_record.statements import Interval
from gspo_record.tables import progress, spec

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
    "section",
]

#: the successors regime (b) placed like or below GRPO on the MoE, re-run on fresh seeds by f11d (rule f11d.confirm).
#: That they are those whose weights never zero a token's gradient is a reading, not shown (confounded with drift)
RETESTED = ("cispo", "sapo", "vespo")
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
            "gspo_like": "like GSPO (above GRPO; not shown above or below GSPO)",
            "between": "between GRPO and GSPO",
            "grpo_like": "like GRPO (below GSPO; not shown above or below GRPO)",
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
            "confirmed": "replicated on fresh seeds (like or below GRPO: the position, not its mechanism)",
            "refuted": "not replicated on fresh seeds (like GSPO, between, or above GSPO)",
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


def confirm_verdict(position_verdict, id: str = "f11d.confirm"):
    """Rule ``f11d.confirm`` from the successor's ``f11b.position`` statement on the fresh seeds: a statement of the
    same two differences, its position read through :data:`_CONFIRMS`."""
    if position_verdict.outcome == PENDING:
        return CONFIRM.verdict(PENDING)
    return CONFIRM.state(id, "does the successor's position replicate on fresh seeds?", position_verdict.number,
                         reads=_CONFIRMS, provisional=position_verdict.provisional)  # fmt: skip


def position_outcome(d_grpo: str, d_gspo: str) -> str:
    """The outcome of ``f11.position`` from the outcomes of the paired differences' intervals (objective − GRPO,
    objective − GSPO: "above" / "below" / "none"). The declared conditions of "like GRPO" (d_GRPO not above 0, d_GSPO
    below 0) and "below GRPO" (d_GRPO below 0) overlap where both lie below 0; there the outcome is "below GRPO",
    what the intervals show (until issue 35 the first listed, "like GRPO", was printed beside an interval below
    GRPO). f11d.confirm counts both alike, so its outcomes do not change."""
    if d_gspo == "above":
        return "above_gspo"
    if d_grpo == "above":
        return "gspo_like" if d_gspo == "none" else "between"
    if d_grpo == "below":
        return "below_grpo"
    return "grpo_like" if d_gspo == "below" else "unresolved"


@combination("f11.position", tuple(POSITION.outcomes), ("− GRPO", "− GSPO"),
             shown=tuple(o for o in POSITION.outcomes if o != "unresolved"))  # fmt: skip
def _position(o: dict) -> str:
    return position_outcome(o["− GRPO"], o["− GSPO"])  # looked up when called: a mutant of it is what is read


def difference(values) -> Interval:
    """A paired per-seed difference with the interval its spec declared (Student-t, on the page's range-respecting
    form from stats version 4: :func:`~gspo_lab.experiments.stats.declared_t_interval`)."""
    return Interval.of(values, lambda x: declared_t_interval(x, DIFFERENCE), bounds=DIFFERENCE)


def position_verdict(d_grpo, d_gspo, rule: Rule = POSITION, id: str = ""):
    """Rule ``f11.position`` (or one that reads it: ``f11b.position``, ``f11e.dose``, ``f11f.arm``) on the paired
    differences (objective − GRPO, objective − GSPO): statement ``id`` (the rule's name by default), whose number
    prints both intervals with their sign counts; pending without two seeds of each."""
    if min(sum(v == v for v in d) for d in (d_grpo, d_gspo)) < 2:
        return rule.verdict(PENDING)
    number = Joint("f11.position", (("− GRPO", difference(d_grpo)), ("− GSPO", difference(d_gspo))))
    return rule.state(id or rule.name, "where does the successor's late accuracy sit against GRPO's and GSPO's?",
                      number)  # fmt: skip


def position(table: pd.DataFrame, objective: str, metric: str = "late_acc", rule: Rule = POSITION, id: str = ""):
    """The position rule for ``objective`` on one model's runs (``arm_id`` = objective, with grpo and gspo)."""
    d_grpo = paired_diff(table, objective, "grpo", metric)
    d_gspo = paired_diff(table, objective, "gspo", metric)
    return position_verdict(d_grpo, d_gspo, rule, id)


def robust_position(table: pd.DataFrame, objective: str, rule: Rule = POSITION, id: str = "") -> tuple:
    """(verdict, flips): the verdict on the primary endpoint, and each declared re-reading under which it changes —
    every seed left out in turn, the secondary endpoint, the final evaluation alone. Fragile when ``flips``."""
    verdict = position(table, objective, rule=rule, id=id)
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


def _rows(table: pd.DataFrame, rule: Rule = POSITION) -> tuple[list, list]:
    rows, verdicts = [], []
    for model, m in table.groupby("model", sort=False):
        grpo = m.loc[m["arm_id"] == "grpo", "collapsed"]
        for arm in ("grpo", "gspo", *SUCCESSORS):
            g = m[m["arm_id"] == arm]
            if g.empty:
                continue
            against = (int(grpo.sum()), len(grpo)) if arm != "grpo" else ()  # GRPO's count, same model and seeds
            collapsed = regimes.collapse_cell(int(g["collapsed"].sum()), len(g), *against)
            cells = [model, arm, arm_cell(g["late_acc"]), collapsed]
            if arm in SUCCESSORS:
                verdict, flips = robust_position(m, arm, rule, f"{rule.name}.{arm}.{model}")
                d_grpo, d_gspo = (paired_diff(m, arm, base, "late_acc") for base in ("grpo", "gspo"))
                fragile = robustness(flips)
                cells += [diff_cell(d_grpo), diff_cell(d_gspo), verdict.short, fragile]
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


def _described(table: pd.DataFrame, names: tuple[str, ...], arms: tuple[str, ...]) -> dict:
    """A regime as the data describe it: its knobs, each arm's rollout-0 KL k3, GRPO's and GSPO's collapse counts,
    and the successors that collapse where GRPO does not."""
    return {"knobs": " / ".join(dict.fromkeys(regimes.knobs(name) for name in names)),
            "drift": regimes.drift_groups(table, arms), "baseline_counts": regimes.baseline_counts(table),
            "contrasts": regimes.contrasts(table, SUCCESSORS)}  # fmt: skip


def _regime(names: tuple[str, ...], rule: Rule, figure: str) -> tuple[dict, dict]:
    table = pd.concat([runs(name) for name in names], ignore_index=True)
    rows, verdicts = _rows(table, rule)
    ctx = {
        **_described(table, names, ("grpo", "gspo", *SUCCESSORS)),
        "table": table,
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
    plot = partial(plot_positions, arms=("grpo", "gspo", *SUCCESSORS))
    figures = {figure: (data.reset_index(drop=True), plot)} if len(rows) else {}
    return ctx, figures


def _confirm() -> dict:
    """Rule f11d.confirm per re-tested successor on the fresh MoE seeds, with its position and collapse count."""
    table = runs(SPEC_D)
    rows, verdicts = [], []
    grpo = table.loc[table["arm_id"] == "grpo", "collapsed"]
    for objective in RETESTED:
        g = table[table["arm_id"] == objective]
        if g.empty:
            continue
        position, flips = robust_position(table, objective, POSITION_B, f"f11d.position.{objective}")
        verdict = confirm_verdict(position, f"f11d.confirm.{objective}")
        counts = regimes.collapse_cell(int(g["collapsed"].sum()), len(g), int(grpo.sum()), len(grpo))
        diffs = [diff_cell(paired_diff(table, objective, base, "late_acc")) for base in ("grpo", "gspo")]
        rows.append([objective, arm_cell(g["late_acc"]), counts, *diffs, position.short, verdict.short,
                     robustness(flips)])  # fmt: skip
        verdicts.append({"objective": objective, "verdict": verdict, "fragile": bool(flips),
                         "sure": "fragile" if flips else "robust"})  # fmt: skip
    baselines = [[arm, arm_cell(g["late_acc"]), f"{int(g['collapsed'].sum())}/{len(g)}"]
                 for arm in ("grpo", "gspo") if len(g := table[table["arm_id"] == arm])]  # fmt: skip
    return {**_described(table, (SPEC_D,), ("grpo", "gspo", *RETESTED)), "table": table, "baselines": baselines,
            "progress": progress(spec(SPEC_D)), "rows": rows, "verdicts": verdicts}  # fmt: skip


def section() -> tuple[dict, dict]:
    """Regime (a), no grad-norm clip; regime (b), grad-norm clip 1 on both models (``production``, the key its specs'
    names carry); (b) re-run on fresh MoE seeds (``confirm``); and ``reading``: the rollout-0 drift of the successors
    that collapsed where GRPO did not in (b) and its re-run, against GRPO's and GSPO's (the confound of the post hoc
    reading)."""
    ctx, figures = _regime((SPEC,), POSITION, "f11_successors")
    ctx["production"], more = _regime((SPEC_B, SPEC_B_DENSE), POSITION_B, "f11b_successors_production")
    ctx["confirm"] = _confirm()
    parts = [ctx["production"], ctx["confirm"]]
    pairs = [[p for c in part["contrasts"] for p in c["pairs"]] for part in parts]
    names = dict.fromkeys(name for part in parts for c in part["contrasts"] for name, _ in c["objectives"])
    ctx["reading"] = {**regimes.drift_span([part.pop("table") for part in parts], pairs), "objectives": list(names)}
    ctx.pop("table")
    return ctx, {**figures, **more}
