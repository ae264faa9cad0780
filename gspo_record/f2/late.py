"""Finding 2f, the primary endpoint: late held-out accuracy of finding 2's re-measured arms, each minus its comparison
arm, paired by seed (the comparisons ``data/specs/f2r_*.toml`` declare before their runs).

Rule ``f2r.late`` (:func:`late_verdict`, declared in the f2r specs before their runs): an arm's late held-out accuracy
minus its comparison arm's, paired by seed, is *higher* / *lower* when its 95 % interval excludes 0, else *no
difference shown*.
"""

from __future__ import annotations

import pandas as pd

from gspo_lab.experiments.endpoint_range import DIFFERENCE
from gspo_lab.experiments.reading import remember
from gspo_lab.experiments.stats import paired_diff, seed_interval
from gspo_record.fmt import clip_label, diff_cell
from gspo_record.rules import Rule, register
from gspo_record.signed import SIGNED, signed
from gspo_record.tables import F2, MODELS, declared, spec, with_base

__all__ = ["LATE", "COMPARISONS", "late_verdict", "late_rows", "pretty", "context"]

LATE = register(
    Rule(
        "f2r.late",
        "2f",
        {"higher": "higher", "lower": "lower", "none": "no difference shown"},
        {"LEVEL": 0.95},
        null="none",
        reads=SIGNED,
        declared="data/specs/f2r_*.toml, before their runs (endpoint v2's primary endpoint)",
        marker="Primary endpoint: late held-out accuracy (mean of the",
        specs=tuple(F2.values()),
    )
)


def late_verdict(diff: pd.Series, id: str = ""):
    """``f2r.late`` on per-seed differences of late held-out accuracy: statement ``id``."""
    return signed(LATE, diff, lambda x: seed_interval(x, DIFFERENCE), "does one arm end above the other?", id,
                  DIFFERENCE)  # fmt: skip


#: the late-accuracy comparisons the f2r specs declare, per model: (arm, its comparison arm); arms are named
#: "<objective>[ + R2] clip <clip>"
COMPARISONS = (
    ("gspo clip off", "grpo clip off"),
    ("gspo clip 1", "grpo clip 1"),
    ("grpo clip 1", "grpo clip off"),
    ("grpo + R2 clip off", "grpo clip off"),
    ("grpo + R2 clip 1", "grpo clip 1"),
    ("grpo_dual_clip clip off", "grpo clip off"),
    ("grpo clip 10", "grpo clip off"),
    ("grpo clip 30", "grpo clip off"),
    ("grpo_dual_clip clip off", "grpo clip 30"),
)


@remember()
def _runs(names: dict[str, str]) -> pd.DataFrame:
    """Every seed-10-14 run of the M = 16 family of one measurement, named "<objective>[ + R2] clip <clip>"."""
    parts = []
    for role in ("moe", "dense", "mechanism", "dose"):
        s = spec(names[role])
        parts.append(with_base(s, declared(s), ("objective", "grad_clip", "checkpoint")))
    t = pd.concat(parts, ignore_index=True)
    rr = t.get("routing_replay", pd.Series(False, index=t.index)).fillna(False).astype(bool)
    arm = t["objective"] + rr.map({True: " + R2", False: ""}) + " clip " + t["grad_clip"].map(clip_label)
    return t.assign(arm_id=arm, model=t["checkpoint"].map(MODELS))


def late_rows() -> list[dict]:
    rows = []
    for model, m in _runs(F2).groupby("model", sort=False):
        for arm, base in COMPARISONS:  # model, arm and base name where each verdict was read (reread.WHERE)
            diff = paired_diff(m, arm, base, "late_acc")
            if len(diff):
                verdict = late_verdict(diff, f"f2r.late.{model}.{arm}−{base}")
                rows.append({"model": model, "arm": arm, "other": base, "diff": diff, "verdict": verdict})
    model, arm, base = "MoE, candidate (M 8, lr 1e-4)", "gspo clip 1", "grpo clip 1"  # not the loop's last
    cand = declared(spec(F2["candidate"])).assign(arm_id=lambda d: d["objective"] + " clip 1")
    diff = paired_diff(cand, arm, base, "late_acc")
    rows.append({"model": model, "arm": arm, "other": base, "diff": diff,
                 "verdict": late_verdict(diff, "f2r.late.candidate")})  # fmt: skip
    s = spec(F2["dose_confirm"])
    fresh = with_base(s, declared(s), ("checkpoint",)).assign(arm_id=lambda d: d["checkpoint"].map(MODELS))
    diff = paired_diff(fresh, "MoE", "dense", "late_acc")
    model, arm, base = "seeds 15-19", "grpo clip 30 (MoE)", "grpo clip 30 (dense)"
    rows.append({"model": model, "arm": arm, "other": base, "diff": diff,
                 "verdict": late_verdict(diff, "f2r.late.dose_confirm")})  # fmt: skip
    return rows


def pretty(arm: str) -> str:
    """An arm id of :data:`COMPARISONS` as the page says it: ``grpo_dual_clip clip off`` → ``GRPO + dual-clip, no
    grad clip``."""
    head, _, clip = arm.rpartition(" clip ")
    head = head.replace("grpo_dual_clip", "GRPO + dual-clip").replace("grpo", "GRPO").replace("gspo", "GSPO")
    clip, _, rest = clip.partition(" ")
    return f"{head}, {'no grad clip' if clip == 'off' else f'grad clip {clip}'}" + (f" {rest}" if rest else "")


def context() -> dict:
    """2f's primary-endpoint table and the dual-clip comparisons 2e quotes."""
    late = late_rows()
    return {
        "rows": [
            [r["model"], pretty(r["arm"]), pretty(r["other"]), diff_cell(r["diff"]), r["verdict"].short] for r in late
        ],
        "dual_clip": [
            {**r, "arm": pretty(r["arm"]), "other": pretty(r["other"]), "diff": diff_cell(r["diff"])}
            for r in late
            if r["arm"].startswith("grpo_dual_clip")
        ],
        # GSPO − GRPO under a cap of 1 in the collapsing regime (M = 16, lr 5e-5), per model: the statements the
        # story and the recipe read beside the candidate regime's (f2r.late.candidate)
        "capped": {
            r["model"]: r["verdict"]
            for r in late
            if r["model"] in MODELS.values() and (r["arm"], r["other"]) == ("gspo clip 1", "grpo clip 1")
        },
        # the same comparison in the candidate regime (M = 8, lr 1e-4), the one the story and the recipe read there
        "candidate": next(r["verdict"] for r in late if r["verdict"].id == "f2r.late.candidate"),
    }
