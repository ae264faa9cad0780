"""Finding 5, the sampler's side (issue 51, item 1): R3, the bf16 sampler's routing replayed in the trainer, in
training (``data/specs/f5r_routing_replay.toml``), its declared rule and predictions.

Rule ``f5r.r3`` (declared in the spec before its runs), per objective: R3 − no R3 in final held-out accuracy, paired
by seed, the page's 95 % interval on [−1, 1]: *higher* above 0, *lower* below, *none* otherwise.
The spec's own re-readings (training-reward AUC, the mean of the run's evaluations, each seed left out) are printed
beside it (:func:`declared_flips`); the page's robustness column adds its own.
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

import gspo_lab.experiments.reading as reading
from gspo_lab.experiments.endpoint_range import ACCURACY, DIFFERENCE
from gspo_lab.experiments.spec import cells
from gspo_lab.experiments.stats import paired_diff, seed_interval
from gspo_lab.experiments.store import load_result, result_path
from gspo_record.fmt import arm_cell, diff_cell, num, robustness
from gspo_record.prediction import Prediction, parts
from gspo_record.rules import Rule, register
from gspo_record.signed import SIGNED, signed
from gspo_record.tables import declared, progress, spec, with_base, with_endpoints

__all__ = ["SPEC", "R3", "runs", "r3_verdict", "declared_flips", "section", "PREDICTIONS"]

SPEC = "f5r_routing_replay"
R3 = register(
    Rule(
        "f5r.r3",
        "5",
        {"higher": "higher with R3", "lower": "lower with R3", "none": "no difference shown"},
        {"LEVEL": 0.95},
        null="none",
        reads=SIGNED,
        declared="data/specs/f5r_routing_replay.toml, before its runs",
        marker="Declared rule f5r.r3, per objective",
        specs=(SPEC,),
    )
)
#: the spec's declared re-readings of the primary endpoint (eval_final): (words, column)
REREADINGS = (("training-reward AUC", "reward_auc"), ("mean of the evaluations", "eval_mean"))


def _eval_mean(s, keys) -> list[float]:
    by_key = {c.key: c for c in cells(s, "all")}
    out = []
    for key in keys:
        acc = (load_result(result_path(by_key[key])).get("eval") or {}).get("eval/accuracy_sampled", [])
        out.append(sum(acc) / len(acc) if acc else float("nan"))
    return out


def runs() -> pd.DataFrame:
    """The spec's finished runs: objective, replay (bool: R3 on), arm_id ("grpo" / "grpo+r3"), seed, eval_final,
    reward_auc, eval_mean (every evaluation of the run), clip_token_frac, reward_final, collapsed (v1)."""
    s = spec(SPEC)
    t = declared(s)
    if t.empty:
        return t
    t = with_endpoints(s, with_base(s, t, ("objective", "sampler_routing_replay")))
    replay = t["sampler_routing_replay"].fillna(False).astype(bool)
    return t.assign(replay=replay, arm_id=t["objective"] + replay.map({True: "+r3", False: ""}),
                    eval_mean=_eval_mean(s, t["key"]))  # fmt: skip


def r3_verdict(diff: pd.Series, id: str = ""):
    """``f5r.r3`` on per-seed R3 − no R3 differences: statement ``id``."""
    return signed(R3, diff, lambda x: seed_interval(x, DIFFERENCE), "does R3 change where it ends?", id,
                  DIFFERENCE)  # fmt: skip


def declared_flips(t: pd.DataFrame, objective: str, outcome: str) -> list[str]:
    """The spec's re-readings under which ``f5r.r3`` leaves ``outcome`` (words as the page's robustness column)."""
    flips = []
    with reading.inner():
        for what, column in REREADINGS:
            other = r3_verdict(paired_diff(t, f"{objective}+r3", objective, column))
            if other.outcome != outcome:
                flips.append(f"{what}: {other.label}")
        diff = paired_diff(t, f"{objective}+r3", objective, "eval_final")
        for seed in sorted(diff.index):
            if (other := r3_verdict(diff.drop(seed))).outcome != outcome:
                flips.append(f"without seed {seed}: {other.label}")
    return flips


def section() -> tuple[dict, dict]:
    s = spec(SPEC)
    t = runs()
    ctx = {"progress": progress(s), "rows": [], "verdicts": [], "seeds": len(s.confirm_seeds)}
    if t.empty:
        return ctx, {}
    for (objective, replay), g in t.groupby(["objective", "replay"], sort=True):
        ctx["rows"].append([objective.upper(), "on" if replay else "off", len(g), arm_cell(g["eval_final"], ACCURACY),
                            num(g["clip_token_frac"].mean()), num(g["reward_final"].mean()),
                            f"{int(g['collapsed'].sum())}/{len(g)}"])  # fmt: skip
    for objective in ("grpo", "gspo"):
        diff = paired_diff(t, f"{objective}+r3", objective, "eval_final")
        if len(diff) < 2:
            continue
        verdict = r3_verdict(diff, f"f5r.r3.{objective}")
        flips = declared_flips(t, objective, verdict.outcome)
        if flips:  # the spec's own re-readings make it fragile too, beside the page's robustness readings
            verdict = replace(verdict, flips=tuple(dict.fromkeys((*verdict.flips, *flips))))
        clip = {r: t[(t["objective"] == objective) & (t["replay"] == r)]["clip_token_frac"].mean() for r in (0, 1)}
        ctx["verdicts"].append({"objective": objective, "diff": diff_cell(diff), "verdict": verdict,
                                "declared": robustness(flips), "clip_off": clip[0], "clip_on": clip[1]})  # fmt: skip
    ctx["table"] = [[v["objective"].upper(), v["diff"], f"**{v['verdict'].label}**{v['verdict'].mark}", v["declared"]]
                    for v in ctx["verdicts"]]  # fmt: skip
    return ctx, {}


def _read(ctx: dict, objective: str) -> dict:
    found = [v for v in ctx["f5r"]["verdicts"] if v["objective"] == objective]
    if not found:
        raise ValueError(f"{SPEC}: no finished {objective} pairs to score its predictions: gspo-lab sweep {SPEC}")
    return found[0]


def _reads_none(objective: str):
    def score(ctx: dict) -> tuple[str, str]:
        v = _read(ctx, objective)
        s = ctx["book"][v["verdict"].id]
        return parts([(s.rule_outcome == "none", f"{objective.upper()} R3 − no R3 {s.number.brief}: {s.label}")])

    score.__doc__ = f'{objective.upper()}: f5r.r3 reads "none".'
    return score


def _gspo_clips_as_much(ctx: dict) -> tuple[str, str]:
    """(3) GSPO with R3 clips at least 0.8x the tokens it clips without, over the run."""
    v = _read(ctx, "gspo")
    return parts([(v["clip_on"] >= 0.8 * v["clip_off"], f"GSPO clipped tokens {num(v['clip_on'])} with R3, "
                   f"{num(v['clip_off'])} without")])  # fmt: skip


PREDICTIONS = (
    Prediction(SPEC, "5r", 'GRPO: f5r.r3 reads "none"', _reads_none("grpo")),
    Prediction(SPEC, "5r", 'GSPO: f5r.r3 reads "none"', _reads_none("gspo")),
    Prediction(SPEC, "5r", "GSPO with R3 clips at least 0.8x the tokens it clips without, over the run",
               _gspo_clips_as_much),
)  # fmt: skip
