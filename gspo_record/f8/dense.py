"""Finding 8: dense vs MoE (beyond the paper) — finding 2's collapse counts, 2d's spikes and 5's mismatch, side by
side for the two cold starts.

The collapse verdict is rule ``f2.dense`` (finding 2b). Rule ``f8.spikes`` (:func:`spikes_verdict`, set after the
results: post hoc): GRPO's largest per-run gradient norms on the two models are *of the same order* when the ratio of
their medians lies within a factor ``SAME_ORDER`` either way, else *different in size*.
"""

from __future__ import annotations

import pandas as pd

import gspo_record.figures as figures
from gspo_lab.experiments.store import finished
from gspo_record.f2.spikes import spikes
from gspo_record.f2.ten import runs as ten_runs
from gspo_record.fmt import clip_label, num
from gspo_record.kinds import Band
from gspo_record.rules import PENDING, Rule, register
from gspo_record.tables import F2, declared, spec

__all__ = ["SPIKES", "SAME_ORDER", "spikes_verdict", "section"]

SAME_ORDER = 3.0
SPIKES = register(
    Rule(
        "f8.spikes",
        "8",
        {"same": "of the same order", "different": "different in size"},
        {"SAME_ORDER": SAME_ORDER},
        declared="gspo_record/f8/dense.py, after the results (post hoc)",
        marker="def spikes_verdict(moe: pd.Series, dense: pd.Series) -> Verdict",
        specs=(F2["moe"], F2["dense"]),
        post_hoc=True,
    )
)


def spikes_verdict(moe: pd.Series, dense: pd.Series, id: str = "f8.spikes"):
    """``f8.spikes`` on GRPO's per-run largest gradient norms on the MoE and on the dense twin: statement ``id`` about
    the ratio of their medians against the band [1/SAME_ORDER, SAME_ORDER]."""
    if not len(moe) or not len(dense):
        return SPIKES.verdict(PENDING)
    number = Band(float(moe.median() / dense.median()), 1 / SAME_ORDER, SAME_ORDER, "MoE / dense median peak norm")
    return SPIKES.state(id, "are GRPO's gradient spikes of the same order on the MoE and the dense twin?", number,
                        reads={"below": "different", "inside": "same", "above": "different"})  # fmt: skip


def section() -> tuple[dict, dict]:
    collapse = []
    for name, s in (("MoE", F2["moe"]), ("dense", F2["dense"])):
        t = declared(spec(s), "confirm")
        rr = t.get("routing_replay", pd.Series(False, index=t.index)).astype(bool)
        off = t[(t["grad_clip"].map(clip_label) == "off") & ~rr]
        for objective in ("grpo", "gspo"):
            g = off[off.objective == objective]
            collapse.append(
                {"model": name, "objective": objective.upper(), "k": int(g["collapsed"].sum()), "n": len(g)}
            )
    prec = finished(spec("p5_precision"), "confirm").groupby("checkpoint")["bf16_seq_mean"].mean()
    grpo = spikes().query("objective == 'grpo'")
    moe, dense = grpo[grpo.model == "MoE"]["peak"], grpo[grpo.model == "dense"]["peak"]
    few = min(c["n"] for c in collapse)
    many = int(ten_runs().groupby(["model", "objective"])["seed"].nunique().min())
    ctx = {
        "collapse": collapse,
        # the figure, the counts and rule f2.dense (finding 2b) rest on `few` seeds per arm; the opening's result and
        # verdict (finding 2g, rule f2t.ten) on `many`
        "seeds": {"few": few, "many": many, "close": f"{few - 1}/{few} and {few}/{few}"},
        "precision": [{"checkpoint": ck, "value": num(v)} for ck, v in prec.items()],
        "precision_ratio": num(prec["moe-sort"] / prec["dense-sort"], 2),
        "spikes": spikes_verdict(moe, dense),
        "spikes_medians": {"moe": num(moe.median()), "dense": num(dense.median())},
    }
    by = {(c["model"], c["objective"]): (c["k"], c["n"]) for c in collapse}
    items = [(model, *by[model, "GRPO"], *by[model, "GSPO"]) for model in ("MoE", "dense")]
    xlabel = "share of runs that collapsed (Wilson 95 % interval), no grad-norm cap"
    return ctx, {"f8_dense": figures.rates(items, ("GRPO", "GSPO"), xlabel, ("tab:red", "tab:blue"))}
