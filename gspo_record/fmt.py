"""How numbers appear on the findings page: one formatter per kind of number, also the templates' filters.

These format numbers; they never choose words. Verdict words come from :mod:`gspo_record.rules`, prose from
the templates.
"""

from __future__ import annotations

import math

import pandas as pd

from gspo_lab.experiments.stats import arm_row, seed_interval, wilson
from gspo_record.endpoints import bounds_of, difference_bounds

__all__ = ["num", "signs", "mean_ci", "diff_cell", "arm_cell", "rate_cell", "spread", "summary", "clip_label", "off",
           "robustness", "FILTERS", "by", "sign_count"]  # fmt: skip


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


def _bounds(values, bounds):
    """``bounds`` if given, else the declared range of the endpoint ``values`` is named for (a KeyError if none)."""
    return bounds if bounds is not None else bounds_of(getattr(values, "name", None))


def by(rows: list[dict], key: str) -> dict:
    """``rows`` (dicts) by their ``key`` value: a section's per-model or per-arm readings, looked up by name."""
    return {r[key]: r for r in rows}


def signs(values, null: float = 0.0) -> str:
    """The sign count of paired per-seed ``values`` against ``null``: ``k/n > 0`` or ``k/n < 0`` for the majority
    direction (both on a tie), a value equal to ``null`` counting for neither side; ``n/n = 0`` when all are."""
    x = pd.Series(list(values), dtype=float).dropna()
    return sign_count(len(x), int((x > null).sum()), int((x < null).sum()), null)


def sign_count(n: int, above: int, below: int, null: float = 0.0) -> str:
    """:func:`signs` from the counts: ``above`` and ``below`` of ``n`` values on each side of ``null``."""
    if above == below == 0:
        return f"{n}/{n} = {num(null)}"
    parts = [f"{above}/{n} > {num(null)}"] * (above >= below) + [f"{below}/{n} < {num(null)}"] * (below >= above)
    return ", ".join(parts)


def summary(values, bounds=None, null: float | None = None) -> dict:
    """Mean, std, the page's 95 % interval on the endpoint's declared ``bounds`` (default: looked up by the name of
    ``values``, gspo_record/endpoints.py), min, max and count (``seeds``) of ``values`` over seeds: one arm's
    numbers. ``null``: for paired per-seed values (a ratio against 1), their sign count against it as ``signs``."""
    bounds = _bounds(values, bounds)
    values = list(values)
    x = pd.Series(values, dtype=float).tolist()
    # arm_table's row for one arm, without its one-group table (the page calls this ~5,000 times; the table and its
    # groupby took a sixth of the build); a float per field, as its all-numeric row read back gave (seeds too)
    keys = ("seeds", "mean", "std", "ci_low", "ci_high", "min", "max")
    row = (
        {k: float(v) for k, v in arm_row(x, bounds).items()}
        if x
        else {k: 0 if k == "seeds" else math.nan for k in keys}
    )
    if null is not None:
        row["signs"] = signs(values, null)
    return row


def mean_ci(row) -> str:
    """``mean [ci_low, ci_high]`` of an arm row (:func:`summary`, :func:`~gspo_lab.experiments.stats.arm_table`);
    of paired values (a row with ``signs``) ``mean [ci_low, ci_high] (n = k; signs)``, as :func:`diff_cell`."""
    text = f"{num(row['mean'])} [{num(row['ci_low'])}, {num(row['ci_high'])}]"
    return text + (f" (n = {int(row['seeds'])}; {row['signs']})" if "signs" in row else "")


def diff_cell(diff: pd.Series, bounds=None) -> str:
    """A paired per-seed difference with the page's interval on its declared range (default: the difference range
    of the metric ``diff`` is named for) and its sign count: ``mean [lo, hi] (n = k; k/n > 0)``, "—" when no seed
    has both arms."""
    if len(diff) == 0:
        return "—"
    bounds = bounds if bounds is not None else difference_bounds(bounds_of(getattr(diff, "name", None)))
    lo, hi = seed_interval(list(diff), bounds)
    return f"{num(float(pd.Series(list(diff)).mean()))} [{num(lo)}, {num(hi)}] (n = {len(diff)}; {signs(diff)})"


def arm_cell(values, bounds=None) -> str:
    """One arm's values over seeds with the page's interval on its declared range: ``mean [lo, hi] (n = k)``, "—"
    for none. An arm exactly at an end of its range (0 or 1) on half its seeds or more prints that count with its
    Wilson interval instead, ``5/5 at 0 [0.57, 1]``: a mean interval there is "0 [0, 0]", which says nothing about
    how sure (issue 48, item 5)."""
    if len(values) == 0:
        return "—"
    x = [float(v) for v in values if v == v]
    for edge in _bounds(values, bounds):
        k = sum(v == edge for v in x)
        if x and 2 * k >= len(x):
            lo, hi = wilson(k, len(x))
            return f"{k}/{len(x)} at {num(edge)} [{num(lo)}, {num(hi)}]"
    row = summary(values, bounds)
    return f"{mean_ci(row)} (n = {int(row['seeds'])})"


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


def cap_name(clip: str) -> str:
    """A grad-norm cap as the prose names it: "none" for a spec's "off", else the cap."""
    return "none" if off(clip) else str(clip)


FILTERS = {"num": num, "mean_ci": mean_ci, "diff": diff_cell, "rate": rate_cell, "spread": spread, "cap": cap_name}
