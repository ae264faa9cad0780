"""Finding 4: Routing Replay (paper §5.3) — the GRPO arms of finding 2's MoE spec (``F2["moe"]``, endpoint v2), with
and without R2.

Rule ``f4.replay`` (:func:`replay_verdict`), per grad-norm clip level, declared with this section after
``f2_collapse_moe`` had run (so: post hoc): where plain GRPO collapses (≥ ``COLLAPSES_AT_LEAST`` of 5), *R2 prevented
GRPO's collapse* if GRPO + R2 is stable (≤ ``STABLE_AT_MOST``), else *R2 did not prevent it*; where plain GRPO does
not collapse there is *no collapse to prevent*.
"""

from __future__ import annotations

import pandas as pd

import gspo_record.figures as figures
from gspo_lab.experiments.endpoint_range import DIFFERENCE
from gspo_record.f2.collapse import collapsed
from gspo_record.fmt import cap_name, clip_label, mean_ci, num, summary
from gspo_record.joint import Joint, combination
from gspo_record.rules import COLLAPSES_AT_LEAST, PENDING, STABLE_AT_MOST, Rule, register
from gspo_record.tables import F2, FIRST, declared, spec

__all__ = ["REPLAY", "replay_verdict", "section"]

REPLAY = register(
    Rule(
        "f4.replay",
        "4",
        {
            "prevented": "R2 prevented GRPO's collapse",
            "not": "R2 did not prevent GRPO's collapse",
            "none": "no collapse to prevent",
        },
        {"COLLAPSES_AT_LEAST": COLLAPSES_AT_LEAST, "STABLE_AT_MOST": STABLE_AT_MOST},
        declared="docs/findings.template.md, after f2_collapse_moe had run",
        marker="R2 prevented GRPO's collapse",
        specs=(FIRST["moe"], F2["moe"]),
        post_hoc=True,
    )
)


@combination("f4.replay", tuple(REPLAY.outcomes), ("GRPO", "GRPO + R2"))
def _replay(o: dict) -> str:
    """Plain GRPO collapses (>= 4/5) and GRPO + R2 is stable (<= 1/5): prevented; plain collapses, R2 not stable: not;
    plain GRPO does not collapse: none."""
    if o["GRPO"] != "at_least":
        return "none"
    return "prevented" if o["GRPO + R2"] == "at_most" else "not"


def replay_verdict(k_plain: int, n_plain: int, k_r2: int, n_r2: int, id: str = "f4.replay"):
    """``f4.replay`` on one clip level's collapsed counts of GRPO and GRPO + R2 (module docstring): statement ``id``,
    whose number prints both counts (the shared collapse thresholds, :func:`gspo_record.f2.collapse.collapsed`);
    pending without runs of both."""
    if not n_plain or not n_r2:
        return REPLAY.verdict(PENDING)
    number = Joint("f4.replay", (("GRPO", collapsed(k_plain, n_plain)), ("GRPO + R2", collapsed(k_r2, n_r2))))
    return REPLAY.state(id, "does Routing Replay prevent GRPO's collapse on the MoE?", number)


def section() -> tuple[dict, dict]:
    table = declared(spec(F2["moe"]), "confirm")
    table = table[table.objective == "grpo"]
    table = table.assign(clip=table["grad_clip"].map(clip_label))
    rows, verdicts, items = [], [], []
    for clip, group in table.groupby("clip", sort=True):
        wide = group.pivot_table(index="seed", columns="routing_replay", values="eval_final", aggfunc="first").dropna()
        rate = {rr: f"{int(g['collapsed'].sum())}/{len(g)}" for rr, g in group.groupby("routing_replay")}
        diff = (wide[True] - wide[False]) if {True, False} <= set(wide.columns) else pd.Series(dtype=float)
        acc = {rr: mean_ci(summary(g["eval_final"])) for rr, g in group.groupby("routing_replay")}
        rows.append(
            [
                clip,
                rate.get(False, "—"),
                rate.get(True, "—"),
                acc.get(False, "—"),
                acc.get(True, "—"),
                f"{num(diff.mean()) if len(diff) else '—'} "
                f"[{num(diff.min()) if len(diff) else '—'}–{num(diff.max()) if len(diff) else '—'}]",
            ]
        )
        if len(diff):
            items.append((f"grad-norm cap {cap_name(clip)}", diff, DIFFERENCE))
        plain, r2 = group[~group.routing_replay.astype(bool)], group[group.routing_replay.astype(bool)]
        if len(plain) and len(r2):
            kp, kr = int(plain["collapsed"].sum()), int(r2["collapsed"].sum())
            v = replay_verdict(kp, len(plain), kr, len(r2), f"f4.replay.{clip}")
            verdicts.append({"clip": clip, "verdict": v})
    wall = table.pivot_table(index=["seed", "clip"], columns="routing_replay", values="wall_s", aggfunc="first")
    ratio = (wall[True] / wall[False]).dropna().tolist()
    cost = {"mean": num(sum(ratio) / len(ratio)), "pairs": len(ratio), "min": num(min(ratio)), "max": num(max(ratio))}
    figure = figures.per_seed(items, "final held-out accuracy, GRPO + R2 − GRPO (paired by seed)")
    return {"rows": rows, "verdicts": verdicts, "cost": cost, "spec": F2["moe"]}, {"f4_replay": figure}
