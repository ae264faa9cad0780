"""Plot functions: data in, a matplotlib Figure out. One colour per objective, the paper's symbols on the axes.

Nothing here computes an algorithm: every function draws numbers that gspo_lab.analysis / gradients / clipping
produced. Callers display the Figure (notebooks) or save it (the findings page, docs/figures/).
"""

from __future__ import annotations

import textwrap

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

__all__ = [
    "COLORS",
    "color",
    "plot_ratio_distributions",
    "plot_variance_vs_length",
    "plot_grad_weights",
    "plot_gradient_variance",
    "plot_clip_runs",
    "plot_clip_whatif",
    "plot_objective_table",
    "plot_seed_curves",
    "plot_mismatch",
    "plot_mask_length",
    "plot_kl_weight",
    "plot_live",
    "plot_trust_regions",
    "LIVE_PANELS",
]

#: one colour per objective, in every notebook
COLORS = {
    "grpo": "#d62728",
    "gspo": "#1f77b4",
    "gspo_token": "#2ca02c",
    "grpo_token_mean": "#ff7f0e",
    "grpo_const_norm": "#9467bd",
    "gspo_token_mean": "#8c564b",
    "grpo_dual_clip": "#e377c2",
    "cispo": "#17becf",
    "cispo_clip": "#9edae5",
    "cispo_mask": "#0b6e78",
    "sapo": "#bcbd22",
    "luspo": "#393b79",
    "vespo": "#637939",
    "gmpo": "#8c6d31",
}
LABELS = {"grpo": "GRPO", "gspo": "GSPO", "gspo_token": "GSPO-token", "grpo_dual_clip": "GRPO + dual-clip",
          "cispo": "CISPO", "cispo_clip": "CISPO (two-sided clip)", "cispo_mask": "CISPO + mask", "sapo": "SAPO",
          "luspo": "LUSPO", "vespo": "VESPO", "gmpo": "GMPO"}  # fmt: skip


def _load_backend() -> None:
    """Load pyplot's backend now. In a Jupyter kernel that is matplotlib-inline, whose import registers the PNG
    formatter ``display(fig)`` needs; pyplot only loads it lazily, on its first figure, and the figures here are
    made outside pyplot (so that the inline hook does not show them a second time)."""
    plt.switch_backend(matplotlib.rcParams["backend"])


_load_backend()


def color(objective: str) -> str:
    return COLORS.get(objective, "#7f7f7f")


def label(objective: str) -> str:
    return LABELS.get(objective, objective)


def fig_row(ncols: int = 1, width: float = 5.2, height: float = 3.6) -> tuple[Figure, np.ndarray]:
    # a Figure outside pyplot: the caller's display() shows it once (pyplot's inline hook would show it again)
    fig = Figure(figsize=(width * ncols, height))
    axes = fig.subplots(1, ncols, squeeze=False)
    return fig, axes[0]


def plot_ratio_distributions(samples: dict, title: str = "") -> Figure:
    """Histograms of token log w_{i,t}, GSPO's log s_i and the summed Σ_t log w_{i,t} (from ratio_samples)."""
    fig, axes = fig_row(3, width=4.2)
    spec = [
        ("tok_log_ratio", r"token $\log w_{i,t}$", color("grpo")),
        ("seq_log_ratio", r"GSPO $\log s_i = \frac{1}{|y_i|}\sum_t \log w_{i,t}$", color("gspo")),
        ("seq_log_ratio_sum", r"sequence $\sum_t \log w_{i,t}$", "#555555"),
    ]
    for ax, (key, xlabel, c) in zip(axes, spec, strict=True):
        x = np.asarray(samples[key], dtype=float)
        counts, edges = np.histogram(x, bins=40)
        ax.stairs(counts, edges, fill=True, color=c, alpha=0.85)  # one patch, not 40: redraws stay fast
        if key == "tok_log_ratio":
            ax.set_yscale("symlog", linthresh=1)  # tokens: a spike at 0 and long tails
        ax.set_xlabel(xlabel)
        ax.set_ylabel("count")
        ax.set_title(f"std {x.std():.2e}, max|·| {np.abs(x).max():.2e}", fontsize=9)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_variance_vs_length(prefix: pd.DataFrame, title: str = "") -> Figure:
    """Var over responses of Σ_{t<=n} log w and of (1/n)Σ_{t<=n} log w against n (prefix_ratio_variance)."""
    fig, axes = fig_row(1, width=6)
    ax = axes[0]
    ax.plot(
        prefix["n"], prefix["var_sum"], "o-", color="#555555", label=r"Var$[\sum_{t\leq n} \log w]$ (sequence ratio)"
    )
    ax.plot(
        prefix["n"],
        prefix["var_mean"],
        "s-",
        color=color("gspo"),
        label=r"Var$[\frac{1}{n}\sum_{t\leq n}\log w]$ (GSPO)",
    )
    ax.set_yscale("log")
    ax.set_xlabel("response length n (tokens)")
    ax.set_ylabel("variance across responses")
    ax.legend(fontsize=8)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


def plot_grad_weights(weights: dict, mask, title: str = "", adv=None) -> Figure:
    """Heatmaps (responses × tokens) of normalised per-token gradient weights, one panel per objective.

    With ``adv`` (B,), a response whose advantage is 0 — it has no gradient, so no weight to normalise — is drawn grey
    like padding instead of taking the colour of a clipped token (weight 0)."""
    fig, axes = fig_row(len(weights), width=4.8, height=3.8)
    m = np.asarray(mask, dtype=bool)
    if adv is not None:
        m = m & (np.asarray(adv, dtype=float) != 0)[:, None]
    cmap = matplotlib.colormaps["coolwarm"].copy()
    cmap.set_bad("0.85")
    for ax, (name, w) in zip(axes, weights.items(), strict=True):
        data = np.where(m, np.asarray(w, dtype=float), np.nan)
        im = ax.imshow(data, aspect="auto", cmap=cmap, vmin=0.0, vmax=2.0, interpolation="nearest")
        sym = r"$s_i$" if name.startswith("gspo") else r"$w_{i,t}$"
        ax.set_title(f"{label(name)}: weight / ($\\hat A_i$/|y_i|) = {sym}", fontsize=9, color=color(name))
        ax.set_xlabel("token t" + ("   (grey: padding, or Â_i = 0)" if adv is not None else ""))
        ax.set_ylabel("response i")
        fig.colorbar(im, ax=ax, fraction=0.046, label="0 = clipped")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_gradient_variance(table: pd.DataFrame, title: str = "") -> Figure:
    """Left: relative variance of the minibatch gradient vs update index k, one line per objective. Right: their
    ratio GRPO / GSPO with its bootstrap interval. ``table``: :func:`gspo_lab.gradients.staleness_noise`."""
    fig, axes = fig_row(2, width=11)
    k = table.index.to_numpy()
    for name in ("grpo", "gspo"):
        axes[0].plot(k, table[f"rel_variance_{name}"], "o-", color=color(name), label=label(name))
    axes[0].set_xlabel("update index k within the rollout (0 = on-policy)")
    axes[0].set_ylabel(r"E$\|g-\bar g\|^2 / \|\bar g\|^2$")
    axes[0].legend()
    err = [table["noise_ratio"] - table["noise_ratio_lo"], table["noise_ratio_hi"] - table["noise_ratio"]]
    axes[1].errorbar(k, table["noise_ratio"], yerr=err, fmt="o-", color=color("grpo"), capsize=3)
    axes[1].axhline(1.0, color="0.5", lw=0.8, ls="--")
    axes[1].set_xlabel("update index k")
    axes[1].set_ylabel("rel. variance GRPO / GSPO (5-95 % bootstrap)")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def plot_clip_runs(histories: dict, title: str = "") -> Figure:
    """Per objective: clipped-token fraction per rollout (log scale; the mean over its off-policy updates k ≥ 1 — the
    on-policy update k = 0 clips nothing by construction, and plotting it drew a sawtooth to the floor), reward per
    rollout, and both clip units."""
    fig, axes = fig_row(3, width=4.4)
    for name, h in histories.items():
        c = color(name)
        off = h[h["update_in_rollout"] > 0].groupby("rollout")["clip/token_frac"].mean()
        axes[0].plot(off.index, off.clip(lower=1e-5), "o-", color=c, label=label(name))
        per = h.groupby("rollout").first()
        axes[1].plot(per.index, per["reward/mean"], "o-", color=c, label=label(name))
        units = h[h["update_in_rollout"] > 0][["clip/token_frac", "clip/seq_frac"]].mean()
        axes[2].bar([f"{label(name)}\ntokens", f"{label(name)}\nsequences"], units.values, color=c, alpha=0.8)
    axes[0].set_yscale("log")
    axes[0].set_xlabel("rollout")
    axes[0].set_ylabel("clipped-token fraction\n(mean of updates k >= 1)")
    axes[1].set_xlabel("rollout")
    axes[1].set_ylabel("mean reward")
    axes[2].set_yscale("log")
    axes[2].set_ylabel("clip fraction (updates k >= 1)")
    for ax in axes[:2]:
        ax.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_clip_whatif(
    table: pd.DataFrame, objective: str, eps_low: float, eps_high: float, curve: pd.DataFrame | None = None
) -> Figure:
    """What-if clip fractions for one objective at (ε_low, ε_high): per update of the stored run (tokens and
    sequences), and — with ``curve`` (:func:`gspo_lab.clipping.clip_curve`) — as a curve over ε with the current
    ε marked."""
    fig, axes = fig_row(2 if curve is not None else 1, width=5.2, height=3.2)
    c = color(objective)
    ax = axes[0]
    ax.plot(table["update"], table["clip/token_frac"], "o-", color=c, label="tokens")
    ax.plot(table["update"], table["clip/seq_frac"], "s--", color=c, alpha=0.6, label="sequences")
    ax.set(ylim=(-0.02, 1.02), xlabel="optimizer step of the stored run", ylabel="clip fraction (what-if)")
    ax.set_title(f"{label(objective)} at ε_low={eps_low:.3g}, ε_high={eps_high:.3g}", fontsize=10, color=c)
    ax.legend(fontsize=8)
    if curve is not None:
        ax = axes[1]
        ax.plot(curve["eps_low"], curve["clip/token_frac"], "o-", color=c, ms=3, label="tokens")
        ax.plot(curve["eps_low"], curve["clip/seq_frac"], "s--", color=c, ms=3, alpha=0.6, label="sequences")
        ax.axvline(eps_low, color="grey", ls=":", label=f"this ε_low ({eps_low:.3g})")
        ax.set(
            xscale="log",
            ylim=(-0.02, 1.02),
            xlabel="ε_low (ε_high scaled with it)",
            ylabel="clip fraction, updates k ≥ 1",
        )
        ax.set_title("the band scaled ×0.1 … ×10", fontsize=10)
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_objective_table(table: pd.DataFrame, keys: list[str], title: str = "") -> Figure:
    """Bars of selected statistics, one bar group per statistic and one colour per objective."""
    fig, axes = fig_row(len(keys), width=3.2, height=3.0)
    for ax, key in zip(axes, keys, strict=True):
        vals = table[key]
        ax.bar([label(n) for n in table.index], vals.values, color=[color(n) for n in table.index])
        ax.set_title(key, fontsize=9)
        ax.tick_params(axis="x", labelsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_seed_curves(data: pd.DataFrame, ylabel: str, title: str = "", log: bool = False) -> Figure:
    """Per-rollout curves of stored sweep results: one thin line per seed, the mean over seeds bold, per objective.

    ``data``: long table with columns objective, seed, rollout, value (:func:`gspo_lab.experiments.curves`).
    """
    fig, (ax,) = fig_row()
    for objective, group in data.groupby("objective", sort=True):
        for _, run in group.groupby("seed"):
            ax.plot(run["rollout"], run["value"], color=color(objective), alpha=0.25, lw=0.8)
        mean = group.groupby("rollout")["value"].mean()
        ax.plot(mean.index, mean.values, color=color(objective), lw=2, label=f"{label(objective)} (mean of seeds)")
    if log:
        ax.set_yscale("log")
    ax.set_xlabel("rollout batch")
    ax.set_ylabel(ylabel)
    ax.set_title(textwrap.fill(title, 60), fontsize=9)  # an arm's label names every grid field: wrap it
    ax.legend(frameon=False)
    return fig


def plot_mismatch(samples: dict[str, dict[str, np.ndarray]], bands: dict[str, float], title: str = "") -> Figure:
    """|Δ| = |log π_sampler − log π_train| per token and per sequence (length-normalised), one curve per engine.

    ``samples``: ``{label: {"token": |Δ| per valid token, "sequence": |mean_t Δ| per response}}`` (numpy arrays);
    ``bands``: ``{"token": ε_high, "sequence": ε_high}``, the clip band's upper ε drawn on each panel (GRPO's on
    tokens, GSPO's on sequences) at its log-space edge log(1 + ε) — 0.239 for GRPO's 0.27, not 0.27. Empirical
    survival curves (share of values above x) on log axes.
    """
    fig, axes = fig_row(ncols=2, width=4.6)
    for ax, unit in zip(axes, ("token", "sequence"), strict=True):
        for i, (name, s) in enumerate(samples.items()):
            x = np.sort(np.clip(np.asarray(s[unit], dtype=float), 1e-12, None))
            share = 1.0 - np.arange(len(x)) / len(x)
            ax.step(x, share, where="post", color=f"C{i}", label=name)
        owner = "GRPO" if unit == "token" else "GSPO"
        edge = float(np.log1p(bands[unit]))
        ax.axvline(edge, color="grey", ls=":", label=f"{owner}'s band edge: log(1 + {bands[unit]:.2g}) = {edge:.3g}")
        what = "|mean_t Δ| per response" if unit == "sequence" else "|Δ| per token"
        ax.set(xscale="log", yscale="log", xlabel=f"{what} (an exact 0 drawn at 1e-12)", ylabel="share above")
        ax.legend(frameon=False, fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_mask_length(table: pd.DataFrame, title: str = "") -> Figure:
    """The share of responses each sequence mask drops against the number of tokens it reads, one panel per drift.

    ``table``: rows of :func:`gspo_lab.corrections.masked_at_length` with a ``drift`` column (the panel's label, e.g.
    "sampler 8 updates behind"); one line per mask ``name``, in the table's order; x on a log2 axis.
    """
    drifts = list(dict.fromkeys(table["drift"]))
    fig, axes = fig_row(ncols=len(drifts), width=3.9)
    for ax, drift in zip(axes, drifts, strict=True):
        part = table[table["drift"] == drift]
        for i, name in enumerate(dict.fromkeys(part["name"])):
            line = part[part["name"] == name]
            ax.plot(line["length"], line["masked"], marker="o", ms=3, color=f"C{i}", label=name)
        ax.set(xscale="log", xlabel="tokens the mask reads (n)", ylabel="share of responses dropped", title=drift,
               ylim=(-0.02, 1.02))  # fmt: skip
        ax.set_xticks(sorted(set(part["length"])))
        ax.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    axes[0].legend(frameon=False, fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_kl_weight(parts: dict, mask, title: str = "") -> Figure:
    """Per valid token, |∇ of the unweighted k3 term| (x) against |what a ratio weight adds| (y), one colour per
    weight. ``parts``: ``{label: {"kl": (B, T), "extra": (B, T)}}`` (:func:`gspo_lab.penalties.kl_weight_gradient`)."""
    fig, axes = fig_row(ncols=1, width=5.0, height=4.0)
    ax = axes[0]
    lo, hi = np.inf, 0.0
    for i, (name, g) in enumerate(parts.items()):
        x, y = (np.clip(g[k][mask].abs().double().numpy(), 1e-12, None) for k in ("kl", "extra"))
        ax.scatter(x, y, s=6, alpha=0.5, color=f"C{i}", label=name)
        lo, hi = min(lo, x.min(), y.min()), max(hi, x.max(), y.max())
    ax.plot([lo, hi], [lo, hi], color="grey", ls=":", label="y = x")
    ax.set(xscale="log", yscale="log", xlabel="|∇ k3 term| per token", ylabel="|added by the weight| per token")
    ax.legend(frameon=False, fontsize=7)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


#: notebook 04's live panels: (title, per-rollout column or "eval", y scale)
LIVE_PANELS = (
    ("held-out accuracy (sampled)", "eval", "linear"),
    ("training reward", "reward/mean:mean", "linear"),
    ("clipped tokens", "clip/token_frac:mean", "log"),
    ("largest gradient norm (pre-clip)", "grad/norm:max", "log"),
    ("truncated responses (no <eos>)", "response/truncated_frac:mean", "linear"),
    ("expert change per update", "moe/expert_change:mean", "linear"),
)


def plot_live(runs: dict, title: str = "") -> Figure:
    """Notebook 04's live view: per run (``{name: LiveRun}``, :mod:`gspo_lab.live`) the panels of :data:`LIVE_PANELS`
    against the rollout, one colour per objective (a dashed line for Routing Replay)."""
    fig = Figure(figsize=(13, 6.2))
    axes = fig.subplots(2, 3).ravel()
    for ax, (name, column, scale) in zip(axes, LIVE_PANELS, strict=True):
        zeros = False
        for run_name, run in runs.items():
            style = {"color": color(run.cfg.objective), "ls": "--" if run.cfg.routing_replay else "-"}
            if column == "eval":
                if len(run.evals):
                    ax.plot(
                        run.evals["rollout"], run.evals["eval/accuracy_sampled"], marker="o", label=run_name, **style
                    )
            elif column in run.per_rollout:
                x, y = run.per_rollout["rollout"], run.per_rollout[column]
                if scale == "log":  # a 0 (no clipped token; no gradient when every group's rewards tie): a gap, and
                    zero = y <= 0  # a tick at the axis
                    y, zeros = y.where(~zero), zeros or bool(zero.any())
                    ax.plot(x[zero], np.zeros(int(zero.sum())), "|", ms=8, color=style["color"],
                            transform=ax.get_xaxis_transform())  # fmt: skip
                ax.plot(x, y, label=run_name, **style)
        ax.set(title=name + (" (| at the axis: 0)" if zeros else ""), xlabel="rollout batch", yscale=scale)
    axes[0].legend(frameon=False, fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_trust_regions(table: pd.DataFrame, title: str = "") -> Figure:
    """Each objective's gradient weight per unit Â against the log-ratio of a one-token response, one panel per sign
    of Â (:func:`gspo_lab.gradients.trust_region_weights`). A flat 0 is a hard clip; a curve bending down is a soft
    gate or cap."""
    fig, axes = fig_row(2, width=4.8, height=3.4)
    for ax, sign in zip(axes, ("Â > 0", "Â < 0"), strict=True):
        part = table[table["advantage"] == sign]
        for name, g in part.groupby("objective", sort=False):  # hard clips dashed: they coincide in places
            style = {"grpo_dual_clip": "--", "gmpo": "-."}.get(name, "-")
            ax.plot(g["log_ratio"], g["weight"], style, color=color(name), lw=2.4 if name == "grpo" else 1.6,
                    label=label(name))  # fmt: skip
        ax.axhline(1.0, color="grey", lw=0.6, ls=":")
        ax.axvline(0.0, color="grey", lw=0.6, ls=":")
        ax.set(xlabel="log w = log π_θ / π_old of the token", ylabel="gradient weight per unit Â", ylim=(-0.1, 5.2))
        ax.set_title(f"{sign}: {'raising' if sign == 'Â > 0' else 'lowering'} the token's probability", fontsize=10)
    axes[0].legend(fontsize=8, loc="upper left")
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig
