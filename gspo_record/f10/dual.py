"""Finding 10's dual-clip under a cap at ten seeds (issue 22, item 3): ``f10_onset_dual``'s seeds 10-14 pooled with
the fresh seeds 60-64 of ``data/specs/f10v_dual_cap_ten.toml``.

Rule ``f10v.dual_cap`` per model and cap (declared in the spec, before its runs): ``f10.dual_cap``'s outcomes on
(GRPO + dual-clip + cap) − (GRPO + cap) in late held-out accuracy, paired by seed over the ten seeds, *higher* /
*lower* when the 95 % Student-t interval lies above / below 0. The cap-alone arm on seeds 10-14 is finding 2's stored
one (as ``f10.dual_cap`` read it); on seeds 60-64 it is this spec's GRPO at cap 30 and, at cap 10,
``f10u_shrink_skip_ten``'s SHRINK arm (the same config). Declared with it: re-read with each seed left out, on
training-reward AUC and on the final evaluation alone (fragile when any changes it). Beside it: the fresh seeds alone
under the same rule and each arm's collapse count (endpoint v2); and what the same seeds show on training-reward AUC
(whatever the late-accuracy verdict, so that "no effect shown" never hides it).
"""

from __future__ import annotations

from functools import partial

import pandas as pd

import gspo_lab.experiments.reading as reading
from gspo_lab.experiments.stats import paired_diff
from gspo_record.f10.ten import robust_paired, ten_rule
from gspo_record.f10.two_by_two import declared_interval
from gspo_record.f10.why import DUAL_CAP, SPECS, _signed
from gspo_record.fmt import diff_cell, robustness
from gspo_record.tables import progress, spec

__all__ = ["SPEC", "DUAL_TEN", "dual_ten_verdict", "pool", "robust_dual", "section"]

SPEC = SPECS["dual_ten"]
CAPS = ("30", "10")
DUAL_TEN = ten_rule("f10v.dual_cap", DUAL_CAP, SPEC, "Rule f10v.dual_cap per model and cap, declared here")


def dual_ten_verdict(diff: pd.Series, id: str = "f10v.dual_cap"):
    """Rule ``f10v.dual_cap`` on per-seed DUAL − CAP differences (pending without two seeds): statement ``id``."""
    return _signed(DUAL_TEN, diff, declared_interval, id)


def pool(table: pd.DataFrame, model: str, cap: str) -> pd.DataFrame:
    """One model's DUAL (GRPO + dual-clip + cap) and CAP (GRPO + cap) runs at ``cap`` on seeds 10-14 and 60-64, from
    finding 10's runs table (:func:`gspo_record.f10.runs.runs`), with ``arm_id`` DUAL / CAP and ``fresh``."""
    m = table[table["model"] == model]
    dual, alone = f"grpo_dual_clip clip {cap}", f"grpo clip {cap}"
    old = m[m["source"].isin([SPECS["onset"], "f2"]) & m["arm_id"].isin([dual, alone])]
    new = m[(m["source"] == SPEC) & m["arm_id"].isin([dual, alone])]
    if cap == "10":  # the cap-10 baseline on the fresh seeds: f10u's SHRINK arm
        shrink = m[(m["source"] == SPECS["shrink_ten"]) & (m["arm_id"] == "SHRINK")]
        new = pd.concat([new[new["arm_id"] == dual], shrink.assign(arm_id=alone)], ignore_index=True)
    runs = pd.concat([old.assign(fresh=False), new.assign(fresh=True)], ignore_index=True)
    return runs.assign(arm_id=runs["arm_id"].map({dual: "DUAL", alone: "CAP"}))


def robust_dual(runs: pd.DataFrame, id: str = "f10v.dual_cap") -> tuple:
    """(verdict, flips, difference) on one model's pooled DUAL and CAP runs at one cap: the declared re-readings
    (provisional below ten paired seeds); statement ``id``."""
    return robust_paired(runs, "DUAL", "CAP", partial(dual_ten_verdict, id=id))


def _counts(runs: pd.DataFrame) -> list[str]:
    """Collapsed k/n of DUAL and CAP on the fresh seeds and pooled."""
    out = []
    for arm in ("DUAL", "CAP"):
        for part in (runs[runs["fresh"]], runs):
            g = part[part["arm_id"] == arm]
            out.append(f"{int(g['collapsed'].sum())}/{len(g)}")
    return out


def section(table: pd.DataFrame) -> dict:
    """Dual-clip under caps 30 and 10 at ten seeds, per model and cap: the pooled difference, ``f10v.dual_cap``, the
    fresh seeds alone, the robustness re-readings and the collapse counts."""
    rows, verdicts, beside = [], [], []
    for model in table["model"].unique():
        for cap in CAPS:
            runs = pool(table, model, cap)
            if not (runs["fresh"].any() and len(runs)):
                continue
            verdict, flips, diff = robust_dual(runs, f"f10v.dual_cap.{model}.{cap}")
            fresh = dual_ten_verdict(
                paired_diff(runs[runs["fresh"]], "DUAL", "CAP", "late_acc"), f"f10v.fresh.{model}.{cap}"
            )
            sure = robustness(flips)
            counts = _counts(runs)
            rows.append([model, cap, diff_cell(diff), verdict.short, fresh.label, sure, *counts])
            verdicts.append({"model": model, "cap": cap, "verdict": verdict, "sure": "fragile" if flips else "robust"})
            beside.append({"model": model, "cap": cap, **_beside(runs), "dual": counts[1], "alone": counts[3]})
    header = ["model", "cap", "dual-clip + cap − cap alone, seeds 10-14 + 60-64", "f10v.dual_cap", "fresh seeds alone",
              "robustness", "collapsed, dual-clip (fresh)", "dual-clip (10 seeds)", "cap alone (fresh)",
              "cap alone (10 seeds)"]  # fmt: skip
    return {"progress": progress(spec(SPEC)), "rows": rows, "verdicts": verdicts, "header": header, "beside": beside}


def _beside(runs: pd.DataFrame) -> dict:
    """What the same ten paired seeds show beside late accuracy (issue 35: a null verdict must not hide it): DUAL −
    CAP in training-reward AUC, its interval with sign count and ``f10v.dual_cap``'s words on it (a re-reading: not
    a verdict of the page)."""
    auc = paired_diff(runs, "DUAL", "CAP", "reward_auc")
    with reading.inner():
        words = dual_ten_verdict(auc).label
    return {"auc": diff_cell(auc), "auc_words": words}
