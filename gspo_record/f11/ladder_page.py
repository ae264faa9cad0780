"""Finding 11's section 11e: the dose ladder's table, verdicts and figure (its rules: :mod:`.ladder`).

Per dose and arm: collapsed and frozen counts (endpoint v2; frozen runs stay in every mean, their 0 is absorbing),
the rollout-0 KL k3 over seeds, late held-out accuracy, and for CISPO and SAPO finding 11's position against the same
dose's GRPO and GSPO (rule ``f11e.dose``); per arm the drift at which collapse sets in (``f11e.kl50``); per successor
the largest safe learning rate (``f11e.safe``) and what a warm-up does (``f11e.warmup``).
"""

from __future__ import annotations

import pandas as pd

import gspo_record.f11.ladder as ladder
from gspo_record.f11.regimes import NAMES
from gspo_record.fmt import arm_cell, num, spread
from gspo_record.tables import progress, spec

__all__ = ["section", "plot_ladder"]


def _rows(table: pd.DataFrame, doses: list[dict]) -> list[list]:
    position = {(d["dose"], d["arm"]): d["verdict"] for d in doses}
    rows = []
    for (dose, arm), g in table.groupby(["dose", "arm_id"], sort=False):
        source = "anchor (f11b, f11d)" if (g["source"] != ladder.SPEC_E).all() else "ladder"
        v = position.get((dose, arm))
        counts = [f"{int(g[c].sum())}/{len(g)}" for c in ("collapsed", "frozen")]
        drift = [spread(g["drift"]), spread(g["peak"])]
        rows.append([dose, source, NAMES[arm], *counts, *drift, arm_cell(g["late_acc"].dropna()),
                     f"{v}{v.when}" if v is not None else "—"])  # fmt: skip
    return rows


def _order(table: pd.DataFrame) -> pd.DataFrame:
    """Doses by learning rate, warm-ups last; arms in :data:`ladder.ARMS` order."""
    key = table["lr"] + table["warmup"] * 1.0  # any warm-up sorts after every no-warm-up lr
    arm = table["arm_id"].map(list(ladder.ARMS).index)
    return table.assign(_k=key, _a=arm).sort_values(["_k", "_a", "seed"], kind="stable").drop(columns=["_k", "_a"])


def section() -> tuple[dict, dict]:
    table = _order(ladder.runs())
    doses = ladder.dose_verdicts(table)
    fits = []
    for arm in ladder.ARMS:
        fit = ladder.kl50(table, arm)
        frozen = ladder.kl50(table, arm, "frozen")
        cross = f"{num(fit['kl50'])} [{num(fit['low'])}, {num(fit['high'])}]" if "kl50" in fit else "—"
        fits.append({"arm": NAMES[arm], "verdict": fit["verdict"], "crossing": cross, "k": fit["k"], "n": fit["n"],
                     "range": f"{num(fit['lo_x'])}–{num(fit['hi_x'])}", "frozen": frozen["verdict"],
                     "frozen_k": frozen["k"]})  # fmt: skip
    safe = []
    for arm in ladder.SUCCESSORS:
        v, lr = ladder.safe_verdict(doses, arm)
        warm = []
        for w in (80, 320):
            runs = table[(table["arm_id"] == arm) & (table["warmup"] == w)]
            collapsed = f"{int(runs['collapsed'].sum())}/{len(runs)}"
            warm.append({"warmup": w, "verdict": ladder.warmup_verdict(table, arm, w), "collapsed": collapsed,
                         "drift": spread(runs["drift"])})  # fmt: skip
        safe.append({"arm": NAMES[arm], "verdict": v, "lr": "—" if lr is None else f"{lr:g}", "warmup": warm})
    crossings = [f for f in fits if f["verdict"].rule_outcome == "crossing"]
    ctx = {"progress": progress(spec(ladder.SPEC_E)), "rows": _rows(table, doses), "fits": fits, "safe": safe,
           "crossings": crossings, "ridge": ladder.RIDGE, "resamples": ladder.BOOTSTRAP}  # fmt: skip
    data = table[["arm_id", "dose", "warmup", "drift", "late_acc", "collapsed", "frozen"]].dropna(subset=["drift"])
    return ctx, {"f11e_ladder": (data.reset_index(drop=True), plot_ladder)}


def plot_ladder(data: pd.DataFrame):
    """Late held-out accuracy against rollout-0 KL k3 (log x), one point per run, per arm; a cross marks a collapsed
    run, an open marker a warm-up dose."""
    import matplotlib.pyplot as plt

    from gspo_lab.plots import color

    fig, axes = plt.subplots(1, len(ladder.ARMS), figsize=(11, 3.0), sharex=True, sharey=True)
    for ax, arm in zip(axes, ladder.ARMS, strict=True):
        g = data[data["arm_id"] == arm]
        for warm, marker in ((False, "o"), (True, "s")):
            own = g[(g["warmup"] > 0) == warm]
            kept, died = own[~own["collapsed"]], own[own["collapsed"]]
            ax.scatter(kept["drift"], kept["late_acc"], marker=marker, s=22, alpha=0.8, edgecolors=color(arm),
                       facecolors="none" if warm else color(arm))  # fmt: skip
            ax.scatter(died["drift"], died["late_acc"], marker="x" if not warm else "+", s=28, color=color(arm))
        ax.set_xscale("log")
        ax.set_title(NAMES[arm], fontsize=9)
        ax.set_xlabel("rollout-0 KL k3", fontsize=8)
    axes[0].set_ylabel("late held-out accuracy", fontsize=8)
    fig.tight_layout()
    return fig
