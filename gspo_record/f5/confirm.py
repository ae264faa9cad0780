"""Finding 5's fresh seeds (``f5_precision_confirm``): rule ``f5.confirm`` (f5_precision_confirm.toml, before its runs)
— a difference whose interval excluded 0 on the first seeds is *confirmed* if its interval on the fresh seeds excludes
0 with the same sign, else *not confirmed*; else *nothing to confirm* — a statement about both intervals; and GSPO's
claim re-read on all the seeds pooled (:func:`gspo_record.f5.precision.claim_verdict`).
"""

from __future__ import annotations

import pandas as pd

import gspo_record.figures as figures
from gspo_lab.experiments.endpoint_range import DIFFERENCE
from gspo_lab.experiments.spec import cells
from gspo_lab.experiments.stats import interval_sign, paired_diff, seed_interval
from gspo_lab.experiments.store import finished
from gspo_record.f5.precision import _arms, claim_verdict
from gspo_record.fmt import diff_cell
from gspo_record.joint import Joint, combination
from gspo_record.rules import PENDING, Rule, register
from gspo_record.statements import Interval
from gspo_record.tables import progress, spec

__all__ = ["CONFIRM", "confirm_outcome", "confirm_verdict", "confirm_section"]

CONFIRM = register(
    Rule(
        "f5.confirm",
        "5",
        {"confirmed": "confirmed", "not": "not confirmed", "nothing": "nothing to confirm"},
        {},
        declared="data/specs/f5_precision_confirm.toml, before its runs",
        marker="the gain is confirmed if",
        specs=("f5_precision_confirm",),
    )
)
_PARTS = ("first seeds", "fresh seeds")
combination("f5.confirm", tuple(CONFIRM.outcomes), _PARTS, shown=("confirmed",))(lambda o: confirm_outcome(o))


def confirm_outcome(o: dict) -> str:
    """``f5.confirm`` from the two intervals' sides of 0: nothing when the first holds 0, confirmed on the same side."""
    if o["first seeds"] == "none":
        return "nothing"
    return "confirmed" if o["fresh seeds"] == o["first seeds"] else "not"


def confirm_verdict(first: pd.Series, fresh: pd.Series, id: str = "f5.confirm"):
    """``f5.confirm`` on a difference's per-seed values on the first and the fresh seeds (module docstring): statement
    ``id`` printing both intervals; pending with fewer than two seeds on either."""
    if min(sum(v == v for v in first), sum(v == v for v in fresh)) < 2:
        return CONFIRM.verdict(PENDING)
    number = Joint("f5.confirm", tuple((name, Interval.of(d, lambda x: seed_interval(x, DIFFERENCE), bounds=DIFFERENCE))
                                       for name, d in zip(_PARTS, (first, fresh), strict=True)))  # fmt: skip
    return CONFIRM.state(id, "does the difference hold on fresh seeds?", number)


def confirm_section() -> tuple[dict, dict]:
    s, first_spec = spec("f5_precision_confirm"), spec("f5_precision_train")
    table, first = _arms(finished(s, "confirm")), _arms(finished(first_spec, "confirm"))
    rows, verdicts = [], []
    for arm in sorted(set(table["arm_id"])):  # arm and base name where each verdict was read (reread.WHERE)
        objective, source, clip = arm.split(" / ")
        base = f"{objective} / recompute / paper ε"
        if arm == base:
            continue
        d1, d2 = paired_diff(first, arm, base, "eval_final"), paired_diff(table, arm, base, "eval_final")
        v = confirm_verdict(d1, d2, "f5.confirm." + arm.replace(" / ", ".").replace(" ", ""))
        cell = v.short
        if v.rule_outcome == "nothing" and (side := interval_sign(d2, DIFFERENCE)):  # post hoc: no rule reads it
            cell = (f"{v.label} on the first seeds{v.note}{v.mark}; the fresh seeds alone show a difference "
                    f"{'above' if side > 0 else 'below'} 0, {diff_cell(d2)} (post hoc)")  # fmt: skip
        if v.rule_outcome not in ("nothing", PENDING):
            verdicts.append(
                {"objective": objective.upper(), "source": source, "clip": clip, "verdict": v, "fresh": diff_cell(d2)}
            )
        rows.append(
            [objective.upper(), source, clip, diff_cell(d1), diff_cell(d2), diff_cell(pd.concat([d1, d2])), cell]
        )
    both = pd.concat([first, table], ignore_index=True)
    pooled = {
        o: paired_diff(both, f"{o} / sampler_bf16 / paper ε", f"{o} / recompute / paper ε", "eval_final")
        for o in ("grpo", "gspo")
    }
    seeds = [f"seeds {min(t.confirm_seeds)}-{max(t.confirm_seeds)}" for t in (first_spec, s)]
    done = len(table) >= len(cells(s, "confirm"))
    ctx = {
        "progress": progress(s),
        "rows": rows,
        "verdicts": verdicts,
        "seeds": seeds,
        "note": "" if done else " (provisional: not all cells finished)",
        "pooled": claim_verdict(pooled["grpo"], pooled["gspo"], 2 * len(s.confirm_seeds), "f5.claim.pooled"),
        "pooled_diff": {o: diff_cell(d) for o, d in pooled.items()},
    }
    items = [(f"{o.upper()}, all {len(d)} seeds", d, DIFFERENCE) for o, d in pooled.items()]
    return ctx, {
        "f5_precision": figures.per_seed(items, "final held-out accuracy, bf16 sampler's log-probs − recomputed")
    }
