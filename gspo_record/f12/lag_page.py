"""Finding 12's page sections: the lag search (f12a) and, once declared and run, its fresh-seed confirmation (f12b).

Per arm and lag: collapsed and frozen counts (endpoint v2), late held-out accuracy, the late clip fraction, the
update's own KL k3 and the staleness KL k3 (π_behaviour against the current weights); per arm and lag > 0 the paired
drop against lag 0. Rules: :mod:`.lag`.
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

import gspo_record.f12.lag as lag
from gspo_record.fmt import arm_cell, diff_cell, num
from gspo_record.tables import progress, spec

__all__ = ["NAMES", "section", "plot_lags", "largest_lags", "prose", "glance_row"]

#: how the page names each arm
NAMES = {
    "grpo/behaviour": "GRPO, behaviour π_old",
    "gspo/behaviour": "GSPO, behaviour π_old",
    "cispo/behaviour": "CISPO, behaviour π_old",
    "grpo/proximal": "GRPO, proximal π_old, no correction",
    "grpo/proximal+token_truncate": "GRPO, proximal π_old + token TIS (cap 3)",
    "gspo/proximal+sequence_mask": "GSPO, proximal π_old + sequence mask (cap 3)",
    "gspo/proximal": "GSPO, proximal π_old, no correction",
}


def _order(table: pd.DataFrame) -> pd.DataFrame:
    arm = table["arm"].map(list(lag.ARMS.values()).index)
    return table.assign(_a=arm).sort_values(["_a", "lag", "seed"], kind="stable").drop(columns=["_a"])


def rows(table: pd.DataFrame) -> list[list]:
    """Per (arm, lag): the page's table row."""
    out = []
    for (arm, d), g in _order(table).groupby(["arm", "lag"], sort=False):
        counts = [f"{int(g[c].sum())}/{len(g)}" for c in ("collapsed", "frozen")]
        drop = diff_cell(lag.drops(table, arm, d)) if d > 0 else "—"
        out.append([NAMES[arm], d, *counts, arm_cell(g["late_acc"].dropna()), drop, num(float(g["clip"].mean())),
                    num(float(g["kl"].mean())), num(float(g["stale_kl"].mean())) if d > 0 else "—"])  # fmt: skip
    return out


#: the arms the At a glance row names, and how
SHORT = {
    "grpo/behaviour": "GRPO (behaviour π_old)",
    "gspo/behaviour": "GSPO (behaviour π_old)",
    "grpo/proximal": "GRPO (proximal, uncorrected)",
    "gspo/proximal+sequence_mask": "GSPO (proximal + mask)",
}
#: every arm's short name, for the fresh seeds' At a glance row and the story
SHORT_ALL = {**SHORT, "cispo/behaviour": "CISPO (behaviour π_old)",
             "grpo/proximal+token_truncate": "GRPO (proximal + token TIS)",
             "gspo/proximal": "GSPO (proximal, uncorrected)"}  # fmt: skip


def ends(table: pd.DataFrame) -> str:
    """The At a glance row's numbers: mean late held-out accuracy at lag 0 → the largest lag, per :data:`SHORT` arm."""
    if table.empty:
        return "pending"
    top = int(table["lag"].max())
    means = table.groupby(["arm", "lag"])["late_acc"].mean()
    parts = [f"{name} {num(means[(arm, 0)])} → {num(means[(arm, top)])}" for arm, name in SHORT.items()
             if (arm, 0) in means.index and (arm, top) in means.index]  # fmt: skip
    return f"late held-out accuracy, lag 0 → {top}: " + "; ".join(parts) if parts else "pending"


def section() -> tuple[dict, dict]:
    s = spec(lag.SPEC_SEARCH)
    table = lag.lag_table(lag.SPEC_SEARCH, "search")
    done = progress(s, "search")
    note = "" if done["done"] >= done["total"] else f"{done['done']} of {done['total']} cells finished"
    regime, ladder = lag.regime_verdict(table), lag.ladder_verdict(table)
    ctx = {"progress": done, "rows": rows(table),
           "regime": replace(regime, provisional=note) if regime.outcome != lag.PENDING else regime,
           "ladder": replace(ladder, provisional=note) if ladder.outcome != lag.PENDING else ladder,
           "lags": ", ".join(str(x) for x in lag.LADDER), "margin": lag.MARGIN,
           "confirm": progress(spec(lag.SPEC_CONFIRM)), "ends": ends(table)}  # fmt: skip
    data = table[["arm", "lag", "seed", "late_acc", "failed"]]
    return ctx, {"f12_lags": (data.reset_index(drop=True), plot_lags)}


def plot_lags(data: pd.DataFrame):
    """Late held-out accuracy against the lag (rollout batches, symlog x), one panel per objective family: a dot per
    run (a cross for a failed one), the mean per lag joined by a line, per arm."""
    import matplotlib.pyplot as plt

    present = set(data["arm"])
    families = [[a for a in NAMES if a.startswith("grpo")], [a for a in NAMES if not a.startswith("grpo")]]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.4), sharey=True)
    for ax, arms in zip(axes, families, strict=True):
        title = " and ".join(dict.fromkeys(a.split("/")[0].upper() for a in arms if a in present)) or "—"
        for i, arm in enumerate(arms):
            g = data[data["arm"] == arm]
            if g.empty:
                continue
            ok, bad = g[~g["failed"].astype(bool)], g[g["failed"].astype(bool)]
            ax.scatter(ok["lag"], ok["late_acc"], s=14, alpha=0.6, color=f"C{i}")
            ax.scatter(bad["lag"], bad["late_acc"], s=24, marker="x", color=f"C{i}")
            mean = g.groupby("lag")["late_acc"].mean()
            ax.plot(mean.index, mean.values, color=f"C{i}", label=NAMES[arm])
        ax.set_xscale("symlog", linthresh=1)
        lags = sorted(int(d) for d in data["lag"].unique())
        ax.set_xticks(lags, [str(d) for d in lags])
        ax.minorticks_off()
        ax.set_xlabel("lag D (rollout batches)", fontsize=8)
        ax.set_title(title, fontsize=9)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(frameon=False, fontsize=7)
    axes[0].set_ylabel("late held-out accuracy", fontsize=8)
    fig.tight_layout()
    return fig


def largest_lags(ctx: dict) -> dict[str, int | None]:
    """Each arm's largest tolerated lag on the longest ladder it ran: 12c's where it ran, else 12b's."""
    return {a["key"]: a["lag"] for a in ctx["f12b"]["largest"]} | {a["key"]: a["lag"] for a in ctx["f12c"]["largest"]}


def edges(book, lags: dict[str, int | None]) -> dict[str, list]:
    """Per arm of ``lags`` (:func:`largest_lags`), the tolerance statements its largest tolerated lag rests on: the
    one at that lag and the one at the next rung (the one that ended the run), 12c's where both sections read a lag.
    A printed boundary is as fragile as these are."""
    out = {}
    for arm, largest in lags.items():
        rungs: dict[int, object] = {}
        for section in ("f12b", "f12c"):  # 12c last: its reading of a rung both ran wins
            prefix = f"{section}.tolerates.{arm}."
            rungs |= {int(i[len(prefix) :]): s for i, s in book.statements.items() if i.startswith(prefix)}
        above = sorted(lag for lag in rungs if largest is not None and lag > largest)
        out[arm] = [rungs[lag] for lag in ([largest] if largest in rungs else []) + above[:1]]
    return out


def fragile_lags(found: dict[str, list], lags: dict[str, int | None]) -> str:
    """One sentence naming the arms whose largest tolerated lag rests on a fragile tolerance statement
    (:func:`edges`), grouped by what moves them ("Each of these lags is fragile: reading the training-reward AUC moves
    GRPO (behaviour π_old)'s 32 and …"); empty when none does."""
    from gspo_record.prose import fragile_brief

    moved: dict[str, list[str]] = {}
    for arm, statements in found.items():
        if why := fragile_brief(statements):
            reason = why.removeprefix("fragile: ").removesuffix(" changes it")
            moved.setdefault(reason, []).append(f"{SHORT_ALL[arm]}'s {lags[arm]}")
    if not moved:
        return ""
    every = sum(map(len, moved.values())) == len(found)
    lead = "Each of these lags is fragile" if every else "Some of these lags are fragile"
    said = "; ".join(f"{reason} moves {', '.join(arms[:-1])}{' and ' if len(arms) > 1 else ''}{arms[-1]}"
                     for reason, arms in moved.items())  # fmt: skip
    return f" {lead}: {said}."


def _ready(ctx: dict) -> bool:
    """Whether both fresh-seed sections (12b, 12c) have 2 seeds in: the written prose reads their statements."""
    return ctx["f12b"]["seeds"] >= 2 and ctx["f12c"]["seeds"] >= 2


def prose(ctx: dict) -> dict[str, str]:
    """Finding 12's written prose (``gspo_record/f12/prose.md``) on the book's newest statements, 12c's (which
    supersede 12b's): ``{"number", "verdict", "story"}``, each a paragraph; "pending" words until :func:`_ready`."""
    from gspo_record.prose import render

    f12, f12c = ctx["f12"], ctx["f12c"]
    if not _ready(ctx):
        return {"number": "The fresh seeds' verdicts are pending.", "verdict": "", "story": ""}
    lags = largest_lags(ctx)
    pairs = f12c["corrections"] + f12c["gspo_vs_grpo"] + f12c["isolate"]
    pairs += ctx["f12b"]["gspo_vs_grpo"]  # 12b's lag-16 difference, which 12c's lag-32 reading does not supersede
    context = {"lags": lags, "at": {c["verdict"].id: c["at"] for c in pairs}, "margin": f12["margin"],
               "seeds": f12c["seeds"], "top": f12c["top"],
               "fragile_lags": fragile_lags(edges(ctx["book"], lags), lags)}  # fmt: skip
    return {m: render("f12/prose.md", m, ctx["book"], **context) for m in ("number", "verdict", "story")}


def glance_row(ctx: dict, _row) -> dict:
    """Finding 12's At a glance row, made by the overview's row maker ``_row`` (:func:`gspo_record.headline._row`,
    passed in: no import cycle): the written prose (``ctx["f12_prose"]``, :func:`prose`) once the fresh seeds are in,
    its "how sure" from the statements it renders; the search's numbers and rules before."""
    f12 = ctx["f12"]
    if not _ready(ctx):
        p = f12["progress"]
        return _row("12", "Stale rollouts (beyond)", "—",
                    f"search, 2 seeds ({p['done']}/{p['total']} cells), {f12['ends']}; the fresh seeds' verdicts are "
                    "pending", f"regime: {f12['regime'].label}; ladder: {f12['ladder'].label}", f12["regime"],
                    f12["ladder"])  # fmt: skip
    pairs = ctx["f12c"]["corrections"] + ctx["f12c"]["gspo_vs_grpo"] + ctx["f12c"]["isolate"]
    written, book = ctx["f12_prose"], ctx["book"]
    edge = [s for found in edges(book, largest_lags(ctx)).values() for s in found]  # the lags its number prints
    return _row("12", "Stale rollouts (beyond)", "—", written["number"], written["verdict"],
                *(book.summary(c["verdict"].id) for c in pairs), *edge)  # fmt: skip
