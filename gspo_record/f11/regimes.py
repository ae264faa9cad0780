"""Finding 11's regimes as the data describe them (issue 35, item 3): named by their knobs, with each objective's
measured rollout-0 drift beside them, and the collapse counts said against GRPO's.

- :func:`runs`: a regime spec's finished runs with the stored GRPO / GSPO runs they are paired with.
- :func:`knobs` names a regime spec by its settings (grad-norm clip, M, lr, warm-up), not by what it is like.
- :func:`first_drift` reads each run's rollout-0 KL k3 from its stored result: ``kl/k3:mean`` of the first rollout
  batch, the mean over that batch's M updates of KL(π_old ‖ π_θ) (k3 estimator, :mod:`gspo_lab.metrics`) — how far
  the policy moved within the first batch. :func:`drift_groups` gives it per model and objective, median and range
  over seeds.
- :func:`collapse_cell` says an arm's collapse count against GRPO's, both read by rule ``collapse.class``: "collapses
  where GRPO is stable; GRPO 0/5", "stable where GRPO collapses; GRPO 4/5", "collapses, as GRPO: 4/5".
- :func:`contrasts` lists, per model, the successors that collapse where GRPO does not, with both counts.
"""

from __future__ import annotations

import functools

import pandas as pd

from gspo_lab.config import TrainConfig
from gspo_lab.experiments.reading import remember
from gspo_lab.experiments.spec import cells
from gspo_lab.experiments.store import load_result, result_path
from gspo_record.fmt import clip_label, num
from gspo_record.rules import COLLAPSE_CLASS, class_verdict, collapse_class
from gspo_record.tables import F2, MODELS, declared, spec, with_base

__all__ = ["SPEC", "SPEC_B", "SPEC_B_DENSE", "SPEC_D", "STORED", "runs", "NAMES", "DRIFT", "knobs", "per_rollout",
           "first_drift", "drift_groups", "drift_span", "collapse_cell", "contrasts", "baseline_counts"]  # fmt: skip

NAMES = {"grpo": "GRPO", "gspo": "GSPO", "cispo": "CISPO", "sapo": "SAPO", "luspo": "LUSPO", "vespo": "VESPO",
         "gmpo": "GMPO"}  # fmt: skip
#: the stored per-rollout series whose first value is a run's rollout-0 drift
DRIFT = "kl/k3:mean"
SPEC = "f11_successors_collapse"
SPEC_B = "f11b_successors_production"
SPEC_B_DENSE = "f11b_production_dense"  # the dense twin: its own GRPO and GSPO arms, fresh seeds 15-19
SPEC_D = "f11d_production_confirm"  # the post hoc reading of regime (b) on fresh MoE seeds 15-19
#: per regime spec: the stored specs whose GRPO / GSPO runs its arms are paired with (none: the spec runs its own)
STORED = {SPEC: (F2["moe"], F2["dense"]), SPEC_B: (F2["candidate"],), SPEC_B_DENSE: (), SPEC_D: ()}


def _short(x: float) -> str:
    return f"{x:.0e}".replace("e-0", "e-") if abs(x) < 0.01 else f"{x:g}"


def knobs(name: str) -> str:
    """Regime spec ``name`` by its settings: ``grad-norm clip 1, M = 8, lr 1e-4, no warm-up``."""
    base = spec(name).base
    clip = clip_label(base.get("grad_clip"))
    warmup = int(base.get("warmup_steps", TrainConfig.warmup_steps))
    return ", ".join([
        "no grad-norm clip" if clip == "off" else f"grad-norm clip {clip}",
        f"M = {base['minibatches']}",
        f"lr {_short(base['lr'])}",
        "no warm-up" if warmup == 0 else f"warm-up {warmup} steps",
    ])  # fmt: skip


@functools.cache
def _cells_of(source: str) -> dict:
    return {c.key: c for c in cells(spec(source), "all")}


def per_rollout(source: str, key: str) -> dict:
    """The stored per-rollout series of cell ``key`` of spec ``source`` (the readings' loader, cached by the store)."""
    return load_result(result_path(_cells_of(source)[key]))["per_rollout"]


def first_drift(table: pd.DataFrame) -> pd.Series:
    """Each run's rollout-0 KL k3 (:data:`DRIFT`'s first value; NaN where not stored), from ``source`` and ``key``."""
    values = []
    for source, key in zip(table["source"], table["key"], strict=True):
        series = per_rollout(source, key).get(DRIFT) or [float("nan")]
        values.append(float(series[0]))
    return pd.Series(values, index=table.index, dtype=float, name="drift")


def _spread(x: pd.Series) -> str:
    x = x.dropna()
    return f"{num(float(x.median()))} ({num(float(x.min()))}–{num(float(x.max()))}, n = {len(x)})" if len(x) else "—"


def drift_groups(table: pd.DataFrame, arms: tuple[str, ...]) -> list[dict]:
    """Per model, each arm's rollout-0 KL k3 over seeds: [{"model", "arms": [[name, "median (min–max, n = k)"]]}]."""
    if table.empty:
        return []
    table = table.assign(drift=first_drift(table))
    groups = []
    for model, m in table.groupby("model", sort=False):
        rows = [[NAMES.get(a, a), _spread(m.loc[m["arm_id"] == a, "drift"])] for a in arms if (m["arm_id"] == a).any()]
        groups.append({"model": model, "arms": rows})
    return groups


def drift_span(tables: list[pd.DataFrame], objectives: list[tuple[str, str]], bases=("grpo", "gspo")) -> dict:
    """The medians of rollout-0 KL k3 of ``objectives`` ([(model, objective)] per table) and of ``bases`` in the same
    tables and models: ``{"lo", "hi", "base_lo", "base_hi", "x_lo", "x_hi"}``, x = objective ÷ GRPO (same table and
    model); empty when nothing is paired."""
    mine, base, ratio = [], [], []
    for table, pairs in zip(tables, objectives, strict=True):
        medians = table.assign(drift=first_drift(table)).groupby(["model", "arm_id"])["drift"].median()
        for model, objective in pairs:
            mine.append(medians[(model, objective)])
            base += [medians[(model, b)] for b in bases if (model, b) in medians]
            ratio.append(medians[(model, objective)] / medians[(model, bases[0])])
    if not mine:
        return {}
    return {"lo": num(min(mine)), "hi": num(max(mine)), "base_lo": num(min(base)), "base_hi": num(max(base)),
            "x_lo": f"{min(ratio):.1f}", "x_hi": f"{max(ratio):.1f}"}  # fmt: skip


def collapse_cell(k: int, n: int, k_grpo: int | None = None, n_grpo: int | None = None) -> str:
    """``k/n (label)`` of rule ``collapse.class``, said against GRPO's count when one is given (same model and
    seeds): "5/5 (collapses where GRPO is stable; GRPO 0/5)", "0/5 (stable where GRPO collapses; GRPO 4/5)",
    "4/5 (collapses, as GRPO: 4/5)", else "3/5 (between the thresholds; GRPO 0/5: stable)". Stable is the rule's
    class (at most 1 in 5 collapsed, scaled to n), not "no run collapsed"."""
    own = class_verdict(k, n)  # the row's own verdict (the robustness readings re-read it); GRPO's is read in its row
    if k_grpo is None or not n_grpo:
        return f"{k}/{n} ({own.label})"
    base, count = collapse_class(k_grpo, n_grpo), f"{k_grpo}/{n_grpo}"
    if own.outcome == base:
        return f"{k}/{n} ({own.label}, as GRPO: {count})"
    if {own.outcome, base} == {"collapses", "stable"}:
        grpo = "is stable" if own.outcome == "collapses" else "collapses"
        return f"{k}/{n} ({own.label} where GRPO {grpo}; GRPO {count})"
    return f"{k}/{n} ({own.label}; GRPO {count}: {COLLAPSE_CLASS.outcomes[base]})"


def _count(g: pd.DataFrame) -> tuple[int, int]:
    return int(g["collapsed"].sum()), len(g)


def contrasts(table: pd.DataFrame, objectives: tuple[str, ...]) -> list[dict]:
    """Per model, the ``objectives`` that collapse where GRPO does not (rule ``collapse.class`` on both counts):
    [{"model", "objectives": [[name, "k/n"]], "grpo": "k/n", "gspo": "k/n"}]; models with none left out."""
    found = []
    for model, m in table.groupby("model", sort=False):
        grpo = m[m["arm_id"] == "grpo"]
        if grpo.empty or collapse_class(*_count(grpo)) != "stable":
            continue
        hits = [[NAMES[o], "{}/{}".format(*_count(g))] for o in objectives if len(g := m[m["arm_id"] == o])
                and collapse_class(*_count(g)) == "collapses"]  # fmt: skip
        if hits:
            gspo = m[m["arm_id"] == "gspo"]
            found.append({"model": model, "objectives": hits, "pairs": [(model, o) for o in objectives
                          if NAMES[o] in {h[0] for h in hits}], "grpo": "{}/{}".format(*_count(grpo)),
                          "gspo": "{}/{}".format(*_count(gspo)) if len(gspo) else "—"})  # fmt: skip
    return found


def baseline_counts(table: pd.DataFrame) -> list[dict]:
    """Per model, GRPO's and GSPO's collapse counts: [{"model", "grpo": "k/n", "gspo": "k/n"}]."""
    out = []
    for model, m in table.groupby("model", sort=False):
        counts = {a: "{}/{}".format(*_count(g)) for a in ("grpo", "gspo") if len(g := m[m["arm_id"] == a])}
        if counts:
            out.append({"model": model, "grpo": counts.get("grpo", "—"), "gspo": counts.get("gspo", "—")})
    return out


@remember()
def runs(name: str = SPEC) -> pd.DataFrame:
    """Every finished run of regime spec ``name`` and the stored GRPO / GSPO runs of its regime on the same seeds
    (finding 2's, at the regime's grad clip, without Routing Replay; ``arm_id`` = objective; ``model``; ``source``)."""
    s = spec(name)
    parts = []
    t = declared(s)
    if not t.empty:
        parts.append(with_base(s, t, ("checkpoint", "objective")).assign(source=name))
    for stored in STORED[name]:
        f2 = spec(stored)
        t = with_base(f2, declared(f2), ("checkpoint", "objective", "grad_clip"))
        rr = t.get("routing_replay", pd.Series(False, index=t.index)).fillna(False).astype(bool)
        same_clip = t["grad_clip"].map(clip_label) == clip_label(s.base.get("grad_clip"))
        parts.append(t[same_clip & ~rr].assign(source=stored))
    if not parts:
        return pd.DataFrame(columns=["model", "arm_id", "seed", "late_acc", "collapsed", "source"])
    table = pd.concat(parts, ignore_index=True)
    table = table.assign(arm_id=table["objective"], model=table["checkpoint"].map(MODELS))
    order = table["checkpoint"].map(list(MODELS).index)
    return table.assign(order=order).sort_values("order", kind="stable").drop(columns="order").reset_index(drop=True)
