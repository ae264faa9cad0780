"""Finding 6d: LUSPO's claim that GSPO biases response length (arXiv 2602.05261; issue 37 part B, item 3).

``data/specs/f6d_length_drift.toml``, declared before its runs: GSPO, LUSPO and GRPO at the longest length (L = 7,
72-token responses) on ``add``, whose reward reads the final answer alone, so the response length is free to move
(the scratchpad can shrink or grow); fresh seeds. The endpoint: each run's *late response length*, the mean sampled
held-out response length (tokens, <eos> included) over the evaluations at rollouts >= half the run, minus the pooled
cold start's (spec ``p0b_cold_start_add``, the same prompts). The rules:

``f6d.drift`` (:func:`drift_verdict`), per arm: the late length change's 95 % Student-t interval over seeds lies above
0 (*longer*), below 0 (*shorter*), or includes 0 (*no drift shown*); range ±``MAX_NEW_TOKENS``.

``f6d.luspo`` (:func:`luspo_verdict`): the paired GSPO − LUSPO late length (per seed), the same interval: *GSPO
longer* / *GSPO shorter* / *no difference shown*.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from gspo_lab.experiments.stats import declared_t_interval, paired_diff
from gspo_record.fmt import diff_cell, num
from gspo_record.rules import PENDING, Rule, register
from gspo_record.signed import signed
from gspo_record.tables import declared, progress, spec

__all__ = ["DRIFT", "LUSPO", "SPEC", "late_length", "drift_table", "drift_verdict", "luspo_verdict", "section"]

SPEC = "f6d_length_drift"
#: the response budget of the spec's runs (2 x the 72-token target): the range of a length and of its change
MAX_NEW_TOKENS = 144
ARMS = ("gspo", "luspo", "grpo")
_DECLARED = "data/specs/f6d_length_drift.toml, before its runs"
_RANGE = (-float(MAX_NEW_TOKENS), float(MAX_NEW_TOKENS))
#: an interval's outcome -> these rules' own
_READS = {"above": "longer", "below": "shorter", "none": "none"}
DRIFT = register(
    Rule(
        "f6d.drift",
        "6",
        {"longer": "longer", "shorter": "shorter", "none": "no drift shown"},
        {"LEVEL": 0.95, "MAX_NEW_TOKENS": MAX_NEW_TOKENS},
        declared=_DECLARED,
        null="none",
        reads=_READS,
        marker="- f6d.drift, per arm",
        specs=(SPEC,),
    )
)
LUSPO = register(
    Rule(
        "f6d.luspo",
        "6",
        {"longer": "GSPO longer than LUSPO", "shorter": "GSPO shorter than LUSPO", "none": "no difference shown"},
        {"LEVEL": 0.95},
        declared=_DECLARED,
        null="none",
        reads=_READS,
        marker="- f6d.luspo: the paired GSPO - LUSPO",
        specs=(SPEC,),
    )
)


def late_length(result: dict, late_from: float = 0.5) -> float:
    """The mean sampled held-out response length over a stored run's evaluations at rollouts >= ``late_from`` × its
    last evaluated rollout; NaN without one."""
    ev = result.get("eval", {})
    rollouts, lengths = ev.get("rollout", []), ev.get("eval/response_length_sampled", [])
    if not rollouts:
        return math.nan
    start = late_from * max(rollouts)
    late = [v for r, v in zip(rollouts, lengths, strict=False) if r >= start and v is not None]
    return float(np.mean(late)) if late else math.nan


def drift_table() -> pd.DataFrame:
    """f6d's finished runs: objective, seed, late_acc, collapsed, frozen, late_len, drift (late_len − the pooled cold
    start's sampled length)."""
    from gspo_lab.experiments.read import cold_start_key, cold_starts
    from gspo_lab.experiments.spec import cells
    from gspo_lab.experiments.store import load_result, result_path

    s = spec(SPEC)
    t = declared(s)
    if t.empty:
        return t
    by_key = {c.key: c for c in cells(s, "all")}
    pooled = cold_starts()
    late, base = [], []
    for key in t["key"]:
        cell = by_key[key]
        late.append(late_length(load_result(result_path(cell))))
        cold = pooled.get(cold_start_key(cell.cfg))
        base.append(cold["length"] if cold and "length" in cold else math.nan)
    t = t.assign(late_len=late, drift=np.asarray(late) - np.asarray(base, dtype=float))
    for column in ("collapsed", "frozen"):
        t[column] = t[column].fillna(False).astype(bool) if column in t else False
    return t


def _signed(rule: Rule, values: pd.Series, id: str, question: str):
    """``rule`` (outcomes longer / shorter / none) on per-seed values: their 95 % Student-t interval's side of 0, as
    statement ``id``."""
    return signed(rule, values, lambda v: declared_t_interval(v, _RANGE), question, id, _RANGE)


def drift_verdict(change: pd.Series, id: str = ""):
    """Rule ``f6d.drift`` on one arm's per-seed late length change."""
    return _signed(DRIFT, change, id, "does the arm's response length drift late in training?")


def luspo_verdict(diff: pd.Series, id: str = ""):
    """Rule ``f6d.luspo`` on the per-seed paired GSPO − LUSPO late length."""
    return _signed(LUSPO, diff, id, "are GSPO's late responses longer than LUSPO's?")


def section() -> tuple[dict, dict]:
    s = spec(SPEC)
    table = drift_table()
    ctx = {"progress": progress(s), "rows": [], "luspo": LUSPO.verdict(PENDING), "luspo_diff": "—"}
    if table.empty:
        return ctx, {}
    for arm in ARMS:
        runs = table[table["objective"] == arm]
        if runs.empty:
            continue
        change = runs.set_index("seed")["drift"].dropna()
        counts = [f"{int(runs[c].sum())}/{len(runs)}" for c in ("collapsed", "frozen")]
        ctx["rows"].append([arm, *counts, num(float(runs["late_len"].mean())), diff_cell(change, _RANGE),
                            drift_verdict(change).short, num(float(runs["late_acc"].mean()))])  # fmt: skip
    diff = paired_diff(table, "gspo", "luspo", "late_len", column="objective")
    ctx["luspo"], ctx["luspo_diff"] = luspo_verdict(diff, "f6d.luspo"), diff_cell(diff, _RANGE) if len(diff) else "—"
    return ctx, {}
