"""Finding 2's declared predictions, scored (issue 48, item 6): the headline at ten seeds (f2t_collapse_ten), read
on the fresh seeds' collapse counts per model and objective."""

from __future__ import annotations

from gspo_record.prediction import Prediction, parts

__all__ = ["PREDICTIONS"]

#: collapse.class on five seeds: "collapses" at >= 4 of 5, "stable" at <= 1 of 5 (scaled to the runs finished)
COLLAPSES, STABLE = 4, 1


def _count(text: str) -> tuple[int, int]:
    k, n = (int(x) for x in text.split("/"))
    return k, n


def _fresh_separates(ctx: dict) -> tuple[str, str]:
    """f2t: on the fresh seeds alone GRPO collapses (>= 4/5) and GSPO is stable (<= 1/5), on each model."""
    checks = []
    for v in ctx["f2t"]["verdicts"]:
        (kr, nr), (ks, ns) = (_count(v["fresh"][o]) for o in ("grpo", "gspo"))
        checks.append((kr * 5 >= COLLAPSES * nr, f"{v['model']} GRPO {kr}/{nr} collapsed"))
        checks.append((ks * 5 <= STABLE * ns, f"{v['model']} GSPO {ks}/{ns} collapsed"))
    return parts(checks)


PREDICTIONS = (
    Prediction("f2t_collapse_ten", "2", "on the fresh seeds alone, GRPO collapses (>= 4/5) and GSPO is stable "
               "(<= 1/5) on each model", _fresh_separates),
)  # fmt: skip
