"""Finding 10's runs, tables, figure and page section (its rules: :mod:`gspo_record.f10.why`).

Arms are named as the specs describe them: the 2×2's ``A`` GRPO, ``B`` GSPO, ``C`` GRPO's direction at GSPO's norm,
``D`` GSPO's direction at GRPO's norm; ``SHRINK``, ``SKIP``, ``REL-GRPO``, ``REL-GSPO``; the onset arms and finding
2's stored arms they are paired with as ``<objective> clip <cap>`` (:func:`gspo_record.f2.late._runs`).
"""

from __future__ import annotations

import pandas as pd

import gspo_lab.experiments.reading as reading
import gspo_record.f10.adam as f10_adam
import gspo_record.f10.branch as f10_branch
import gspo_record.f10.dual as f10_dual
import gspo_record.f10.revert as f10_revert
import gspo_record.f10.sgd as f10_sgd
import gspo_record.f10.ten as f10_ten
from gspo_lab.experiments.reading import remember
from gspo_lab.experiments.spec import cells
from gspo_lab.experiments.stats import paired_diff
from gspo_lab.experiments.store import load_result, result_path
from gspo_lab.grad_shaping import GROUPS
from gspo_record.f2.late import _runs as f2_runs
from gspo_record.f2.mechanism import dose_trend_verdict
from gspo_record.f10.fresh import ARMS, fresh, fresh_cost, provisional
from gspo_record.f10.plots import ONSET_CAPS, plot_dose, plot_two_by_two
from gspo_record.f10.why import (
    EFFECTS,
    SPECS,
    dual_cap_verdict,
    effects,
    late_verdict,
    relative_verdict,
    skip_shrink_verdict,
    two_by_two_verdict,
)
from gspo_record.fmt import clip_label, diff_cell, mean_ci, num, off, summary
from gspo_record.rules import class_verdict
from gspo_record.tables import F2, MODELS, declared, progress, spec, with_base

__all__ = ["ARMS", "ONSET_CAPS", "DUAL_CAPS", "runs", "section"]

#: the caps under which dual-clip is compared with the cap alone (f10_onset_dual)
DUAL_CAPS = ("30", "10")
_COLUMNS = ("checkpoint", "objective", "grad_clip", "norm_of", "grad_skip", "grad_clip_rel")
_PER_ROLLOUT = {
    "skipped": "grad/skipped:mean",
    "spiked": "grad/spike:mean",
    "capped": "grad/clipped:mean",
    "cos": "grad/cos_other:mean",
    "kl": "kl/k3:mean",
}


def _arm_id(row) -> str:
    if row["source"] in (SPECS["two"], SPECS["ten"], SPECS["sgd_two"]):  # the 2×2: fresh seeds, and under SGD
        return {(True, "grpo"): "A", (True, "gspo"): "B", (False, "grpo"): "C", (False, "gspo"): "D"}[
            (off(row["norm_of"]), row["objective"])
        ]
    if row["source"] in (SPECS["shrink"], SPECS["shrink_ten"]):  # shrink / skip, and its fresh seeds
        if not off(row["grad_skip"]):
            return "SKIP"
        if not off(row["grad_clip_rel"]):
            return f"REL-{row['objective'].upper()}"
        return "SHRINK"
    if row["source"] == SPECS["branch"]:  # branches from saved states and their trunks
        return f10_branch.arm_of(row)
    if row["source"] == SPECS["adam"]:  # what a spike does inside AdamW
        return f10_adam.ARMS[row["spike"]]
    if row["source"] == SPECS["confirm"]:
        return "B" if off(row["grad_clip_rel"]) else f"REL-{row['objective'].upper()}"
    return f"{row['objective']} clip {clip_label(row['grad_clip'])}"


def _with_logged(s, table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with each run's mean over rollouts of the logged shares (skipped, capped updates), cosine and KL k3
    (``kl``) and of AdamW's peak (``peak``), and per gradient group its largest pre-clip norm (``norm_<group>``) and
    AdamW peak (``peak_<group>``)."""
    logged = _logged_table(s.name).loc[list(table["key"])].reset_index(drop=True)
    return pd.concat([table.reset_index(drop=True), logged], axis=1)


@remember(per_reading=False)
def _logged_table(name: str) -> pd.DataFrame:
    """:func:`_logged`'s row of every stored run of spec ``name`` (every seed), indexed by key: one table for every
    reading (each row is one run's own series), where a reading's runs took a remembered call per run."""
    with reading.reading():
        found = [c for c in cells(spec(name), "all") if result_path(c).exists()]
    return pd.DataFrame([_logged(result_path(c)) for c in found], index=pd.Index([c.key for c in found], name="key"))


@remember(per_reading=False)
def _logged(path) -> dict:
    """One stored run's row of :func:`_with_logged` (its own series: no reading changes it)."""
    pr = load_result(path)["per_rollout"]
    row = {name: pd.Series(pr.get(k, []), dtype=float).mean() for name, k in _PER_ROLLOUT.items()}
    peaks = pd.DataFrame({g: pd.Series(pr.get(f"adam/peak_{g}:max", []), dtype=float) for g in GROUPS})
    row["peak"] = peaks.mean(axis=1).mean()  # AdamW's largest |g| / √v̂, mean over groups and rollouts
    for g in GROUPS:
        row[f"norm_{g}"] = pd.Series(pr.get(f"grad/norm_{g}:max", []), dtype=float).max()
        row[f"peak_{g}"] = pd.Series(pr.get(f"adam/peak_{g}:max", []), dtype=float).max()
    return row


@remember()
def runs() -> pd.DataFrame:
    """Every finished run of the f10 specs (endpoint v2 columns, ``arm_id``, ``model``, ``source``, logged shares),
    and finding 2's stored seed-10-14 runs the onset arms are paired with (``source`` "f2")."""
    parts = []
    for name in SPECS.values():
        s = spec(name)
        t = declared(s)
        if t.empty:
            continue
        t = with_base(s, t, tuple(c for c in _COLUMNS if c in s.base)).assign(source=name)
        t = t.assign(**{c: None for c in _COLUMNS if c not in t})
        parts.append(_with_logged(s, t.assign(arm_id=t.apply(_arm_id, axis=1))))
    stored = f2_runs(F2).assign(source="f2")
    table = pd.concat(parts + [stored], ignore_index=True)
    table = table.assign(model=table["checkpoint"].map(MODELS), order=table["checkpoint"].map(list(MODELS).index))
    return table.sort_values("order", kind="stable").drop(columns="order").reset_index(drop=True)  # MoE first


def _arm_row(model: str, arm: str, g: pd.DataFrame, *extra) -> list:
    """model, arm, seeds, late held-out accuracy, collapsed (endpoint v2), then ``extra``."""
    late = mean_ci(summary(g["late_acc"]))
    return [model, ARMS.get(arm, arm), len(g), late, f"{int(g['collapsed'].sum())}/{len(g)}", *extra]


def _two_by_two(table: pd.DataFrame) -> tuple[list, list, list]:
    rows, effect_rows, verdicts = [], [], []
    for model, m in table[table["source"] == SPECS["two"]].groupby("model", sort=False):
        for arm in "ABCD":
            g = m[m["arm_id"] == arm]
            cos = num(g["cos"].mean()) if arm in "CD" else "—"
            rows.append(_arm_row(model, arm, g, mean_ci(summary(g["reward_auc"])), cos))
        diffs = effects(m)
        for name, diff in diffs.items():
            effect_rows.append([model, name, diff_cell(diff), provisional(late_verdict(diff), m, EFFECTS[name]).short])
        verdict = two_by_two_verdict(diffs, id=f"f10.two_by_two.{model}")
        verdicts.append({"model": model, "verdict": provisional(verdict, m, "ABCD")})
    return rows, effect_rows, verdicts


def _shrink_skip(table: pd.DataFrame) -> tuple[list, list, dict]:
    """Rows, comparison rows, and per model the verdict objects of SKIP − SHRINK and REL-GSPO − REL-GRPO."""
    rows, comparisons, verdicts = [], [], {}
    pool = table[table["source"].isin([SPECS["two"], SPECS["shrink"]])]
    for model, m in pool.groupby("model", sort=False):
        for arm in ("SHRINK", "SKIP", "REL-GRPO", "REL-GSPO"):
            g = m[m["arm_id"] == arm]
            if len(g):
                rows.append(_arm_row(model, arm, g, num(g["skipped"].mean()), num(g["capped"].mean())))
        for arm, base, rule in (
            ("SKIP", "SHRINK", skip_shrink_verdict),
            ("REL-GSPO", "REL-GRPO", relative_verdict),
            ("REL-GRPO", "A", late_verdict),
        ):
            diff = paired_diff(m, arm, base, "late_acc")
            verdict = provisional(rule(diff, id=f"f10.{arm}−{base}.{model}"), m, (arm, base))
            verdicts.setdefault(model, {})[arm] = verdict
            if len(diff):
                comparisons.append([model, f"{ARMS[arm]} − {ARMS[base]}", diff_cell(diff), verdict.short])
    return rows, comparisons, verdicts


def _accounts(ten: list[dict], skip_ten: list[dict], shrink: dict) -> list[dict]:
    """Per model, ``f10t.account`` (post hoc) on its declared ten-seed readings (``f10t.two_by_two``,
    ``f10u.skip_shrink``) and its REL-GSPO − REL-GRPO verdict (``f10.relative``, seeds 30-34): it supersedes
    ``f10.account``, which read the five-seed verdicts (issue 35)."""
    skip = {v["model"]: v["verdict"] for v in skip_ten}
    out = []
    for v in ten:
        parts = [v["verdict"], skip.get(v["model"]), shrink.get(v["model"], {}).get("REL-GSPO")]
        if all(p is not None for p in parts):
            out.append(
                {
                    "model": v["model"],
                    "verdict": f10_ten.ten_account_verdict(*parts, id=f"f10t.account.{v['model']}"),
                    "parts": parts,
                }
            )
    return out


def _onset(table: pd.DataFrame) -> tuple[list, list, list, list, pd.DataFrame]:
    dose, classes, duals, dual_statements, curves = [], [], [], [], []
    pool = table[table["source"].isin([SPECS["onset"], "f2"])]
    for model, m in pool.groupby("model", sort=False):
        grpo = m[m["arm_id"].str.fullmatch(r"grpo clip \S+")]  # plain GRPO: no Routing Replay, no dual-clip
        grpo = grpo.assign(clip=grpo["arm_id"].str.rpartition(" clip ")[2])
        steps = [f"{c}: {mean_ci(summary(g['late_acc']))} ({int(g['collapsed'].sum())}/{len(g)})"
                 for c in ONSET_CAPS if len(g := grpo[grpo["clip"] == c])]  # fmt: skip
        points = [{"clip": c, "late": num(g["late_acc"].mean()), "k": int(g["collapsed"].sum()), "n": len(g)}
                  for c in ONSET_CAPS if len(g := grpo[grpo["clip"] == c])]  # fmt: skip
        dose.append({"model": model, "steps": steps, "points": points,
                     "trend": dose_trend_verdict(grpo, ONSET_CAPS, f"f10.dose_trend.{model}")})  # fmt: skip
        curves.append(grpo[["model", "clip", "seed", "late_acc", "collapsed"]])
        for cap in ("20", "15"):
            g = grpo[grpo["clip"] == cap]
            if len(g):
                verdict = provisional(class_verdict(int(g["collapsed"].sum()), len(g)), grpo, (f"grpo clip {cap}",))
                classes.append([model, cap, f"{int(g['collapsed'].sum())}/{len(g)}", str(verdict)])
        for cap in DUAL_CAPS:
            arms = (f"grpo_dual_clip clip {cap}", f"grpo clip {cap}")
            diff = paired_diff(m, *arms, "late_acc")
            if len(diff):  # each arm's collapse count beside the difference (issue 22: both still collapse 2/5 at 30)
                counts = [f"{int(g['collapsed'].sum())}/{len(g)}" for a in arms if len(g := m[m["arm_id"] == a])]
                verdict = provisional(dual_cap_verdict(diff, f"f10.dual_cap.{model}.{cap}"), m, arms)
                duals.append([model, cap, *counts, diff_cell(diff), verdict.short])
                dual_statements.append({"model": model, "cap": cap, "verdict": verdict})
    data = pd.concat(curves, ignore_index=True) if curves else pd.DataFrame()
    return dose, classes, duals, dual_statements, data


def _groups(table: pd.DataFrame) -> list[list]:
    """Per model and arm of the 2×2: the median over seeds of each group's largest pre-clip norm and AdamW peak."""
    rows = []
    two = table[table["source"] == SPECS["two"]]
    for (model, arm), g in two.groupby(["model", "arm_id"], sort=False):
        norms = [num(g[f"norm_{grp}"].median()) for grp in GROUPS]
        peaks = [num(g[f"peak_{grp}"].median()) for grp in GROUPS]
        rows.append([model, ARMS[arm]] + [f"{n} / {p}" for n, p in zip(norms, peaks, strict=True)])
    return rows


def section() -> tuple[dict, dict]:
    table = runs()
    two_rows, effect_rows, two_verdicts = _two_by_two(table)
    shrink_rows, shrink_cmp, shrink_verdicts = _shrink_skip(table)
    dose, classes, duals, dual_statements, dose_data = _onset(table)
    ctx = {
        "progress": [
            progress(spec(name))
            for name in SPECS.values()
            if name
            not in (
                SPECS["ten"],
                SPECS["shrink_ten"],
                SPECS["dual_ten"],
                SPECS["adam"],
                SPECS["branch"],
                SPECS["sgd_two"],
            )
        ],
        "ten": (ten := f10_ten.section(table)),
        "skip_ten": (skip_ten := f10_ten.skip_section(table)),
        "dual_ten": f10_dual.section(table),
        "adam": f10_adam.section(table),
        "branch": f10_branch.section(table),
        "revert": f10_revert.section(),
        "sgd": f10_sgd.section(),
        "sgd_two": f10_sgd.two_by_two_section(table),
        "two_rows": two_rows,
        "effects": effect_rows,
        "two_verdicts": two_verdicts,
        "accounts": _accounts(ten["verdicts"], skip_ten["verdicts"], shrink_verdicts),
        "shrink_rows": shrink_rows,
        "shrink_cmp": shrink_cmp,
        "relative_cmp": [c for c in shrink_cmp if not c[1].startswith(ARMS["SKIP"])],  # no ten-seed reading
        "fresh": fresh(table),
        "fresh_cost": fresh_cost(table),
        "fresh_seeds": "{}-{}".format(*(f(spec(SPECS["confirm"]).seeds("confirm")) for f in (min, max))),
        "dose": dose,
        "classes": classes,
        "duals": duals,
        "dual_statements": dual_statements,  # in the book by id (the predictions read them)
        "shrink_statements": shrink_verdicts,  # per model and arm, its comparison's statement: in the book by id
        "groups": _groups(table),
        "group_names": list(GROUPS),
    }
    data = table[table["source"] == SPECS["two"]][["model", "arm_id", "seed", "late_acc"]].reset_index(drop=True)
    figures = {"f10_two_by_two": (data, plot_two_by_two)}
    if not dose_data.empty:
        figures["f10_dose"] = (dose_data.sort_values(["model", "clip", "seed"]).reset_index(drop=True), plot_dose)
    return ctx, figures
