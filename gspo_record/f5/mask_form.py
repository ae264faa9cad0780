"""Finding 5, the sampler's side (issue 50, item 3): the form of a sequence-level sampler mask in training, TRL's
product against SkyRL's geometric mean, with a stale sampler (``data/specs/f5g_mask_form.toml``), its declared rule
and predictions.

Rule ``f5g.form`` (declared in the spec before its runs), per objective: product − geometric in late held-out
accuracy (endpoint v2), paired by seed, the page's 95 % interval on [−1, 1]: *higher* (the product ends higher) above
0, *lower* below, *none* otherwise. The spec's declared re-readings — the secondary endpoint (final held-out accuracy)
and each seed left out — enter the statement's flips (:func:`declared_flips`).
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

import gspo_lab.experiments.reading as reading
from gspo_lab.experiments.endpoint_range import ACCURACY, DIFFERENCE
from gspo_lab.experiments.stats import paired_diff, seed_interval
from gspo_record.fmt import arm_cell, diff_cell, num, robustness
from gspo_record.prediction import Prediction, parts
from gspo_record.rules import Rule, register
from gspo_record.signed import SIGNED, signed
from gspo_record.tables import declared, progress, spec, with_base

__all__ = ["SPEC", "FORM", "ARMS", "runs", "form_verdict", "declared_flips", "section", "PREDICTIONS"]

SPEC = "f5g_mask_form"
FORM = register(
    Rule(
        "f5g.form",
        "5",
        {
            "higher": "the product mask ends higher",
            "lower": "the product mask ends lower",
            "none": "no difference shown",
        },
        {"LEVEL": 0.95},
        null="none",
        reads=SIGNED,
        declared="data/specs/f5g_mask_form.toml, before its runs",
        marker="Declared rule f5g.form, per objective",
        specs=(SPEC,),
    )
)
#: sampler_correction → the arm's words on the page (the spec's three arms)
ARMS = {"off": "no correction", "sequence_mask": "product (TRL: ρ > 3 dropped)",
        "sequence_geo_mask": "geometric (SkyRL: outside [0.99, 1.01] dropped)"}  # fmt: skip
#: the spec's declared secondary endpoint: (words, column)
SECONDARY = ("final held-out accuracy", "eval_final")


def _masked_share(key: str) -> float:
    """The run's mean share of tokens its mask dropped (whole responses), over its rollouts; 0 with no correction."""
    from gspo_record.f11.regimes import per_rollout

    series = per_rollout(SPEC, key).get("correction/masked_frac:mean")
    return float(pd.Series(series, dtype=float).mean()) if series is not None else 0.0


def runs() -> pd.DataFrame:
    """The spec's finished runs: objective, mask ("off" / "sequence_mask" / "sequence_geo_mask"), arm_id
    ("grpo/sequence_mask", …), seed, late_acc, eval_final, collapsed, frozen, masked (:func:`_masked_share`)."""
    s = spec(SPEC)
    t = declared(s)
    if t.empty:
        return t
    t = with_base(s, t, ("objective", "sampler_correction"))
    mask = t["sampler_correction"].fillna("off")
    for column in ("collapsed", "frozen"):
        t[column] = t[column].fillna(False).astype(bool) if column in t else False
    return t.assign(mask=mask, arm_id=t["objective"] + "/" + mask, masked=[_masked_share(k) for k in t["key"]])


def form_verdict(diff: pd.Series, id: str = ""):
    """``f5g.form`` on per-seed product − geometric differences: statement ``id``."""
    return signed(FORM, diff, lambda x: seed_interval(x, DIFFERENCE), "does the mask's form change where it ends?", id,
                  DIFFERENCE)  # fmt: skip


def declared_flips(t: pd.DataFrame, objective: str, outcome: str) -> list[str]:
    """The spec's re-readings under which ``f5g.form`` leaves ``outcome`` (words as the page's robustness column)."""
    product, geometric = f"{objective}/sequence_mask", f"{objective}/sequence_geo_mask"
    flips = []
    with reading.inner():
        what, column = SECONDARY
        if (other := form_verdict(paired_diff(t, product, geometric, column))).outcome != outcome:
            flips.append(f"{what}: {other.label}")
        diff = paired_diff(t, product, geometric, "late_acc")
        for seed in sorted(diff.index):
            if (other := form_verdict(diff.drop(seed))).outcome != outcome:
                flips.append(f"without seed {seed}: {other.label}")
    return flips


def section() -> tuple[dict, dict]:
    s = spec(SPEC)
    t = runs()
    ctx = {"progress": progress(s), "rows": [], "verdicts": [], "against_off": [], "seeds": len(s.confirm_seeds)}
    if t.empty:
        return ctx, {}
    for objective in ("grpo", "gspo"):
        for mask, words in ARMS.items():
            g = t[t["arm_id"] == f"{objective}/{mask}"]
            if g.empty:
                continue
            counts = [f"{int(g[c].sum())}/{len(g)}" for c in ("collapsed", "frozen")]
            ctx["rows"].append([objective.upper(), words, len(g), arm_cell(g["late_acc"], ACCURACY),
                                arm_cell(g["eval_final"], ACCURACY), num(g["masked"].mean()), *counts])  # fmt: skip
            if mask != "off" and len(d := paired_diff(t, f"{objective}/{mask}", f"{objective}/off", "late_acc")) >= 2:
                ctx["against_off"].append([objective.upper(), words, diff_cell(d)])
        diff = paired_diff(t, f"{objective}/sequence_mask", f"{objective}/sequence_geo_mask", "late_acc")
        if len(diff) < 2:
            continue
        verdict = form_verdict(diff, f"f5g.form.{objective}")
        flips = declared_flips(t, objective, verdict.outcome)
        if flips:  # the spec's own re-readings make it fragile too, beside the page's robustness readings
            verdict = replace(verdict, flips=tuple(dict.fromkeys((*verdict.flips, *flips))))
        masked = {
            m: t[t["arm_id"] == f"{objective}/{m}"]["masked"].mean() for m in ("sequence_mask", "sequence_geo_mask")
        }
        ctx["verdicts"].append({"objective": objective, "diff": diff_cell(diff), "verdict": verdict,
                                "declared": robustness(flips), "masked": masked})  # fmt: skip
    ctx["table"] = [[v["objective"].upper(), v["diff"], f"**{v['verdict'].label}**{v['verdict'].mark}", v["declared"]]
                    for v in ctx["verdicts"]]  # fmt: skip
    return ctx, {}


def _read(ctx: dict, objective: str) -> dict:
    found = [v for v in ctx["f5g"]["verdicts"] if v["objective"] == objective]
    if not found:
        raise ValueError(f"{SPEC}: no finished {objective} pairs to score its predictions: gspo-lab sweep {SPEC}")
    return found[0]


def _geometric_drops_more(ctx: dict) -> tuple[str, str]:
    """(1) The geometric mask drops at least 5x the responses the product mask drops, over the run, both objectives."""
    checks = []
    for objective in ("grpo", "gspo"):
        m = _read(ctx, objective)["masked"]
        checks.append((m["sequence_geo_mask"] >= 5 * m["sequence_mask"], f"{objective.upper()}: geometric "
                       f"{num(m['sequence_geo_mask'])}, product {num(m['sequence_mask'])}"))  # fmt: skip
    return parts(checks)


def _reads_none(objective: str):
    def score(ctx: dict) -> tuple[str, str]:
        v = _read(ctx, objective)
        s = ctx["book"][v["verdict"].id]
        return parts(
            [(s.rule_outcome == "none", f"{objective.upper()} product − geometric {s.number.brief}: {s.label}")]
        )

    score.__doc__ = f'{objective.upper()}: f5g.form reads "none".'
    return score


PREDICTIONS = (
    Prediction(SPEC, "5g", "the geometric mask drops at least 5x the responses the product mask drops, over the run, "
               "for both objectives", _geometric_drops_more),
    Prediction(SPEC, "5g", 'GRPO: f5g.form reads "none"', _reads_none("grpo")),
    Prediction(SPEC, "5g", 'GSPO: f5g.form reads "none"', _reads_none("gspo")),
)  # fmt: skip
