"""Finding 5's on/off training arms (sampling replay, ``f5t``; R3, ``f5r``): one boolean TrainConfig knob turned on
and off for GRPO and GSPO, read paired by seed on final held-out accuracy. The readers in :mod:`.topk` and :mod:`.r3`
keep their rule, verdict function and predictions; the table, the spec's declared re-readings and the section's
context are built here once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pandas as pd

import gspo_lab.experiments.reading as reading
from gspo_lab.experiments.endpoint_range import ACCURACY
from gspo_lab.experiments.spec import cells
from gspo_lab.experiments.stats import paired_diff
from gspo_lab.experiments.store import load_result, result_path
from gspo_record.fmt import arm_cell, diff_cell, num, robustness
from gspo_record.tables import declared, progress, spec, with_base, with_endpoints

__all__ = ["REREADINGS", "runs", "declared_flips", "section", "read"]

#: the specs' declared re-readings of the primary endpoint (eval_final): (words, column)
REREADINGS = (("training-reward AUC", "reward_auc"), ("mean of the evaluations", "eval_mean"))


def _eval_mean(s, keys) -> list[float]:
    by_key = {c.key: c for c in cells(s, "all")}
    out = []
    for key in keys:
        acc = (load_result(result_path(by_key[key])).get("eval") or {}).get("eval/accuracy_sampled", [])
        out.append(sum(acc) / len(acc) if acc else float("nan"))
    return out


def runs(name: str, knob: str, suffix: str) -> pd.DataFrame:
    """Spec ``name``'s finished runs: objective, replay (bool: ``knob`` on), arm_id ("grpo" / "grpo" + ``suffix``),
    seed, eval_final, reward_auc, eval_mean (every evaluation of the run), clip_token_frac, reward_final, collapsed
    (v1)."""
    s = spec(name)
    t = declared(s)
    if t.empty:
        return t
    t = with_endpoints(s, with_base(s, t, ("objective", knob)))
    on = t[knob].fillna(False).astype(bool)
    return t.assign(replay=on, arm_id=t["objective"] + on.map({True: suffix, False: ""}),
                    eval_mean=_eval_mean(s, t["key"]))  # fmt: skip


def declared_flips(t: pd.DataFrame, objective: str, outcome: str, verdict: Callable, suffix: str) -> list[str]:
    """The spec's re-readings under which ``verdict`` (on per-seed on − off differences) leaves ``outcome`` (words as
    the page's robustness column)."""
    flips = []
    with reading.inner():
        for what, column in REREADINGS:
            other = verdict(paired_diff(t, f"{objective}{suffix}", objective, column))
            if other.outcome != outcome:
                flips.append(f"{what}: {other.label}")
        diff = paired_diff(t, f"{objective}{suffix}", objective, "eval_final")
        for seed in sorted(diff.index):
            if (other := verdict(diff.drop(seed))).outcome != outcome:
                flips.append(f"without seed {seed}: {other.label}")
    return flips


def section(name: str, t: pd.DataFrame, verdict: Callable, suffix: str, rule_id: str) -> tuple[dict, dict]:
    """The page's context for spec ``name`` from its runs ``t``: the arms table, and per objective the statement
    ``rule_id.<objective>`` of ``verdict`` with the spec's re-readings in its flips and the clipped-token fractions."""
    s = spec(name)
    ctx = {"progress": progress(s), "rows": [], "verdicts": [], "seeds": len(s.confirm_seeds)}
    if t.empty:
        return ctx, {}
    for (objective, on), g in t.groupby(["objective", "replay"], sort=True):
        ctx["rows"].append([objective.upper(), "on" if on else "off", len(g), arm_cell(g["eval_final"], ACCURACY),
                            num(g["clip_token_frac"].mean()), num(g["reward_final"].mean()),
                            f"{int(g['collapsed'].sum())}/{len(g)}"])  # fmt: skip
    for objective in ("grpo", "gspo"):
        diff = paired_diff(t, f"{objective}{suffix}", objective, "eval_final")
        if len(diff) < 2:
            continue
        v = verdict(diff, f"{rule_id}.{objective}")
        flips = declared_flips(t, objective, v.outcome, verdict, suffix)
        if flips:  # the spec's own re-readings make it fragile too, beside the page's robustness readings
            v = replace(v, flips=tuple(dict.fromkeys((*v.flips, *flips))))
        clip = {r: t[(t["objective"] == objective) & (t["replay"] == r)]["clip_token_frac"].mean() for r in (0, 1)}
        ctx["verdicts"].append({"objective": objective, "diff": diff_cell(diff), "verdict": v,
                                "declared": robustness(flips), "clip_off": clip[0], "clip_on": clip[1]})  # fmt: skip
    ctx["table"] = [[v["objective"].upper(), v["diff"], f"**{v['verdict'].label}**{v['verdict'].mark}", v["declared"]]
                    for v in ctx["verdicts"]]  # fmt: skip
    return ctx, {}


def read(ctx: dict, key: str, name: str, objective: str) -> dict:
    """The verdict entry of ``objective`` in section ``key`` of ``ctx``, for a prediction to score."""
    found = [v for v in ctx[key]["verdicts"] if v["objective"] == objective]
    if not found:
        raise ValueError(f"{name}: no finished {objective} pairs to score its predictions: gspo-lab sweep {name}")
    return found[0]
