"""Finding 11, regime (c): TRL's sampler–trainer corrections with GRPO and GSPO under a bf16 sampler — its rule,
runs and table (``data/specs/f11c_corrections_precision.toml``).

Per objective, six arms: π_old from the bf16 sampler itself (``SAMPLER``), π_old recomputed by the fp32 trainer
without a correction (``RECOMPUTE``), and RECOMPUTE with each of TRL 1.16's four modes at its default band. Rule
``f11c.correction`` compares each arm with RECOMPUTE, paired by seed, on late held-out accuracy (95 % Student-t
interval); re-read, as finding 11's position rule, with each seed left out, on reward AUC and on the final evaluation.
"""

from __future__ import annotations

import math

import pandas as pd

import gspo_lab.experiments.reading as reading
from gspo_lab.corrections import MODES
from gspo_lab.experiments.endpoint_range import DIFFERENCE
from gspo_lab.experiments.reading import remember
from gspo_lab.experiments.spec import cells
from gspo_lab.experiments.stats import declared_t_interval, paired_diff
from gspo_lab.experiments.store import load_result, result_path
from gspo_record.f11.regimes import DRIFT, knobs
from gspo_record.fmt import arm_cell, diff_cell, num, robustness
from gspo_record.rules import PENDING, Rule, class_verdict, register
from gspo_record.signed import signed
from gspo_record.tables import MODELS, declared, progress, spec, with_base

__all__ = ["SPEC", "ARMS", "CORRECTION", "correction_verdict", "robust_correction", "runs", "section"]

SPEC = "f11c_corrections_precision"
SPEC_DENSE = "f11c_corrections_dense"  # the dense twin, fresh seeds 125-129, declared after the MoE's results
ARMS = ("SAMPLER", "RECOMPUTE", *MODES)
_LOGGED = {"rho": "correction/rho_mean:mean", "masked": "correction/masked_frac:mean",
           "truncated": "correction/truncated_frac:mean"}  # fmt: skip
_ENDPOINTS = (("training-reward AUC", "reward_auc"), ("final evaluation", "eval_final"))

CORRECTION = register(
    Rule(
        "f11c.correction",
        "11",
        {"helps": "helps", "hurts": "hurts", "none": "no difference shown"},
        {"LEVEL": 0.95},
        declared="data/specs/f11c_corrections_precision.toml, before its runs (Student-t interval); its dense twin "
        "f11c_corrections_dense.toml, before its runs",
        marker="f11c.correction per objective and arm against RECOMPUTE",
        null="none",
        reads={"above": "helps", "below": "hurts", "none": "none"},
        specs=(SPEC, SPEC_DENSE),
    )
)


def correction_verdict(diff, id: str = ""):
    """Rule ``f11c.correction`` on the per-seed differences arm − RECOMPUTE (declared Student-t): statement ``id``."""
    return signed(CORRECTION, diff, lambda x: declared_t_interval(x, DIFFERENCE), "does the correction change late "
                  "accuracy against recomputed log-probs?", id, DIFFERENCE)  # fmt: skip


def robust_correction(table: pd.DataFrame, arm: str, id: str = "") -> tuple:
    """(verdict, flips) for ``arm`` on one objective's runs: the declared re-readings under which it changes."""
    verdict = correction_verdict(paired_diff(table, arm, "RECOMPUTE", "late_acc"), id)
    if verdict.outcome == PENDING:
        return verdict, []
    flips = []
    with reading.inner():
        for name, column in _ENDPOINTS:
            v = correction_verdict(paired_diff(table, arm, "RECOMPUTE", column))
            if v.outcome != verdict.outcome:
                flips.append(f"{name}: {v.label}")
        for seed in sorted(table["seed"].unique()):
            v = correction_verdict(paired_diff(table[table["seed"] != seed], arm, "RECOMPUTE", "late_acc"))
            if v.outcome != verdict.outcome:
                flips.append(f"without seed {seed}: {v.label}")
    return verdict, flips


def _arm(row) -> str:
    if row["old_logp"] == "sampler_bf16":
        return "SAMPLER"
    mode = row["sampler_correction"]
    return mode if isinstance(mode, str) and mode in MODES else "RECOMPUTE"


@remember()
def runs(name: str = SPEC) -> pd.DataFrame:
    """Every finished run of spec ``name``, with ``arm_id``, ``model`` and the mean over rollouts of the logged
    correction shares."""
    s = spec(name)
    t = declared(s)
    if t.empty:
        return t
    t = with_base(s, t, ("checkpoint", "objective", "old_logp", "sampler_correction"))
    by_key = {c.key: c for c in cells(s, "all")}
    logged = []
    for key in t["key"]:
        pr = load_result(result_path(by_key[key]))["per_rollout"]
        logged.append(
            {k: pd.Series(pr.get(v, []), dtype=float).mean() for k, v in _LOGGED.items()}
            | {"drift": float((pr.get(DRIFT) or [math.nan])[0])}
        )  # rollout-0 KL k3 (f11_regimes)
    t = pd.concat([t.reset_index(drop=True), pd.DataFrame(logged)], axis=1)
    return t.assign(arm_id=t.apply(_arm, axis=1), model=t["checkpoint"].map(MODELS))


def section() -> tuple[dict, dict]:
    parts = [t for t in (runs(SPEC), runs(SPEC_DENSE)) if not t.empty]
    table = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    rows, verdicts = [], []
    for (model, objective), m in table.groupby(["model", "objective"], sort=False) if not table.empty else []:
        for arm in ARMS:
            g = m[m["arm_id"] == arm]
            if g.empty:
                continue
            k, n = int(g["collapsed"].sum()), len(g)
            cells_ = [model, objective, arm, arm_cell(g["late_acc"]), f"{k}/{n} ({class_verdict(k, n).label})",
                      num(g["rho"].mean()), num(g["masked"].mean()), num(g["truncated"].mean()),
                      num(g["drift"].median())]  # fmt: skip
            if arm == "RECOMPUTE":
                cells_ += ["—", "the baseline", "—"]
            else:
                verdict, flips = robust_correction(m, arm, f"f11c.correction.{model}.{objective}.{arm}")
                cells_ += [diff_cell(paired_diff(m, arm, "RECOMPUTE", "late_acc")), verdict.short,
                           robustness(flips)]  # fmt: skip
                verdicts.append(
                    {
                        "model": model,
                        "objective": objective,
                        "arm": arm,
                        "verdict": verdict,
                        "fragile": bool(flips),
                        "sure": "fragile" if flips else "robust",
                    }
                )
            rows.append(cells_)
    header = ["model", "objective", "arm", "late held-out accuracy [95 % t]", "collapsed (v2)", "mean ρ",
              "masked tokens", "truncated tokens", "rollout-0 KL k3 (median)", "− RECOMPUTE (paired)",
              "f11c.correction", "robustness"]  # fmt: skip
    done = [progress(spec(SPEC)), progress(spec(SPEC_DENSE))]
    return {"progress": done, "rows": rows, "verdicts": verdicts, "header": header, "knobs": knobs(SPEC)}, {}
