"""Finding 8: dense vs MoE (beyond the paper) — finding 2's collapse counts, 2d's spikes and 5's mismatch, side by
side for the two cold starts."""

from __future__ import annotations

import pandas as pd

from gspo_lab.experiments.store import finished
from gspo_lab.findings.fmt import clip_label, num
from gspo_lab.findings.tables import spec

__all__ = ["section"]


def section() -> tuple[dict, dict]:
    collapse = []
    for name, s in (("MoE", "f2_collapse_moe"), ("dense", "f2_collapse_dense")):
        t = finished(spec(s), "confirm")
        rr = t.get("routing_replay", pd.Series(False, index=t.index)).astype(bool)
        off = t[(t["grad_clip"].map(clip_label) == "off") & ~rr]
        for objective in ("grpo", "gspo"):
            g = off[off.objective == objective]
            collapse.append(
                {"model": name, "objective": objective.upper(), "k": int(g["collapsed"].sum()), "n": len(g)}
            )
    prec = finished(spec("p5_precision"), "confirm").groupby("checkpoint")["bf16_seq_mean"].mean()
    return {"collapse": collapse, "precision": [{"checkpoint": ck, "value": num(v)} for ck, v in prec.items()]}, {}
