"""What a clip fraction means under lag (issue 49, item 2): finding 12's stored runs, the clipped share of each arm
against the lag D, in both units a library may log — tokens (``clip_token_frac``: a clipped GSPO response counts all
its tokens) and responses (``clip_seq_frac``: a response with any clip-active token) — each a per-run mean over the
run's updates, with the page's 95 % interval over seeds on [0, 1]. Notebook 05's lag section and the recipe page draw
it (:func:`plot_clip_by_lag`); stored runs only.

The lags are 12b's ladder (0 to 16, ``f12b_lag_confirm``) and, for the arms 12c ran on, lag 32
(``f12c_lag_isolate``), on the same fresh seeds.
"""

from __future__ import annotations

import pandas as pd

from gspo_lab.experiments.endpoint_range import ACCURACY
from gspo_lab.experiments.stats import seed_interval
from gspo_record.f12.isolate import SPEC_ISOLATE
from gspo_record.f12.lag import SPEC_CONFIRM, lag_table
from gspo_record.f12.lag_page import SHORT_ALL
from gspo_record.fmt import num

__all__ = ["UNITS", "SHOWN", "clip_by_lag", "plot_clip_by_lag", "at", "section"]

#: per unit, the per-run column it reads
UNITS = {"tokens": "clip_token_frac", "responses": "clip_seq_frac"}
#: the arms drawn: the sampler's log-probs as π_old (what TRL's AsyncGRPOTrainer does), and the two corrected arms
SHOWN = ("grpo/behaviour", "gspo/behaviour", "cispo/behaviour", "grpo/proximal+token_truncate",
         "gspo/proximal+sequence_mask")  # fmt: skip
_COLOURS = {"grpo/behaviour": "#d62728", "gspo/behaviour": "#1f77b4", "cispo/behaviour": "#17becf",
            "grpo/proximal+token_truncate": "#ff9896", "gspo/proximal+sequence_mask": "#aec7e8"}  # fmt: skip


def _runs() -> pd.DataFrame:
    """Every finished fresh-seed run of the shown arms: arm, lag, seed and the two per-run clip columns."""
    parts = [lag_table(SPEC_CONFIRM, "confirm")]
    top = lag_table(SPEC_ISOLATE, "confirm")
    parts.append(top[top["lag"] > parts[0]["lag"].max()])  # 12c's new rungs only: 12b's lags are 12b's runs
    t = pd.concat(parts, ignore_index=True)
    return t[t["arm"].isin(SHOWN)][["arm", "lag", "seed", *UNITS.values()]]


def clip_by_lag(runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per (arm, lag, unit): the mean clipped share over seeds, its interval (lo, hi) and n."""
    runs = _runs() if runs is None else runs
    rows = []
    for (arm, lag), g in runs.groupby(["arm", "lag"], sort=True):
        for unit, column in UNITS.items():
            values = [float(v) for v in g[column] if v == v]
            lo, hi = seed_interval(values, ACCURACY) if len(values) >= 2 else (float("nan"), float("nan"))
            rows.append({"arm": arm, "lag": int(lag), "unit": unit, "mean": sum(values) / len(values) if values
                         else float("nan"), "lo": lo, "hi": hi, "n": len(values)})  # fmt: skip
    return pd.DataFrame(rows)


def at(table: pd.DataFrame, arm: str, lag: int, unit: str) -> dict:
    """The row of ``arm`` at ``lag`` in ``unit``: ``{"mean", "lo", "hi", "n", "text"}``, text "0.359 [0.351, 0.367]"."""
    row = table[(table["arm"] == arm) & (table["lag"] == lag) & (table["unit"] == unit)]
    if row.empty:
        raise KeyError(f"no clipped share of {arm} at lag {lag} in {unit}: lags {sorted(set(table['lag']))}")
    r = row.iloc[0]
    return {"mean": r["mean"], "lo": r["lo"], "hi": r["hi"], "n": int(r["n"]),
            "text": f"{num(r['mean'])} [{num(r['lo'])}, {num(r['hi'])}]"}  # fmt: skip


def plot_clip_by_lag(table: pd.DataFrame):
    """Two panels, tokens and responses: each arm's clipped share against the lag D (log y), the mean over seeds with
    its 95 % interval."""
    from gspo_lab.plots import fig_row

    fig, axes = fig_row(2, width=4.8, height=3.6)
    for ax, unit in zip(axes, UNITS, strict=True):
        part = table[table["unit"] == unit]
        for arm in SHOWN:
            g = part[part["arm"] == arm].sort_values("lag")
            if g.empty:
                continue
            bars = [g["mean"] - g["lo"], g["hi"] - g["mean"]]
            ax.errorbar(g["lag"], g["mean"], yerr=bars, marker="o", ms=3, capsize=2, color=_COLOURS[arm],
                        label=SHORT_ALL[arm], lw=1.4)  # fmt: skip
        ax.set_yscale("log")
        ax.set_xscale("symlog", linthresh=2)
        ax.set_xticks(sorted(set(part["lag"])), [str(d) for d in sorted(set(part["lag"]))])
        ax.set(xlabel="lag D (rollout batches; × M = 8 updates)", ylabel=f"clipped share of {unit}")
        ax.tick_params(labelsize=9)
        ax.set_title(f"in {unit} ({UNITS[unit]})", fontsize=10)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=9, loc="lower center", ncol=3, frameon=False)
    fig.tight_layout(rect=(0, 0.14, 1, 1))
    return fig


def section() -> tuple[dict, dict]:
    """The recipe's numbers (GSPO's and GRPO's clipped shares, behaviour π_old, at lag 0 and at the largest lag both
    ran, in both units; ``m``: the runs' minibatches per batch, the updates one lag step adds) and the figure
    ``f12_clip_lag``."""
    table = clip_by_lag()
    if table.empty:
        return {"ready": False}, {}
    from gspo_record.tables import spec

    top = int(table[table["arm"] == "gspo/behaviour"]["lag"].max())
    ctx = {"ready": True, "top": top, "seeds": int(table["n"].max()), "m": int(spec(SPEC_CONFIRM).base["minibatches"]),
           "at": {f"{arm.split('/')[0]}.{unit}.{lag}": at(table, arm, lag, unit)
                  for arm in ("grpo/behaviour", "gspo/behaviour") for unit in UNITS for lag in (0, top)}}  # fmt: skip
    return ctx, {"f12_clip_lag": (table, plot_clip_by_lag)}
