"""Tables several findings read: a spec's progress, arm names, a regime's fixed coordinates, finding 2's runs with the
collapse flag their endpoint declares, collapse rows, per-run gradient-norm spikes.

Finding 2's specs come in two measurements: :data:`FIRST` (64 prompts × 1 sample per evaluation, the stored flag:
the last evaluation below 0.5 × the run's own first) and :data:`F2` (the same cells re-measured under endpoint v2,
findings part 2). The page reads :data:`F2`; the comparison section (2f) reads both.
"""

from __future__ import annotations

import math

import pandas as pd

import gspo_lab.experiments.reading as reading
from gspo_lab.experiments.endpoint_range import ACCURACY
from gspo_lab.experiments.reading import remember
from gspo_lab.experiments.spec import Spec, cells, spec_named
from gspo_lab.experiments.stats import rate_table
from gspo_lab.experiments.store import finished, load_result, result_path, results_root, stored_files
from gspo_lab.experiments.summary import MIN_EVAL_SAMPLES, endpoint_v2, endpoints
from gspo_record.fmt import clip_label, mean_ci, num, rate_cell, summary

__all__ = [
    "dose_table",
    "F2",
    "FIRST",
    "declared",
    "mechanism_table",
    "with_labels",
    "spec",
    "progress",
    "arm_name",
    "with_base",
    "collapse_rows",
    "with_endpoints",
    "spike_table",
    "MODELS",
    "mechanism_table",
    "with_labels",
    "SPIKE_EARLY_ROLLOUTS",
    "EARLY_ROLLOUTS",
    "EARLY_NORM",
]

#: finding 2's two cold starts, as the page names them
MODELS = {"moe-sort": "MoE", "dense-sort": "dense"}
#: finding 2's specs by role: the first measurement, and the re-measurement under endpoint v2 the page reads
FIRST = {
    "moe": "f2_collapse_moe",
    "dense": "f2_collapse_dense",
    "mechanism": "f2_mechanism",
    "dose": "f2_clip_dose",
    "dose_confirm": "f2_clip_dose_confirm",
    "candidate": "f2_confirm_clip",
}
F2 = {
    "moe": "f2r_collapse_moe",
    "dense": "f2r_collapse_dense",
    "mechanism": "f2r_mechanism",
    "dose": "f2r_clip_dose",
    "dose_confirm": "f2r_clip_dose_confirm",
    "candidate": "f2r_confirm_clip",
}
#: endpoint v2's columns that :func:`declared` adds
V2_COLUMNS = (
    "late_acc",
    "reward_auc",
    "threshold",
    "samples",
    "truncated_early",
    "truncated_late",
    "length_early",
    "length_late",
    "zero_std_early",
    "zero_std_late",
    "collapsed_last",
)
#: the typical update is read over the first rollouts, before the earliest collapse (rollout 20) in finding 2's runs
SPIKE_EARLY_ROLLOUTS = 10
#: post hoc (2e): the share of rollouts 0..EARLY_ROLLOUTS-1 holding an update whose norm exceeds EARLY_NORM (the
#: grad-clip arm's cap), read from the stored per-rollout maxima
EARLY_ROLLOUTS, EARLY_NORM = 20, 10.0


def spec(name: str) -> Spec:
    return spec_named(name)


def progress(s: Spec, seeds: str = "confirm") -> dict:
    """``{done, total, spec, set}``: finished cells of a seed set, for the template's ``progress`` macro."""
    total = len(cells(s, seeds))
    return {"done": len(finished(s, seeds)) if total else 0, "total": total, "spec": s.name, "set": s.core_label()}


def arm_name(row) -> str:
    from gspo_lab.plots import label

    return label(row["objective"]) + (" + Routing Replay" if row.get("routing_replay") else "")


def with_base(s: Spec, table: pd.DataFrame, columns: tuple[str, ...]) -> pd.DataFrame:
    """``table`` with each of ``columns`` present: from the grid where the spec varies it, else from its ``[base]``."""
    return table.assign(**{c: s.base[c] for c in columns if c not in table or table[c].isna().all()})


@remember()
def declared(s: Spec, seeds: str = "confirm") -> pd.DataFrame:
    """A spec's finished cells with the collapse flag its endpoint declares in ``collapsed``: endpoint v2
    (:func:`gspo_lab.experiments.summary.endpoint_v2`, against the pooled cold start) when its evaluations score ≥
    MIN_EVAL_SAMPLES samples, else the stored flag; the stored flag always in ``collapsed_v1``, the endpoint's name
    in ``endpoint``, and for v2 cells its late accuracy, reward AUC, collapse-mode columns and ``collapsed_last`` (the
    last evaluation alone below v2's threshold)."""
    from gspo_lab.experiments.read import cold_start_key, cold_starts

    t = finished(s, seeds)
    if t.empty:
        return t
    t = t.assign(collapsed_v1=t["collapsed"].astype(bool), endpoint="v1")
    by_key = {c.key: c for c in cells(s, "all")}
    if by_key[t["key"].iloc[0]].cfg.eval_prompts * by_key[t["key"].iloc[0]].cfg.eval_samples < MIN_EVAL_SAMPLES:
        return t
    pooled = cold_starts()
    rows = [_v2(result_path(by_key[key]), pooled[cold_start_key(by_key[key].cfg)]["accuracy"]) for key in t["key"]]
    extra = pd.DataFrame(rows)
    # the one-evaluation variant of v2's flag (2f's rule f2f.last reads it): the last evaluation alone below threshold
    last = [bool(r["collapsed"]) or (len(r["last_two"]) > 0 and r["last_two"][-1] < r["threshold"]) for r in rows]
    extra = extra.drop(columns=["last_two"]).assign(collapsed_last=last)
    return pd.concat([t.drop(columns=["collapsed"]).reset_index(drop=True), extra], axis=1).assign(endpoint="v2")


@remember(reading.endpoint, per_reading=False)
def _v2(path, cold_start: float) -> dict:
    """Endpoint v2 of one stored run (its own series, the cold start and the reading's endpoint: no left-out seed
    changes it)."""
    return endpoint_v2(load_result(path), cold_start)


def with_endpoints(s: Spec, table: pd.DataFrame) -> pd.DataFrame:
    """``table`` (a spec's merged rows) with the sensitivity endpoints of each cell (``late_acc``, ``collapsed_two``,
    ``margin_prompts``, ``reward_auc``; :func:`gspo_lab.experiments.summary.endpoints`) read from its stored rows."""
    by_key = {c.key: c for c in cells(s, "all")}
    rows = [endpoints(load_result(result_path(by_key[k]))) for k in table["key"]]
    names = ("late_acc", "collapsed_two", "margin_prompts", "reward_auc")
    return table.assign(**{name: [r[name] for r in rows] for name in names})


def with_first_update_clip(s: Spec, table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with ``clip_token_frac_k0``: the clipped-token fraction on each rollout's first update (k = 0, where
    π_θ is still the policy that sampled, so only a sampler/trainer mismatch can clip). The stored per-rollout mean
    over the M updates and the summary's mean over k ≥ 1 give it exactly: mean_k0 = M · mean_all − (M − 1) · mean_k≥1
    (every rollout holds M updates when epochs = 1)."""
    by_key = {c.key: c for c in cells(s, "all")}
    values = []
    for key, k_ge1 in zip(table["key"], table["clip_token_frac"], strict=True):
        result = load_result(result_path(by_key[key]))
        m, epochs = result["config"]["minibatches"], result["config"]["epochs"]
        if epochs != 1:
            raise ValueError(f"cell {key}: the k = 0 clip fraction needs epochs = 1, got {epochs}")
        all_mean = pd.Series(result["per_rollout"]["clip/token_frac:mean"], dtype=float).mean()
        values.append(round(m * all_mean - (m - 1) * k_ge1, 12) + 0.0)  # exact up to float residue
    return table.assign(clip_token_frac_k0=values)


def run_endpoints(source: str, key: str) -> dict:
    """The sensitivity endpoints of one stored cell of spec ``source`` (:func:`gspo_lab.experiments.summary.
    endpoints`)."""
    return endpoints(load_result(stored_files(results_root() / source, key)[0]))


def collapse_rows(table: pd.DataFrame, with_expert: bool = True) -> list[list[str]]:
    """Per (grad clip, arm): the collapse rate, held-out accuracy start → final, clipped tokens (, expert change)."""
    table = table.assign(arm=table.apply(arm_name, axis=1), clip=table["grad_clip"].map(clip_label))
    rates = rate_table(table, ["clip", "arm"]).set_index(["clip", "arm"])
    rows = []
    for (clip, arm), group in table.groupby(["clip", "arm"], sort=True):
        final = summary(group["eval_final"])
        row = [
            clip,
            arm,
            rate_cell(rates.loc[(clip, arm)]),
            f"{num(group['eval_start'].mean())} → {mean_ci(final)}",
            num(group["clip_token_frac"].mean()),
        ]
        late = [mean_ci(summary(group["late_acc"]))] if "late_acc" in group else []  # endpoint v2's primary
        rows.append(row + ([num(group["expert_change"].mean())] if with_expert else []) + late)
    return rows


@remember()
def spike_table(s: Spec) -> pd.DataFrame:
    """Per confirmation cell: the typical update's gradient norm (median over the first SPIKE_EARLY_ROLLOUTS rollouts
    of the per-rollout mean: before any run collapsed, when a dead policy's zero gradients would drag it to 0), the
    run's largest (max of the per-rollout max) and the rollout it came in; with the cell's grid point and summary."""
    rows = []
    merged = declared(s, "confirm")
    if merged.empty:
        return pd.DataFrame()
    merged = merged.set_index("key")
    for cell in cells(s, "confirm"):
        path = result_path(cell)
        if not path.exists():
            continue
        pr = load_result(path)["per_rollout"]
        typical = pd.Series(pr["grad/norm:mean"][:SPIKE_EARLY_ROLLOUTS], dtype=float).median()
        peak = pd.Series(pr["grad/norm:max"], dtype=float)
        m = merged.loc[cell.key]
        early = peak.iloc[:EARLY_ROLLOUTS]  # before the earliest collapse of finding 2's runs (rollout 20)
        rows.append(
            {
                **cell.point,
                "seed": cell.seed,
                "typical": typical,
                "peak": peak.max(),
                "early_above": float((early > EARLY_NORM).mean()),
                "peak_rollout": int(pr["rollout"][int(peak.idxmax())]),
                "collapsed": bool(m["collapsed"]),
                "collapse_rollout": m["collapse_rollout"],
                "eval_start": m["eval_start"],
                "eval_final": m["eval_final"],
                "key": cell.key,
                **{c: m[c] for c in V2_COLUMNS + ("collapsed_v1", "endpoint") if c in m.index},
            }
        )
    return pd.DataFrame(rows)


#: the order of 2e's arms on the page: GRPO from no cap to a cap of 1, dual-clip, GSPO
_ORDER = {
    ("grpo", "off"): 0,
    ("grpo", "30"): 1,
    ("grpo", "10"): 2,
    ("grpo", "1"): 3,
    ("grpo_dual_clip", "off"): 4,
    ("gspo", "off"): 5,
}


@remember()
def mechanism_table(names: dict[str, str] = F2) -> pd.DataFrame:
    """Per run of one measurement (``names``: :data:`F2` or :data:`FIRST`): finding 2's no-clip GRPO and GSPO arms,
    GRPO at grad clip 1.0 and the interventions (dual-clip, caps of 10 and 30), on both models, seeds 10-14, with
    typical and largest norms and the declared collapse flag."""
    parts = []
    for ckpt, name in (("moe-sort", names["moe"]), ("dense-sort", names["dense"])):
        t = spike_table(spec(name))
        if "routing_replay" in t:
            t = t[~t["routing_replay"].astype(bool)]
        t = t[(t.objective == "grpo") | (t["grad_clip"].map(clip_label) == "off")]
        parts.append(t.assign(model=MODELS[ckpt], checkpoint=ckpt, source=name))
    for name in (names["mechanism"], names["dose"]):
        s = spec(name)
        t = with_base(s, spike_table(s), ("objective", "grad_clip"))
        parts.append(t.assign(model=t["checkpoint"].map(MODELS), source=name))
    return with_labels(pd.concat(parts, ignore_index=True))


def with_labels(t: pd.DataFrame) -> pd.DataFrame:
    """Runs of 2e's table with their arm, clip label and the page's order (model, then GRPO's caps, dual-clip, GSPO)."""
    t = t.assign(routing_replay=t.get("routing_replay", pd.Series(False, index=t.index)).fillna(False).astype(bool))
    t = t.assign(arm=t.apply(arm_name, axis=1), clip=t["grad_clip"].map(clip_label))
    t = t.assign(
        order=[_ORDER.get((o, c), 9) for o, c in zip(t["objective"], t["clip"], strict=True)],
        model_order=t["model"].map({m: i for i, m in enumerate(MODELS.values())}),
    )
    return t.sort_values(["model_order", "order", "seed"]).reset_index(drop=True)


def dose_table() -> pd.DataFrame:
    """Notebook 04's dose curve: per model, objective and grad-norm cap (no cap, 30, 10, 1; GSPO at no cap and 1),
    late held-out accuracy over the re-measured seeds: mean and 95 % interval, with the collapsed count."""
    rows = []
    runs = mechanism_table()
    for role in ("moe", "dense"):  # GSPO at clip 1 is not in the mechanism table
        t = declared(spec(F2[role]))
        t = t[(t.objective == "gspo") & (t["grad_clip"].map(clip_label) == "1")]
        gspo = t.assign(model=MODELS[spec(F2[role]).base["checkpoint"]], clip="1", source=F2[role])
        runs = pd.concat([runs, gspo], ignore_index=True)
    for (model, objective, clip), g in runs.groupby(["model", "objective", "clip"]):
        stored = g["late_acc"] if "late_acc" in g else pd.Series(math.nan, index=g.index)
        late = [
            v if v == v else run_endpoints(src, k)["late_acc"]
            for v, src, k in zip(stored, g["source"], g["key"], strict=True)
        ]
        r = summary(late, ACCURACY)
        rows.append(
            {
                "model": model,
                "objective": objective,
                "clip": clip,
                "seeds": len(g),
                "late_acc": r["mean"],
                "lo": r["ci_low"],
                "hi": r["ci_high"],
                "collapsed": int(g["collapsed"].sum()),
            }
        )
    return pd.DataFrame(rows)
