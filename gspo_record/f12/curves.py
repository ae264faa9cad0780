"""Finding 12's stored curves for notebook 05's lag section: held-out accuracy, the clipped-token fraction and the
spread of the token log-ratios per rollout, for GRPO and GSPO with the behaviour policy as π_old, at each stored lag.

    table = lag_curves()                 # long: arm, lag, seed, rollout, metric, value (no training: seconds)
    lag_readout(table, 8)                # late means per arm at lag 8 and at lag 0: the panel's readout's numbers
"""

from __future__ import annotations

import math

import pandas as pd

from gspo_record.f12.lag import SPEC_CONFIRM, SPEC_SEARCH, arm_of

__all__ = ["SPEC_OF", "CURVE_METRICS", "NOTEBOOK_ARMS", "lag_curves", "stored_lags", "late_means", "lag_readout"]

#: metric key -> what the notebook's panels call it
CURVE_METRICS = {
    "eval/accuracy_sampled": "held-out accuracy (sampled)",
    "clip/token_frac:mean": "clipped tokens (share of valid tokens)",
    "ratio/tok_log_std:mean": "spread of log w (std over tokens)",
}
#: the spec each seed set of finding 12 is stored under: the search's 2 seeds, the confirmation's 10 fresh ones
SPEC_OF = {"search": SPEC_SEARCH, "confirm": SPEC_CONFIRM}
#: the arms the notebook shows: the two objectives with the behaviour policy's log-probs as π_old
NOTEBOOK_ARMS = ("grpo/behaviour", "gspo/behaviour")


def lag_curves(name: str | None = None, seeds: str = "confirm", arms: tuple[str, ...] = NOTEBOOK_ARMS) -> pd.DataFrame:
    """Every stored run of spec ``name`` (default: the one ``seeds`` is stored under, :data:`SPEC_OF`) of seed set
    ``seeds`` and ``arms``: one row per (arm, lag, seed, rollout, metric) of :data:`CURVE_METRICS`. ValueError naming
    the spec when none is stored, or the seed sets when ``seeds`` is none of them and no spec is named."""
    from gspo_lab.experiments.read import curves
    from gspo_lab.experiments.spec import spec_named

    if name is None:
        if seeds not in SPEC_OF:
            raise ValueError(f"seeds must be one of {sorted(SPEC_OF)} (or name a spec), got {seeds!r}")
        name = SPEC_OF[seeds]
    spec = spec_named(name)
    parts = []
    for metric in CURVE_METRICS:
        t = curves(spec, metric, seeds)
        if t.empty:
            continue
        correction = t["sampler_correction"] if "sampler_correction" in t else [None] * len(t)
        t = t.assign(arm=[arm_of(o, p, c) for o, p, c in zip(t["objective"], t["old_logp"], correction, strict=True)],
                     lag=t["rollout_lag"].astype(int), metric=metric)  # fmt: skip
        parts.append(t[t["arm"].isin(arms)][["arm", "lag", "seed", "rollout", "metric", "value"]])
    if not parts:
        raise ValueError(f"no stored results of {name} ({seeds} seeds): run gspo-lab sweep data/specs/{name}.toml")
    return pd.concat(parts, ignore_index=True)


def stored_lags(table: pd.DataFrame) -> list[int]:
    """The lags every shown arm has a run at (lag 0 included), ascending."""
    per_arm = [set(g["lag"]) for _, g in table.groupby("arm")]
    return sorted(set.intersection(*per_arm)) if per_arm else []


def _at_lag(table: pd.DataFrame, lag: int) -> pd.DataFrame:
    """The rows of runs at ``lag``."""
    return table[table["lag"] == lag]


def late_means(table: pd.DataFrame, lag: int, late_from: float = 0.5) -> dict[str, dict[str, float]]:
    """Per arm at ``lag``: each metric's mean over seeds of its mean over rollouts >= ``late_from`` × the last."""
    out = {}
    at = _at_lag(table, lag)
    for arm, runs in at.groupby("arm"):
        start = late_from * runs["rollout"].max()
        late = runs[runs["rollout"] >= start]
        per_seed = late.groupby(["metric", "seed"])["value"].mean().groupby("metric").mean()
        out[arm] = {m: float(per_seed.get(m, math.nan)) for m in CURVE_METRICS}
    return out


def lag_readout(table: pd.DataFrame, lag: int) -> dict[str, dict[str, dict[str, float]]]:
    """``{"lag": late_means at lag, "zero": late_means at lag 0}``: what the panel's readout prints."""
    if lag not in stored_lags(table):
        raise ValueError(f"lag must be one of the stored lags {stored_lags(table)}, got {lag!r}")
    return {"lag": late_means(table, lag), "zero": late_means(table, 0)}
