"""Finding 5, the sampler's side (issue 50, item 1): top-k sampling's biased ratio and sampling replay in training
(``data/specs/f5t_topk_replay.toml``), its declared rule and predictions.

Rule ``f5t.replay`` (declared in the spec before its runs), per objective: replay − no replay in final held-out
accuracy, paired by seed, the page's 95 % interval on [−1, 1]: *higher* above 0, *lower* below, *none* otherwise.
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

__all__ = ["SPEC", "REPLAY", "runs", "replay_verdict", "declared_flips", "section", "PREDICTIONS"]

SPEC = "f5t_topk_replay"
REPLAY = register(
    Rule(
        "f5t.replay",
        "5",
        {"higher": "higher with sampling replay", "lower": "lower with sampling replay", "none": "no difference shown"},
        {"LEVEL": 0.95},
        null="none",
        reads=SIGNED,
        declared="data/specs/f5t_topk_replay.toml, before its runs",
        marker="Declared rule f5t.replay, per objective",
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
    """The spec's finished runs: objective, replay (bool), arm_id ("grpo" / "grpo+replay"), seed, eval_final,
    reward_auc, eval_mean (every evaluation of the run), clip_token_frac, reward_final, collapsed (v1)."""
    s = spec(SPEC)
    t = declared(s)
    if t.empty:
        return t
    t = with_endpoints(s, with_base(s, t, ("objective", "sampling_replay")))
    replay = t["sampling_replay"].fillna(False).astype(bool)
    return t.assign(replay=replay, arm_id=t["objective"] + replay.map({True: "+replay", False: ""}),
                    eval_mean=_eval_mean(s, t["key"]))  # fmt: skip


def replay_verdict(diff: pd.Series, id: str = ""):
    """``f5t.replay`` on per-seed replay − no replay differences: statement ``id``."""
    return signed(REPLAY, diff, lambda x: seed_interval(x, DIFFERENCE), "does sampling replay change where it ends?",
                  id, DIFFERENCE)  # fmt: skip


def declared_flips(t: pd.DataFrame, objective: str, outcome: str) -> list[str]:
    """The spec's re-readings under which ``f5t.replay`` leaves ``outcome`` (words as the page's robustness column)."""
    flips = []
    with reading.inner():
        for what, column in REREADINGS:
            other = replay_verdict(paired_diff(t, f"{objective}+replay", objective, column))
            if other.outcome != outcome:
                flips.append(f"{what}: {other.label}")
        diff = paired_diff(t, f"{objective}+replay", objective, "eval_final")
        for seed in sorted(diff.index):
            if (other := replay_verdict(diff.drop(seed))).outcome != outcome:
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
        diff = paired_diff(t, f"{objective}+replay", objective, "eval_final")
        if len(diff) < 2:
            continue
        verdict = replay_verdict(diff, f"f5t.replay.{objective}")
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
    found = [v for v in ctx["f5t"]["verdicts"] if v["objective"] == objective]
    if not found:
        raise ValueError(f"{SPEC}: no finished {objective} pairs to score its predictions: gspo-lab sweep {SPEC}")
    return found[0]


def _gspo_clips_more(ctx: dict) -> tuple[str, str]:
    """(1) GSPO without replay clips at least 3x the tokens it clips with replay, over the run."""
    v = _read(ctx, "gspo")
    return parts([(v["clip_off"] >= 3 * v["clip_on"], f"GSPO clipped tokens {num(v['clip_off'])} without replay, "
                   f"{num(v['clip_on'])} with it")])  # fmt: skip


def _grpo_unchanged(ctx: dict) -> tuple[str, str]:
    """(2) GRPO: f5t.replay reads "none"."""
    v = _read(ctx, "grpo")
    s = ctx["book"][v["verdict"].id]
    return parts([(s.rule_outcome == "none", f"GRPO replay − no replay {s.number.brief}: {s.label}")])


PREDICTIONS = (
    Prediction(SPEC, "5t", "GSPO without replay clips at least 3x the tokens it clips with replay, over the run",
               _gspo_clips_more),
    Prediction(SPEC, "5t", 'GRPO: f5t.replay reads "none"', _grpo_unchanged),
)  # fmt: skip
