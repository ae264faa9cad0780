"""Finding 5: precision (paper §5.4) — the probe ``p5_precision``, training on the bf16 sampler's log-probs
(``f5_precision_train``) and its re-measurement on fresh seeds (``f5_precision_confirm``).

Rule ``f5.premise`` (:func:`premise_verdict`), set after the results (post hoc) in place of a sentence that never
compared the mismatch with ε: the paper's premise — the inference engine's precision makes its likelihoods differ
from the trainer's by more than GSPO's clip band — *holds* when on every cold start the 95 % interval over seeds of
the bf16 sampler's mean length-normalised |Δ| lies above GSPO's ε_low (:data:`~gspo_lab.objectives.GSPO_CLIP`) while
the fp32 sampler's (the same weights and precision: the floor) lies below it; it *does not hold* when the bf16
interval lies below ε_low on every cold start; else *mixed*.

Rule ``f5.claim`` (:func:`claim_verdict`, f5_precision_train.toml, before its runs): *reproduced* if GSPO on bf16
log-probs ends within ``CLOSE_ACC`` held-out accuracy of GSPO on recomputed ones (the mean paired difference,
:class:`~gspo_record.margin.Margin`) while GRPO does not; *both within the margin* if both do; else *not reproduced*.
Rule ``f5.nonzero``: each arm's paired difference by its 95 % interval. Rule ``f5.confirm``: :mod:`.confirm`.
"""

from __future__ import annotations

import pandas as pd

from gspo_lab.experiments.endpoint_range import DIFFERENCE
from gspo_lab.experiments.stats import paired_diff, seed_interval
from gspo_lab.experiments.store import finished
from gspo_lab.objectives import GSPO_CLIP
from gspo_record.endpoints import bounds_of
from gspo_record.fmt import clip_label, diff_cell, mean_ci, num, summary
from gspo_record.joint import ANY, Joint, combination
from gspo_record.margin import Margin
from gspo_record.rules import PENDING, Rule, register
from gspo_record.signed import SIGNED, signed
from gspo_record.statements import Interval
from gspo_record.tables import progress, spec, with_first_update_clip

__all__ = [
    "PREMISE",
    "CLAIM",
    "NONZERO",
    "premise_verdict",
    "claim_verdict",
    "nonzero_verdict",
    "section",
    "train_section",
]

#: f5_precision_train.toml: "within 0.05 held-out accuracy"
CLOSE_ACC = 0.05

PREMISE = register(
    Rule(
        "f5.premise",
        "5",
        {
            "holds": "the paper's premise holds at toy scale",
            "not": "the paper's premise does not hold at toy scale",
            "mixed": "the paper's premise holds on some cold starts only",
        },
        {"EPS_LOW": GSPO_CLIP.low},
        declared="gspo_record/f5/precision.py, after the results (post hoc)",
        marker="def premise_verdict(table: pd.DataFrame, eps: float = GSPO_CLIP.low)",
        specs=("p5_precision",),
        post_hoc=True,
    )
)
CLAIM = register(
    Rule(
        "f5.claim",
        "5",
        {
            "reproduced": "reproduced: GSPO tolerates bf16 log-probs as π_old, GRPO does not",
            "indistinct": "both within the margin: GRPO's and GSPO's mean differences from their recomputed arms lie "
            "within 0.05, so the declared rule, which reads the means, cannot tell them apart (a margin, not an "
            "equivalence test)",
            "not": "not reproduced: GSPO on bf16 log-probs ends more than 0.05 away from GSPO on recomputed ones",
        },
        {"CLOSE_ACC": CLOSE_ACC},
        declared="data/specs/f5_precision_train.toml, before its runs",
        marker="if GSPO on bf16 log-probs ends within 0.05 held-out accuracy",
        specs=("f5_precision_train",),
    )
)
NONZERO = register(
    Rule(
        "f5.nonzero",
        "5",
        {"higher": "higher", "lower": "lower", "none": "no difference shown"},
        {},
        null="none",
        declared="gspo_lab/nb/findings.py, after the runs (a description)",
        marker="interval excludes 0)",
        specs=("f5_precision_train",),
        post_hoc=True,
        reads=SIGNED,
    )
)


def premise_verdict(table: pd.DataFrame, eps: float = GSPO_CLIP.low, id: str = "f5.premise"):
    """``f5.premise`` on the probe's table (columns checkpoint, bf16_seq_mean, fp32_seq_mean; module docstring):
    statement ``id``, one part per cold start holding its bf16 and fp32 intervals about GSPO's ε_low."""
    if table.empty:
        return PREMISE.verdict(PENDING)

    def about_eps(values: pd.Series) -> Interval:
        return Interval.of(values, lambda x: seed_interval(x, bounds_of(values.name)), null=eps)

    parts = tuple((str(ck), Joint("f5.premise.cold_start", (("bf16", about_eps(g["bf16_seq_mean"])),
                                                             ("fp32 floor", about_eps(g["fp32_seq_mean"])))))
                  for ck, g in table.groupby("checkpoint", sort=True))  # fmt: skip
    return PREMISE.state(id, "does the bf16 sampler's mismatch exceed GSPO's clip band where the fp32 floor does not?",
                         Joint("f5.premise", parts))  # fmt: skip


def cold_start_outcome(o: dict) -> str:
    """One cold start of ``f5.premise``: "above" (bf16 above ε_low, the fp32 floor below), "below" (bf16 below), else
    "mixed"."""
    if o["bf16"] == "above" and o["fp32 floor"] == "below":
        return "above"
    return "below" if o["bf16"] == "below" else "mixed"


def premise_outcome(o: dict) -> str:
    """``f5.premise``: holds when every cold start reads "above", not when every one reads "below", else mixed."""
    sides = set(o.values())
    return "holds" if sides == {"above"} else "not" if sides == {"below"} else "mixed"


combination("f5.premise.cold_start", ("above", "below", "mixed"), ("bf16", "fp32 floor"), shown=("above", "below"))(
    lambda o: cold_start_outcome(o)
)
combination("f5.premise", tuple(PREMISE.outcomes), ANY, shown=("holds", "not"))(lambda o: premise_outcome(o))


def claim_outcome(grpo: str, gspo: str) -> str:
    """``f5.claim`` from its two margins' outcomes (module docstring)."""
    return ("indistinct" if grpo == "within" else "reproduced") if gspo == "within" else "not"


_CLAIM_PARTS = ("GRPO bf16 − recomputed", "GSPO bf16 − recomputed")
combination("f5.claim", tuple(CLAIM.outcomes), _CLAIM_PARTS, shown=("reproduced", "not"))(
    lambda o: claim_outcome(*(o[k] for k in _CLAIM_PARTS))  # looked up when called: a mutant of it is read
)


def claim_verdict(grpo: pd.Series, gspo: pd.Series, seeds_declared: int, id: str = "f5.claim"):
    """``f5.claim`` on the per-seed differences (bf16 − recomputed) of GRPO and of GSPO at paper ε: each mean against
    the declared 0.05."""
    if min(len(grpo), len(gspo)) < 2:
        return CLAIM.verdict(PENDING)
    parts = tuple((name, Margin.of(d, lambda x: seed_interval(x, DIFFERENCE), CLOSE_ACC))
                  for name, d in zip(_CLAIM_PARTS, (grpo, gspo), strict=True))  # fmt: skip
    return CLAIM.state(
        id,
        "does GSPO tolerate bf16 log-probs as π_old where GRPO does not?",
        Joint("f5.claim", parts),
        provisional="" if min(len(grpo), len(gspo)) >= seeds_declared else "not all seeds finished",
    )


def nonzero_verdict(diff: pd.Series, id: str = "f5.nonzero"):
    """``f5.nonzero`` on an arm's per-seed differences (bf16 − recomputed): statement ``id``, the difference with the
    page's interval on its range; pending without two seeds."""
    return signed(NONZERO, diff, lambda x: seed_interval(x, DIFFERENCE), "does the arm end away from its recomputed "
                  "arm?", id, DIFFERENCE)  # fmt: skip


def _arms(table: pd.DataFrame) -> pd.DataFrame:
    """The training table with an ``arm_id`` column: "objective / π_old source / clip range"."""
    eps = table["eps_low"].map(lambda v: "paper ε" if clip_label(v) == "off" else f"ε = {float(v):g}")
    return table.assign(arm_id=table["objective"] + " / " + table["old_logp"] + " / " + eps)


def section() -> tuple[dict, dict]:
    s = spec("p5_precision")
    table = finished(s, "confirm")
    rows = []
    for ckpt, group in table.groupby("checkpoint", sort=True):
        m = group.mean(numeric_only=True)
        for p in ("fp32", "bf16"):
            rows.append(
                [
                    ckpt,
                    p,
                    f"{num(m[f'{p}_tok_mean'])} / {num(m[f'{p}_tok_p99'])} / {num(group[f'{p}_tok_max'].max())}",
                    f"{num(m[f'{p}_seq_mean'])} / {num(m[f'{p}_seq_p99'])} / {num(group[f'{p}_seq_max'].max())}",
                    num(m[f"{p}_seqsum_mean"]),
                    num(m[f"{p}_tok_outside_grpo"]),
                    num(m[f"{p}_seq_outside_gspo"]),
                ]
            )
    needed = [
        {"checkpoint": ck, "value": mean_ci(summary(g["bf16_gspo_eps_needed_p99"]))}
        for ck, g in sorted(table.groupby("checkpoint"), key=lambda kv: kv[0])
    ]
    ctx = {
        "progress": progress(s),
        "rows": rows,
        "needed": needed,
        "verdict": premise_verdict(table),
        "bf16": num(table["bf16_seq_mean"].mean()),
        "fp32": num(table["fp32_seq_mean"].mean()),
        "outside": num(table["bf16_seq_outside_gspo"].mean()),
        "eps": f"{num(GSPO_CLIP.low)} / {num(GSPO_CLIP.high)}",
        "per_checkpoint": [
            {
                "checkpoint": ck,
                "bf16": mean_ci(summary(g["bf16_seq_mean"])),
                "fp32": mean_ci(summary(g["fp32_seq_mean"])),
            }
            for ck, g in table.groupby("checkpoint")
        ],
    }
    return ctx, {}


def train_section() -> tuple[dict, dict]:
    s = spec("f5_precision_train")
    table = with_first_update_clip(s, _arms(finished(s, "confirm")))
    rows, diffs = [], {}
    for arm_id, group in table.groupby("arm_id", sort=True):
        objective, source, clip = arm_id.split(" / ")
        base = f"{objective} / recompute / paper ε"
        diff = paired_diff(table, arm_id, base, "eval_final") if arm_id != base else None
        if diff is not None:
            diffs[arm_id] = diff
        rows.append(
            [
                objective.upper(),
                source,
                clip,
                len(group),
                num(group["clip_token_frac_k0"].mean()),
                num(group["clip_token_frac"].mean()),
                mean_ci(summary(group["eval_final"])),
                diff_cell(diff) if diff is not None else "(reference)",
            ]
        )
    g, k = diffs["grpo / sampler_bf16 / paper ε"], diffs["gspo / sampler_bf16 / paper ε"]
    beyond = []  # a difference inside the 0.05 band can still be nonzero: say so
    for arm_id, diff in diffs.items():
        objective, source, clip = arm_id.split(" / ")
        arm, base = arm_id, f"{objective} / recompute / paper ε"  # where its verdict was read (the methods page)
        v = nonzero_verdict(diff, "f5.nonzero." + arm.replace(" / ", ".").replace(" ", ""))
        if v.rule_outcome in ("higher", "lower"):
            beyond.append({"objective": objective.upper(), "clip": clip, "verdict": v, "diff": diff_cell(diff)})
    f1 = finished(spec("f1_clip_fractions"), "confirm").set_index("key")
    same = table[table["key"].isin(f1.index)]
    cols = ["eval_final", "clip_token_frac", "reward_final", "grad_norm_max"]
    equal = sum(all(f1.loc[row.key, c] == row[c] for c in cols) for _, row in same.iterrows())
    clip_means = table.groupby("arm_id")[["clip_token_frac_k0", "clip_token_frac"]].mean().map(num)
    ctx = {
        "progress": progress(s),
        "rows": rows,
        "clip": {arm: r.to_dict() for arm, r in clip_means.iterrows()},
        "verdict": claim_verdict(g, k, len(s.confirm_seeds)),
        "beyond": beyond,
        "repro": {"equal": equal, "of": len(same)},
    }
    return ctx, {}
