"""Finding 11 for notebook 06, "when each one dies": every stored run of the successors' regimes as one table of
collapse and frozen counts per regime, model and arm, and its figure. Stored runs only; the verdicts stay the finding
page's statements (the notebook quotes them from ``docs/book.json``).

Regimes, named by their knobs (:func:`gspo_record.f11.regimes.knobs`): (a) finding 2's collapsing regime, no
grad-norm cap (``f11_successors_collapse``, paired with finding 2's stored GRPO and GSPO runs); (b) a cap of 1 with
M = 8 and lr 1e-4 on both models (``f11b_*``); (b) again on fresh MoE seeds (``f11d_production_confirm``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from gspo_record.f11.regimes import NAMES, SPEC, SPEC_B, SPEC_B_DENSE, SPEC_D, knobs, runs

__all__ = ["REGIMES", "ARMS", "COLLAPSED", "death_table", "collapsed_share", "plot_deaths"]

#: (label, its specs): the regimes in the order the finding reads them
REGIMES = (("(a)", (SPEC,)), ("(b)", (SPEC_B, SPEC_B_DENSE)), ("(b), fresh seeds", (SPEC_D,)))
ARMS = ("grpo", "gspo", "cispo", "sapo", "vespo", "luspo", "gmpo")
#: the endpoint-v2 flag counted as a collapse (the runs' ``collapsed``; ``frozen`` is counted beside it)
COLLAPSED = "collapsed"


def death_table() -> pd.DataFrame:
    """One row per (regime, model, arm): the regime's knobs, runs, collapsed and frozen runs (endpoint v2's flags)
    and the mean late held-out accuracy."""
    rows = []
    for label, names in REGIMES:
        table = pd.concat([runs(name) for name in names], ignore_index=True)
        for (model, arm), g in table.groupby(["model", "arm_id"], sort=False):
            rows.append({"regime": label, "knobs": knobs(names[0]), "model": model, "arm": arm, "runs": len(g),
                         "collapsed": int(g[COLLAPSED].sum()), "frozen": int(g["frozen"].sum()),
                         "late_acc": float(g["late_acc"].mean())})  # fmt: skip
    order = {a: i for i, a in enumerate(ARMS)}
    out = pd.DataFrame(rows)
    return out.sort_values(["model", "arm"], key=lambda c: c.map(order) if c.name == "arm" else c, kind="stable")


def collapsed_share(table: pd.DataFrame, regime: str, arms: tuple[str, ...]) -> float:
    """The smallest share of collapsed runs among ``arms`` in ``regime`` over the models that ran them (NaN: none)."""
    part = table[(table["regime"] == regime) & table["arm"].isin(arms)]
    return float((part["collapsed"] / part["runs"]).min()) if len(part) else float("nan")


def plot_deaths(table: pd.DataFrame):
    """Per model, arms × regimes: the share of runs that collapsed (colour), each cell labelled "collapsed/runs"
    and its frozen runs ("f")."""
    from gspo_lab.plots import fig_row

    models = list(dict.fromkeys(table["model"]))
    regimes = [label for label, _ in REGIMES]
    fig, axes = fig_row(len(models), width=4.0, height=3.4)
    for ax, model in zip(axes, models, strict=True):
        part = table[table["model"] == model]
        arms = [a for a in ARMS if (part["arm"] == a).any()]
        share = np.full((len(arms), len(regimes)), np.nan)
        for (i, arm), (j, regime) in ((x, y) for x in enumerate(arms) for y in enumerate(regimes)):
            row = part[(part["arm"] == arm) & (part["regime"] == regime)]
            if row.empty:
                ax.text(j, i, "—", ha="center", va="center", fontsize=9, color="grey")
                continue
            r = row.iloc[0]
            share[i, j] = r["collapsed"] / r["runs"]
            ax.text(j, i, f"{r['collapsed']}/{r['runs']}" + (f"\n{r['frozen']} f" if r["frozen"] else ""),
                    ha="center", va="center", fontsize=9, color="white" if share[i, j] > 0.5 else "black")  # fmt: skip
        ax.imshow(np.ma.masked_invalid(share), cmap="Reds", vmin=0, vmax=1, aspect="auto")
        ax.set_xticks(range(len(regimes)), regimes, fontsize=9)
        ax.set_yticks(range(len(arms)), [NAMES[a] for a in arms], fontsize=9)
        ax.set_title(f"{model}: collapsed / runs (f: frozen)", fontsize=10)
    fig.tight_layout()
    return fig
