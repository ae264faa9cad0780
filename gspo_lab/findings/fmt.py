"""How numbers appear on the findings page: one formatter per kind of number, also the templates' filters.

These format numbers; they never choose words. Verdict words come from :mod:`gspo_lab.findings.rules`, prose from
the templates.
"""

from __future__ import annotations

import math

import pandas as pd

from gspo_lab.experiments.stats import arm_table, seed_interval, t_interval

__all__ = ["num", "mean_ci", "diff_cell", "t_cell", "rate_cell", "spread", "summary", "clip_label", "off", "robustness",
           "FILTERS"]  # fmt: skip


def off(value) -> bool:
    """A grid value that is off: "off" as a spec writes it, None or NaN once tabled."""
    return value is None or value == "off" or (isinstance(value, float) and math.isnan(value))


def robustness(flips: list[str]) -> str:
    """A robustness cell: "robust", or "fragile: " and the re-readings that change the verdict."""
    return "fragile: " + "; ".join(flips) if flips else "robust"


def num(x, digits: int = 3) -> str:
    """A number for the page: 3 significant digits, scientific below 1e-3 and from 1e4, "—" for none/NaN."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "—"
    if isinstance(x, int) and not isinstance(x, bool):
        return str(x)
    x = float(x)
    if x == 0:
        return "0"
    if abs(x) < 1e-3 or abs(x) >= 1e4:
        return f"{x:.2e}"
    return f"{x:.{digits}g}"


def summary(values) -> dict:
    """Mean, std, 95 % bootstrap interval, min, max and count (``seeds``) of ``values`` (over seeds, in their order:
    the bootstrap resamples by position): one arm's numbers."""
    table = arm_table(pd.DataFrame({"a": 0, "v": pd.Series(list(values), dtype=float)}), ["a"], "v")
    if table.empty:
        return {
            "seeds": 0,
            "mean": math.nan,
            "std": math.nan,
            "ci_low": math.nan,
            "ci_high": math.nan,
            "min": math.nan,
            "max": math.nan,
        }
    return table.iloc[0].drop("a").to_dict()


def mean_ci(row) -> str:
    """``mean [ci_low, ci_high]`` of an arm row (:func:`summary`, :func:`~gspo_lab.experiments.stats.arm_table`)."""
    return f"{num(row['mean'])} [{num(row['ci_low'])}, {num(row['ci_high'])}]"


def diff_cell(diff: pd.Series) -> str:
    """A paired per-seed difference: ``mean [lo, hi] (n = k)``, "—" when no seed has both arms."""
    if len(diff) == 0:
        return "—"
    lo, hi = seed_interval(list(diff))
    return f"{num(diff.mean())} [{num(lo)}, {num(hi)}] (n = {len(diff)})"


def t_cell(values) -> str:
    """Values over seeds (or paired per-seed differences) with their 95 % Student-t interval: ``mean [lo, hi] (n =
    k)``, "—" for none (finding 11's declared interval)."""
    values = list(values)
    if not values:
        return "—"
    lo, hi = t_interval(values)
    return f"{num(float(pd.Series(values).mean()))} [{num(lo)}, {num(hi)}] (n = {len(values)})"


def rate_cell(row) -> str:
    """``k/n [lo, hi]`` of a rate row (:func:`~gspo_lab.experiments.stats.rate_table`)."""
    return f"{int(row['k'])}/{int(row['n'])} [{num(row['ci_low'])}, {num(row['ci_high'])}]"


def spread(values, median: bool = True) -> str:
    """``median [min–max]`` of ``values``."""
    s = pd.Series(list(values), dtype=float)
    return f"{num(s.median() if median else s.mean())} [{num(s.min())}–{num(s.max())}]"


def clip_label(value) -> str:
    """A grid's grad_clip as stored in a result's point ("off" in specs, None or NaN once tabled) -> "off" / "1"."""
    if value is None or value == "off" or (isinstance(value, float) and math.isnan(value)):
        return "off"
    return f"{float(value):g}"


FILTERS = {"num": num, "mean_ci": mean_ci, "diff": diff_cell, "rate": rate_cell, "spread": spread}
