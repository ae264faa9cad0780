"""Finding 2d (post hoc, no rule): the gradient-norm spikes of finding 2's runs — per run the typical update (median
over the first rollouts of the per-rollout mean) and the largest (pre-clip) update, on the MoE and the dense twin."""

from __future__ import annotations

import pandas as pd

from gspo_record.fmt import clip_label, num
from gspo_record.tables import F2, arm_name, spec, spike_table

__all__ = ["section", "spikes", "plot_spikes"]


def spikes() -> pd.DataFrame:
    """Per confirmation run of ``f2_collapse_moe`` and ``f2_collapse_dense``: typical and largest update, model, arm."""
    parts = []
    for model, name in (("MoE", F2["moe"]), ("dense", F2["dense"])):
        t = spike_table(spec(name))
        if not t.empty:
            parts.append(t.assign(model=model, arm=t.apply(arm_name, axis=1), clip=t["grad_clip"].map(clip_label)))
    return pd.concat(parts, ignore_index=True).assign(spike=lambda d: d["peak"] / d["typical"])


def _range(values: pd.Series) -> dict:
    return {"median": num(values.median()), "min": num(values.min()), "max": num(values.max())}


def section() -> tuple[dict, dict]:
    table = spikes()
    rows = []
    for (model, clip, arm), g in table.groupby(["model", "clip", "arm"], sort=False):
        coll = g[g["collapsed"]]
        peak, spike = _range(g["peak"]), _range(g["spike"])
        rows.append(
            [
                model,
                clip,
                arm,
                len(g),
                num(g["typical"].median()),
                f"{peak['median']} [{peak['min']}–{peak['max']}]",
                f"{spike['median']} [{spike['min']}–{spike['max']}]",
                num(float(g["peak_rollout"].median())),
                f"{len(coll)}/{len(g)}",
                num(float(coll["collapse_rollout"].median())) if len(coll) else "—",
            ]
        )
    grpo, gspo = table[table.objective == "grpo"], table[table.objective == "gspo"]
    by_model = [
        {
            "model": model,
            "grpo": num(g[g.objective == "grpo"]["peak"].median()),
            "gspo": num(g[g.objective == "gspo"]["peak"].median()),
        }
        for model, g in table.groupby("model", sort=False)
    ]
    ctx = {
        "rows": rows,
        "by_model": by_model,
        "grpo": {"runs": len(grpo), "peak": _range(grpo["peak"]), "spike": _range(grpo["spike"])},
        "gspo": {"runs": len(gspo), "peak": _range(gspo["peak"]), "spike": _range(gspo["spike"])},
    }
    data = table[["model", "clip", "arm", "objective", "seed", "peak", "collapsed"]]
    return ctx, {"f2_grad_spikes": (data, plot_spikes)}


def plot_spikes(data: pd.DataFrame):
    import matplotlib.pyplot as plt

    from gspo_lab.plots import color

    groups = list(data.groupby(["model", "clip", "arm"], sort=False))
    fig, ax = plt.subplots(figsize=(max(7.5, 0.75 * len(groups)), 4.0))
    for x, (_, g) in enumerate(groups):
        for i, row in enumerate(g.itertuples()):
            c = color(row.objective)
            face = c if row.collapsed else "none"
            ax.scatter(x + (i - (len(g) - 1) / 2) * 0.08, row.peak, s=28, edgecolors=c, facecolors=face, linewidths=1.2)
    # one short line each: an arm's name wraps at " + " so neighbouring labels never run together
    names = [f"{m}\n{a.replace(' + Routing Replay', ' + R2').replace(' + ', chr(10) + '+ ')}\nclip {c}"
             for (m, c, a), _ in groups]  # fmt: skip
    ax.set_xticks(range(len(groups)), names, fontsize=7)
    ax.set(yscale="log", ylabel="largest gradient norm of the run\n(before clipping)")
    ax.scatter([], [], color="grey", s=28, label="collapsed")
    ax.scatter([], [], facecolors="none", edgecolors="grey", s=28, label="did not collapse")
    ax.legend(frameon=False, fontsize=8)
    fig.tight_layout()
    return fig
