"""Finding 1: clipping fractions (paper §5.2, Fig. 2) — ``f1_clip_fractions`` and ``f1_eps_sweep``.

Rule ``f1.clip_ratio`` (:func:`clip_ratio_verdict`): over seeds, the ratio GSPO ÷ GRPO of the clipped-token fraction
at lr 3e-5, M = 4 (the paper's split), taken per seed; *reproduced* if the lower end of its 95 % interval is ≥
``REPRODUCED_RATIO`` (the same order of magnitude as the paper's ≈ 100×), *partly reproduced* if ≥ ``PARTLY_RATIO``
(the direction holds), else *not reproduced*. The thresholds were committed after the headline arm's GRPO cells had
run (its GSPO cells had not): the page says so beside the verdict.

Rule ``f1.accuracy`` (:func:`accuracy_verdict`), a description set after the results (no rule about accuracy was
declared for this spec): in the headline arm, GSPO's final held-out accuracy minus GRPO's, paired by seed; *GSPO
ended lower* / *higher* when its 95 % interval excludes 0, else *no difference shown*. It bears on the paper's "yet
trains more efficiently".
"""

from __future__ import annotations

import pandas as pd

from gspo_lab.experiments.endpoint_range import DIFFERENCE, RATIO
from gspo_lab.experiments.read import curves
from gspo_lab.experiments.stats import paired_diff, paired_ratio, seed_interval
from gspo_lab.experiments.store import finished
from gspo_lab.objectives import GRPO_CLIP, GSPO_CLIP
from gspo_record.fmt import diff_cell, mean_ci, num, summary
from gspo_record.joint import Joint, combination
from gspo_record.rules import PENDING, Rule, register
from gspo_record.signed import SIGNED, signed
from gspo_record.statements import Interval
from gspo_record.tables import progress, spec

__all__ = ["CLIP_RATIO", "ACCURACY", "clip_ratio_verdict", "accuracy_verdict", "section", "eps_section", "HEADLINE"]

#: the paper's split (4 minibatches per rollout batch, §5.1) at the lower learning rate of the grid
HEADLINE = {"lr": 3e-5, "minibatches": 4}
REPRODUCED_RATIO = 30.0  # GSPO/GRPO clipped-token ratio, lower end of the seed interval: same order as the paper
PARTLY_RATIO = 3.0  # the direction holds, the size does not
#: each objective's paper ε_low (§5.1), the unit of the ε sweep's "× paper" column
PAPER_EPS_LOW = {"grpo": GRPO_CLIP.low, "gspo": GSPO_CLIP.low}

CLIP_RATIO = register(
    Rule(
        "f1.clip_ratio",
        "1",
        {"reproduced": "reproduced", "partly": "partly reproduced", "not": "not reproduced"},
        {"REPRODUCED_RATIO": REPRODUCED_RATIO, "PARTLY_RATIO": PARTLY_RATIO},
        declared="gspo_lab/nb/findings.py, after the headline arm's GRPO cells had run",
        marker="F1_REPRODUCED_RATIO = 30.0",
        specs=("f1_clip_fractions",),
        post_hoc=True,
    )
)


@combination("f1.clip_ratio", tuple(CLIP_RATIO.outcomes), ("GSPO ÷ GRPO", "_against PARTLY_RATIO"),
             shown=("reproduced", "partly"))  # fmt: skip
def _clip_ratio(o: dict) -> str:
    """The ratio's interval above REPRODUCED_RATIO: reproduced; above PARTLY_RATIO: partly; else not."""
    if o["GSPO ÷ GRPO"] == "above":
        return "reproduced"
    return "partly" if o["_against PARTLY_RATIO"] == "above" else "not"


ACCURACY = register(
    Rule(
        "f1.accuracy",
        "1",
        {"lower": "GSPO ended lower than GRPO", "higher": "GSPO ended higher than GRPO", "none": "no difference shown"},
        {"LEVEL": 0.95},
        null="none",
        declared="gspo_record/f1/clipping.py, after the results (post hoc, a description)",
        marker="def accuracy_verdict(diff: pd.Series) -> Verdict",
        specs=("f1_clip_fractions",),
        post_hoc=True,
        reads=SIGNED,
    )
)


def accuracy_verdict(diff: pd.Series, id: str = "f1.accuracy"):
    """``f1.accuracy`` on the headline arm's per-seed differences GSPO − GRPO of final held-out accuracy: statement
    ``id``, the difference with the page's interval on its range; pending without two seeds."""
    return signed(ACCURACY, diff, lambda x: seed_interval(x, DIFFERENCE),
                  "in the headline arm, does GSPO end above or below GRPO in final held-out accuracy?", id,
                  DIFFERENCE)  # fmt: skip


def clip_ratio_verdict(ratios: pd.Series, seeds_declared: int, id: str = "f1.clip_ratio"):
    """``f1.clip_ratio`` on the per-seed ratios GSPO ÷ GRPO of the headline arm (module docstring): statement ``id``,
    the ratio with the page's interval on its range, read against both thresholds; pending without two seeds."""
    if sum(v == v for v in ratios) < 2:
        return CLIP_RATIO.verdict(PENDING)
    ratio = [Interval.of(ratios, lambda x: seed_interval(x, RATIO), null=t, bounds=RATIO)
             for t in (REPRODUCED_RATIO, PARTLY_RATIO)]  # fmt: skip
    number = Joint("f1.clip_ratio", (("GSPO ÷ GRPO", ratio[0]), ("_against PARTLY_RATIO", ratio[1])))
    done = "" if len(ratios) >= seeds_declared else f"{len(ratios)} of {seeds_declared} seeds finished"
    return CLIP_RATIO.state(id, "does GSPO clip at least the paper's order of magnitude more tokens than GRPO?",
                            number, provisional=done)  # fmt: skip


def _pair(table: pd.DataFrame, metric: str, where: dict) -> str:
    """ "GRPO value / GSPO value" (means over seeds) of ``metric`` in the arm ``where``."""
    parts = []
    for objective in ("grpo", "gspo"):
        rows = table[(table.objective == objective)]
        for k, v in where.items():
            rows = rows[rows[k] == v]
        parts.append(num(rows[metric].mean()) if len(rows) else "—")
    return " / ".join(parts)


def _ratio_cell(ratio: pd.DataFrame) -> str:
    if ratio.empty:
        return "—"
    r = summary(ratio["ratio"])
    return f"{num(r['mean'])} [{num(r['min'])}–{num(r['max'])}]"


def _at(table: pd.DataFrame, where: dict) -> pd.DataFrame:
    for k, v in where.items():
        table = table[table[k] == v]
    return table


def section() -> tuple[dict, dict]:
    s = spec("f1_clip_fractions")
    table = finished(s, "confirm")
    ratio = paired_ratio(table, ["lr", "minibatches"], "clip_token_frac")
    rows = []
    for (lr, m), arm in table.groupby(["lr", "minibatches"], sort=True):
        where = {"lr": lr, "minibatches": m}
        seeds = arm.groupby("objective")["seed"].nunique().to_dict()
        rows.append(
            [
                num(lr),
                m,
                f"{seeds.get('grpo', 0)} / {seeds.get('gspo', 0)}",
                _pair(arm, "clip_token_frac", where),
                _ratio_cell(_at(ratio, where)),
                _pair(arm, "clip_seq_frac", where),
                _pair(arm, "eval_final", where),
            ]
        )
    head = _at(ratio, HEADLINE)["ratio"]
    grpo, gspo = _pair(table, "clip_token_frac", HEADLINE).split(" / ")
    g_acc, s_acc = _pair(table, "eval_final", HEADLINE).split(" / ")
    arm = _at(table, HEADLINE)
    acc = paired_diff(arm.assign(arm_id=arm["objective"]), "gspo", "grpo", "eval_final")
    by_seq = _at(paired_ratio(table, ["lr", "minibatches"], "clip_seq_frac"), HEADLINE)["ratio"]
    ctx = {
        "progress": progress(s),
        "rows": rows,
        "headline": summary(head, RATIO, null=1.0),
        "rule": CLIP_RATIO,
        "verdict": clip_ratio_verdict(head, len(s.confirm_seeds)),
        "accuracy": {
            "verdict": accuracy_verdict(acc),
            "diff": diff_cell(acc),
            "lower": int((acc < 0).sum()),
            "n": len(acc),
        },
        "by_responses": summary(by_seq, RATIO, null=1.0),
        "absolute": {
            "grpo": grpo,
            "gspo": gspo,
            "grpo_acc": g_acc,
            "gspo_acc": s_acc,
            "start": num(table["eval_start"].mean()),
        },
    }
    curve = curves(s, "clip/token_frac:mean", "confirm")
    return ctx, {"f1_clip_curves": (_at(curve, HEADLINE), _plot_curves)}


def _plot_curves(data: pd.DataFrame):
    from gspo_lab.plots import plot_seed_curves

    return plot_seed_curves(data, ylabel="clipped-token fraction (mean of the M updates)", log=True)


def eps_section() -> tuple[dict, dict]:
    """How the clipped fraction moves with ε (``f1_eps_sweep``): a table, no verdict."""
    s = spec("f1_eps_sweep")
    table = finished(s, "confirm")
    rows = []
    for (objective, lo, hi), group in table.groupby(["objective", "eps_low", "eps_high"], sort=True):
        tok, acc = summary(group["clip_token_frac"]), summary(group["eval_final"])
        rows.append(
            [
                objective.upper(),
                f"{num(lo)} / {num(hi)}",
                num(lo / PAPER_EPS_LOW[objective]),
                int(tok["seeds"]),
                mean_ci(tok),
                num(group["clip_seq_frac"].mean()),
                mean_ci(acc),
            ]
        )
    return {"progress": progress(s), "rows": rows}, {}
