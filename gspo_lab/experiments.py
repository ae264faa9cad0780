"""Reading stored sweep results (``data/results/``): per-arm numbers with their seed spread, rates with intervals,
per-rollout curves. The findings page (:mod:`gspo_lab.nb.findings`) and the notebooks ask their questions here, so
they open in seconds and can show any stored run.

Conventions (declared here once):
    * an *arm* is a grid point without its seed; every number about an arm is over its seeds;
    * a mean comes with the sample std and a 95 % interval: a percentile bootstrap over seeds (10,000 resamples,
      seeded), since 5 seeds are too few to trust a normal approximation;
    * a rate (collapse) comes with a 95 % Wilson score interval;
    * a ratio of fractions (GSPO / GRPO clipped tokens) is taken per seed — both arms share the seed's prompt stream
      and sampler — then summarised like any number.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from gspo_lab.sweep import Spec, cells, load_result, merge, result_path

__all__ = ["bootstrap_ci", "wilson", "arm_table", "rate_table", "paired_ratio", "curves", "stored_curves"]

BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 0


def bootstrap_ci(values, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values`` (NaN for fewer than 2 values)."""
    x = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    if len(x) < 2:
        return (math.nan, math.nan)
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    means = x[rng.integers(0, len(x), (BOOTSTRAP_RESAMPLES, len(x)))].mean(1)
    tail = (1 - level) / 2 * 100
    return float(np.percentile(means, tail)), float(np.percentile(means, 100 - tail))


def wilson(k: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """95 % Wilson score interval of a rate k / n."""
    if n == 0:
        return (math.nan, math.nan)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def _arms(table: pd.DataFrame, by: list[str]):
    return table.groupby(by, sort=False, dropna=False)


def arm_table(table: pd.DataFrame, by: list[str], metric: str) -> pd.DataFrame:
    """Per arm: seeds, mean, std, 95 % bootstrap interval, min and max of ``metric`` over seeds."""
    rows = []
    for arm, group in _arms(table, by):
        values = group[metric].astype(float).tolist()
        lo, hi = bootstrap_ci(values)
        arm = arm if isinstance(arm, tuple) else (arm,)
        rows.append({**dict(zip(by, arm, strict=True)), "seeds": len(values), "mean": float(np.mean(values)),
                     "std": float(np.std(values, ddof=1)) if len(values) > 1 else math.nan,
                     "ci_low": lo, "ci_high": hi, "min": min(values), "max": max(values)})  # fmt: skip
    return pd.DataFrame(rows)


def rate_table(table: pd.DataFrame, by: list[str], flag: str = "collapsed") -> pd.DataFrame:
    """Per arm: how many seeds have ``flag`` true, of how many, with the 95 % Wilson interval."""
    rows = []
    for arm, group in _arms(table, by):
        k, n = int(group[flag].astype(bool).sum()), len(group)
        lo, hi = wilson(k, n)
        arm = arm if isinstance(arm, tuple) else (arm,)
        rows.append({**dict(zip(by, arm, strict=True)), "k": k, "n": n, "rate": k / n, "ci_low": lo, "ci_high": hi})
    return pd.DataFrame(rows)


def paired_ratio(table: pd.DataFrame, by: list[str], metric: str, num: str = "gspo", den: str = "grpo") -> pd.DataFrame:
    """Per arm (``by`` without the objective) and seed: ``metric`` of objective ``num`` / that of ``den``."""
    keys = [*by, "seed"]
    wide = table.pivot_table(index=keys, columns="objective", values=metric, aggfunc="first").reset_index()
    if num not in wide or den not in wide:
        return wide.iloc[0:0].assign(ratio=[])
    wide = wide.dropna(subset=[num, den]).reset_index(drop=True)  # only seeds where both arms finished
    wide["ratio"] = wide[num] / wide[den].where(wide[den] > 0)
    return wide


def curves(spec: Spec, metric: str, seeds: str = "all") -> pd.DataFrame:
    """Long table of one per-rollout metric (e.g. ``"clip/token_frac:mean"``, ``"eval/accuracy_sampled"``) for every
    finished cell: columns = grid fields, seed, rollout, value."""
    rows = []
    for cell in cells(spec, seeds):
        path = result_path(cell)
        if not path.exists():
            continue
        result = load_result(path)
        source = result["eval"] if metric.startswith("eval/") else result["per_rollout"]
        for r, v in zip(source.get("rollout", []), source.get(metric, []), strict=False):
            rows.append({**cell.point, "seed": cell.seed, "rollout": r, "value": v})
    return pd.DataFrame(rows)


def stored_curves(spec_name: str, metric: str, seeds: str = "confirm", **where) -> pd.DataFrame:
    """Per-rollout curves of one arm of a committed spec (``data/specs/<spec_name>.toml``) from its stored results —
    no training, so it opens in seconds. ``where`` picks grid values, e.g.
    ``stored_curves("f1_clip_fractions", "clip/token_frac:mean", lr=3e-5, minibatches=4)``; fields not named vary
    (here: the objective). Returns the long table of :func:`curves`; errors name an unknown field or value."""
    from gspo_lab.paths import data_dir
    from gspo_lab.sweep import load_spec

    path = data_dir() / "specs" / f"{spec_name}.toml"
    if not path.is_file():
        known = sorted(p.stem for p in (data_dir() / "specs").glob("*.toml"))
        raise ValueError(f"spec_name must name a spec in data/specs/ ({', '.join(known)}), got {spec_name!r}")
    spec = load_spec(path)
    values: dict[str, list] = {}
    for key, options in spec.grid.items():
        names = key.split(",")
        for i, name in enumerate(names):
            values[name] = [o[i] for o in options] if len(names) > 1 else list(options)
    table = curves(spec, metric, seeds)
    for name, value in where.items():
        if name not in values:
            raise ValueError(f"{name} is not a grid field of {spec_name} (its fields: {sorted(values)})")
        match = [v for v in values[name] if v == value or (isinstance(v, float) and math.isclose(v, value))]
        if not match:
            raise ValueError(f"{name} must be one of {values[name]} in {spec_name}, got {value!r}")
        if not table.empty:
            table = table[table[name] == match[0]]
    if table.empty:
        raise ValueError(f"no stored results for {spec_name} at {where} with metric {metric!r} (run gspo-lab sweep)")
    return table.reset_index(drop=True)


def finished(spec: Spec, seeds: str = "all") -> pd.DataFrame:
    """The merged table of a spec, restricted to a seed set."""
    table = merge(spec, write=False)
    if table.empty or seeds == "all":
        return table
    return table[table["seed_set"] == seeds].reset_index(drop=True)
