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
Rule ``f5.nonzero``: each arm's paired difference by its 95 % interval. Rule ``f5.confirm`` (:func:`confirm_verdict`,
f5_precision_confirm.toml, before its runs): a difference whose interval excluded 0 on the first seeds is *confirmed*
if its interval on the fresh seeds excludes 0 with the same sign, else *not confirmed*; else *nothing to confirm*.
"""

from __future__ import annotations

import pandas as pd

import gspo_record.figures as figures
from gspo_lab.experiments.endpoint_range import DIFFERENCE
from gspo_lab.experiments.spec import cells
from gspo_lab.experiments.stats import interval_sign, paired_diff, seed_interval
from gspo_lab.experiments.store import finished
from gspo_lab.objectives import GSPO_CLIP
from gspo_record.fmt import clip_label, diff_cell, mean_ci, num, summary
from gspo_record.joint import Joint, combination
from gspo_record.margin import Margin
from gspo_record.rules import PENDING, Rule, Verdict, register
from gspo_record.signed import SIGNED, signed
from gspo_record.tables import progress, spec, with_first_update_clip

__all__ = [
    "PREMISE",
    "CLAIM",
    "NONZERO",
    "CONFIRM",
    "premise_verdict",
    "claim_verdict",
    "nonzero_verdict",
    "confirm_verdict",
    "section",
    "train_section",
    "confirm_section",
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
            "indistinct": "both within the margin: GRPO and GSPO each end within 0.05 of their recomputed arms, so the "
            "declared rule cannot tell them apart (a margin, not an equivalence test)",
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


def premise_verdict(table: pd.DataFrame, eps: float = GSPO_CLIP.low) -> Verdict:
    """``f5.premise`` on the probe's table (columns checkpoint, bf16_seq_mean, fp32_seq_mean; module docstring)."""
    if table.empty:
        return PREMISE.verdict(PENDING)
    rows = [(summary(g["bf16_seq_mean"]), summary(g["fp32_seq_mean"])) for _, g in table.groupby("checkpoint")]
    above = [bf16["ci_low"] > eps and fp32["ci_high"] < eps for bf16, fp32 in rows]
    below = [bf16["ci_high"] < eps for bf16, _ in rows]
    return PREMISE.verdict("holds" if all(above) else ("not" if all(below) else "mixed"))


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


def confirm_verdict(first: pd.Series, fresh: pd.Series) -> Verdict:
    """``f5.confirm`` on a difference's per-seed values on the first and the fresh seeds (module docstring)."""
    s1, s2 = interval_sign(first, DIFFERENCE), interval_sign(fresh, DIFFERENCE)
    if s1 == 0:
        return CONFIRM.verdict("nothing")
    return CONFIRM.verdict("confirmed" if s2 == s1 else "not")


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
        v = nonzero_verdict(diff, "f5.nonzero." + arm_id.replace(" / ", ".").replace(" ", ""))
        if v.rule_outcome in ("higher", "lower"):
            objective, _, clip = arm_id.split(" / ")
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


def confirm_section() -> tuple[dict, dict]:
    s, first_spec = spec("f5_precision_confirm"), spec("f5_precision_train")
    table, first = _arms(finished(s, "confirm")), _arms(finished(first_spec, "confirm"))
    rows, verdicts = [], []
    for arm_id in sorted(set(table["arm_id"])):
        objective, source, clip = arm_id.split(" / ")
        base = f"{objective} / recompute / paper ε"
        if arm_id == base:
            continue
        d1, d2 = paired_diff(first, arm_id, base, "eval_final"), paired_diff(table, arm_id, base, "eval_final")
        v = confirm_verdict(d1, d2)
        label = v.label + (
            " (fresh seeds: interval excludes 0)" if v.outcome == "nothing" and interval_sign(d2, DIFFERENCE) else ""
        )
        if v.outcome != "nothing":
            verdicts.append(
                {"objective": objective.upper(), "source": source, "clip": clip, "verdict": v, "fresh": diff_cell(d2)}
            )
        rows.append(
            [objective.upper(), source, clip, diff_cell(d1), diff_cell(d2), diff_cell(pd.concat([d1, d2])), label]
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
