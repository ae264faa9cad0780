"""Finding 2 at ten seeds (issue 22): the collapse headline's GRPO and GSPO arms without a grad-norm cap, seeds
10-14 (``f2r_collapse_moe`` / ``f2r_collapse_dense``) pooled with the fresh seeds 50-54 of
``data/specs/f2t_collapse_ten.toml``.

Rule ``f2t.ten`` per model on the pooled collapse counts (endpoint v2): *separates* when GRPO collapsed in ≥ 4n/5 of its
n runs and GSPO in ≤ n/5; *neither* when both ≤ n/5; *both* when both ≥ 4n/5; else *unclear* (collapse.class's
thresholds scaled to n, as f2e's pooled reading at a cap of 30). Declared with it: the verdict is re-read with each
seed left out and with a run counted collapsed by its final evaluation alone; a change under any is *fragile*. Beside
it, GSPO − GRPO late held-out accuracy paired by seed, with a Student-t interval.
"""

from __future__ import annotations

import pandas as pd

import gspo_lab.experiments.reading as reading
from gspo_lab.experiments.endpoint_range import DIFFERENCE
from gspo_lab.experiments.stats import declared_t_sign, paired_diff
from gspo_record.fmt import clip_label, diff_cell, robustness
from gspo_record.joint import Joint, combination
from gspo_record.rules import PENDING, Rule, register
from gspo_record.statements import Count
from gspo_record.tables import F2, MODELS, declared, progress, spec, with_base

__all__ = ["SPEC", "TEN", "ten_verdict", "robust_ten", "robust_gap", "runs", "section"]

SPEC = "f2t_collapse_ten"
SEEDS = 10

TEN = register(
    Rule(
        "f2t.ten",
        "2",
        {
            "separates": "GRPO collapses where GSPO does not",
            "neither": "neither collapses",
            "both": "both collapse",
            "unclear": "unclear (between the thresholds)",
        },
        {"HIGH": 0.8, "LOW": 0.2},
        declared="data/specs/f2t_collapse_ten.toml, before its runs",
        marker='rule f2t.ten per model: "separates"',
        specs=(SPEC,),
    )
)


@combination("f2t.ten", tuple(TEN.outcomes), ("GRPO", "GSPO"), shown=("separates",))
def _ten(o: dict) -> str:
    """GRPO >= 0.8 n and GSPO <= 0.2 n: separates; both <= 0.2 n: neither; both >= 0.8 n: both; else unclear."""
    pair = (o["GRPO"], o["GSPO"])
    return {("at_least", "at_most"): "separates", ("at_most", "at_most"): "neither",
            ("at_least", "at_least"): "both"}.get(pair, "unclear")  # fmt: skip


def _count(k: int, n: int) -> Count:
    """k of n against the rule's HIGH and LOW fractions (as of 10: >= 8, <= 2)."""
    return Count(k, n, round(TEN.thresholds["HIGH"] * 10), round(TEN.thresholds["LOW"] * 10), per=10)


def ten_verdict(k_grpo: int, n_grpo: int, k_gspo: int, n_gspo: int, seeds: int = SEEDS, id: str = "f2t.ten"):
    """Rule ``f2t.ten`` on the pooled collapse counts (k collapsed of n runs per objective): statement ``id``."""
    if not n_grpo or not n_gspo:
        return TEN.verdict(PENDING)
    number = Joint("f2t.ten", (("GRPO", _count(k_grpo, n_grpo)), ("GSPO", _count(k_gspo, n_gspo))))
    done = min(n_grpo, n_gspo)
    supersedes = ("f2.collapse.off",) if id == "f2t.ten.MoE" else ()  # five seeds of the same cells, within these ten
    return TEN.state(id, "does GRPO collapse where GSPO does not, on ten seeds?", number, supersedes=supersedes,
                     provisional="" if done >= seeds else f"{done} of {seeds} seeds finished")  # fmt: skip


def _verdict(m: pd.DataFrame, column: str = "collapsed", id: str = "f2t.ten"):
    counts = {o: (int(m.loc[m.objective == o, column].sum()), int((m.objective == o).sum())) for o in ("grpo", "gspo")}
    return ten_verdict(*counts["grpo"], *counts["gspo"], id=id)


def robust_ten(m: pd.DataFrame, id: str = "f2t.ten") -> tuple:
    """(verdict, flips) for one model's pooled runs: the declared re-readings under which the verdict changes."""
    verdict = _verdict(m, id=id)
    if verdict.outcome == PENDING:
        return verdict, []
    flips = []
    with reading.inner():
        last = _verdict(m, "collapsed_last")
        if last.outcome != verdict.outcome:
            flips.append(f"final evaluation alone: {last.label}")
        for seed in sorted(m["seed"].unique()):
            other = _verdict(m[m["seed"] != seed])
            if other.outcome != verdict.outcome:
                flips.append(f"without seed {seed}: {other.label}")
    return verdict, flips


def robust_gap(m: pd.DataFrame) -> list[str]:
    """The re-readings under which the sign of GSPO − GRPO late held-out accuracy (Student-t interval: above 0, below,
    or across) changes: each seed left out, training-reward AUC, the final evaluation alone."""
    sign = declared_t_sign(paired_diff(m, "gspo", "grpo", "late_acc"), DIFFERENCE)
    flips = [name for name, column in (("reward AUC", "reward_auc"), ("final evaluation", "eval_final"))
             if declared_t_sign(paired_diff(m, "gspo", "grpo", column), DIFFERENCE) != sign]  # fmt: skip
    left_out = {s: paired_diff(m[m["seed"] != s], "gspo", "grpo", "late_acc") for s in sorted(m["seed"].unique())}
    flips += [f"without seed {s}" for s, d in left_out.items() if declared_t_sign(d, DIFFERENCE) != sign]
    return flips


def runs() -> pd.DataFrame:
    """The fresh seeds' runs and the stored seeds 10-14 of the same cells (no grad clip, no Routing Replay)."""
    parts = []
    s = spec(SPEC)
    fresh = declared(s)
    if not fresh.empty:
        parts.append(with_base(s, fresh, ("checkpoint", "objective")).assign(source=SPEC))
    for name in (F2["moe"], F2["dense"]):
        f2 = spec(name)
        t = with_base(f2, declared(f2), ("checkpoint", "objective", "grad_clip"))
        rr = t.get("routing_replay", pd.Series(False, index=t.index)).fillna(False).astype(bool)
        parts.append(t[(t["grad_clip"].map(clip_label) == "off") & ~rr].assign(source=name))
    table = pd.concat(parts, ignore_index=True)
    table = table.assign(model=table["checkpoint"].map(MODELS), arm_id=table["objective"])
    order = table["checkpoint"].map(list(MODELS).index)  # the MoE first, as everywhere on the page
    return table.assign(order=order).sort_values(["order", "seed"], kind="stable").drop(columns="order")


def _counts(runs: pd.DataFrame) -> dict[str, str]:
    """Collapsed runs per objective as "k/n"."""
    return {o: f"{int(g['collapsed'].sum())}/{len(g)}" for o, g in runs.groupby("objective")}


def section() -> tuple[dict, dict]:
    table = runs()
    rows, verdicts = [], []
    for model, m in table.groupby("model", sort=False):
        verdict, flips = robust_ten(m, f"f2t.ten.{model}")
        count, first, again = (_counts(part) for part in (m, m[m["source"] != SPEC], m[m["source"] == SPEC]))
        diff = diff_cell(paired_diff(m, "gspo", "grpo", "late_acc"))
        sure = robustness(flips)
        counts = [f"{first.get(o, '—')} → {again.get(o, '—')} = {count.get(o, '—')}" for o in ("grpo", "gspo")]
        rows.append([model, *counts, diff, str(verdict), sure])
        gap_flips = robust_gap(m)
        verdicts.append({"model": model, "verdict": verdict, "diff": diff, "grpo": count.get("grpo", "—"),
                         "gspo": count.get("gspo", "—"), "fresh": again, "sure": "fragile" if flips else "robust",
                         "why": robustness(flips[:1]) + ("; …" if len(flips) > 1 else ""),
                         "gap_sure": ("fragile: " + ", ".join(gap_flips) if gap_flips else "robust")
                         + ", a check added after the results"})  # fmt: skip
    header = ["model", "GRPO collapsed (10-14 → 50-54 = pooled)", "GSPO collapsed (10-14 → 50-54 = pooled)",
              "GSPO − GRPO late held-out accuracy, 10 seeds [95 % t]", "f2t.ten", "robustness"]  # fmt: skip
    return {"progress": progress(spec(SPEC)), "rows": rows, "verdicts": verdicts, "header": header}, {}
