"""Finding 2c: the search for the target regime (grad-norm clip 1.0, M ≤ 8) on search seeds, and the stability map
of every ``moe-sort`` L = 12 run of finding 2.

Rule ``f2.search`` (:func:`search_hit`), declared in every search spec before its runs: a searched regime
*qualifies* (goes to a confirmation spec with fresh seeds) when GRPO collapsed on every search seed and GSPO on none.
The target setting (issue 9) is grad clip 1.0 with M ≤ ``TARGET_MAX_MINIBATCHES``.

Rule ``f2.map`` (:func:`map_verdict`, set after the results: post hoc), per grad-norm clip level over the map's
points (lr, M) holding both objectives: *a boundary moved, not immunity* when GSPO collapsed in some run but its
collapsed fraction nowhere exceeds GRPO's; *no GSPO collapse on the map* when GSPO never collapsed; *mixed* when
GSPO's fraction exceeds GRPO's somewhere.
"""

from __future__ import annotations

import pandas as pd

from gspo_lab.experiments.store import finished
from gspo_record.fmt import clip_label, num
from gspo_record.joint import Joint, combination
from gspo_record.rules import PENDING, Rule, Verdict, register
from gspo_record.statements import Count
from gspo_record.tables import F2, declared, progress, spec, with_base, with_endpoints

__all__ = ["SEARCH", "SEARCH_SPECS", "MAP_SPECS", "search_hit", "section", "map_section", "stability_table"]

SEARCH_SPECS = ("f2_search_clip", "f2_search_clip2", "f2_search_clip3", "f2_map_noclip", "f2_search_add")
#: the stability map: every GRPO and GSPO run finding 2 made: its confirmed regime and that regime's ten-seed
#: extension, the searches, the clipped candidate and the candidate's reward confirmation (fresh seeds 20-24)
TEN, REWARD_CONFIRM = "f2t_collapse_ten", "f2c_reward_confirm"
MAP_SPECS = (F2["moe"], TEN, *SEARCH_SPECS, F2["candidate"], REWARD_CONFIRM)
#: the coordinates of a searched regime (finding 2c), from a spec's grid or its base
SEARCH_REGIME = ("grad_clip", "checkpoint", "lr", "minibatches", "length")
#: the target setting (issue 9): grad-norm clip 1.0 and at most this many minibatches per rollout batch
TARGET_MAX_MINIBATCHES = 8

SEARCH = register(
    Rule(
        "f2.search",
        "2c",
        {"target": "the target setting", "outside": "outside the target setting", "none": "does not qualify"},
        {"TARGET_MAX_MINIBATCHES": TARGET_MAX_MINIBATCHES},
        declared="each data/specs/f2_search_*.toml, before its runs",
        marker="A regime where GRPO collapses on both search seeds",
        specs=("f2_search_clip", "f2_search_clip2", "f2_search_clip3", "f2_map_noclip", "f2_search_add"),
    )
)


MAP = register(
    Rule(
        "f2.map",
        "2c",
        {
            "boundary": "GSPO's stability is a boundary moved, not immunity",
            "immune": "GSPO collapsed nowhere on the map",
            "mixed": "GSPO collapsed more often than GRPO somewhere on the map",
        },
        {},
        declared="gspo_record/f2/search.py, after the results (post hoc)",
        marker="def map_verdict(points: pd.DataFrame) -> Verdict",
        specs=MAP_SPECS,
        post_hoc=True,
    )
)


_MORE, _GSPO = "points where GSPO's collapsed fraction exceeds GRPO's", "GSPO's runs collapsed"


@combination("f2.map", tuple(MAP.outcomes), (_MORE, _GSPO), shown=("mixed",))
def _map(o: dict) -> str:
    """GSPO's fraction above GRPO's at some point: mixed; else GSPO collapsed in some run: boundary; else immune."""
    if o[_MORE] == "at_least":
        return "mixed"
    return "boundary" if o[_GSPO] == "at_least" else "immune"


def _some(k: int, n: int, runs: bool = True) -> Count:
    """k of n read as "at_least" when one or more is, "at_most" when none is (a threshold of 1 of n, per n); a count
    of map points (``runs=False``) prints no rate interval."""
    return Count(k, n, 1, 0, per=n, wilson_shown=runs)


def map_verdict(points: pd.DataFrame, id: str = "f2.map"):
    """``f2.map`` on one clip level's points (a row per point: k and n per objective, columns ``(k|n, objective)``
    as :meth:`pandas.DataFrame.pivot_table` gives them): statement ``id``, whose number counts the points where
    GSPO's collapsed fraction exceeds GRPO's and GSPO's collapsed runs over them."""
    if points.empty:
        return MAP.verdict(PENDING)
    rate = points["k"] / points["n"]
    more = int((rate["gspo"] > rate["grpo"]).sum())
    k, n = int(points["k"]["gspo"].sum()), int(points["n"]["gspo"].sum())
    number = Joint("f2.map", ((_MORE, _some(more, len(points), runs=False)), (_GSPO, _some(k, n))))
    return MAP.state(id, "does GSPO collapse anywhere on the map, and ever more often than GRPO?", number)


def search_hit(grpo: pd.Series, gspo: pd.Series, seeds: int, clip: str, minibatches: int) -> Verdict:
    """``f2.search`` on one regime's collapsed flags per search seed (module docstring)."""
    qualifies = len(grpo) == seeds == len(gspo) and bool(grpo.all()) and not bool(gspo.any())
    target = clip == "1" and minibatches <= TARGET_MAX_MINIBATCHES
    return SEARCH.verdict(("target" if target else "outside") if qualifies else "none")


def _found(hits: list[dict]) -> str:
    """The search's qualifying regimes (:func:`section`'s hits) in a clause; an empty list reads as a sentence."""
    if not hits:
        return "in none of them did GRPO collapse on every search seed while GSPO collapsed on none"
    named = ", ".join(f"{h['checkpoint']} lr {h['lr']}, M = {h['m']}, L = {h['length']}, grad clip {h['clip']} "
                      f"({h['verdict'].short})" for h in hits)  # fmt: skip
    return f"GRPO collapsed on every search seed while GSPO collapsed on none in {len(hits)} of them: {named}"


def section() -> tuple[dict, dict]:
    specs = [spec(name) for name in SEARCH_SPECS]
    tables = []
    for s in specs:
        t = finished(s, "search")
        if not t.empty:
            t = with_base(s, t, SEARCH_REGIME).assign(spec=s.name).astype({"minibatches": int, "length": int})
            tables.append(t.assign(grad_clip=t["grad_clip"].map(clip_label)))
    table = pd.concat(tables, ignore_index=True)
    regime = ["spec", *SEARCH_REGIME]
    rows, hits = [], []
    for (name, clip, ckpt, lr, m, length, objective), group in table.groupby([*regime, "objective"], sort=True):
        k = int(group["collapsed"].astype(bool).sum())
        finals = ", ".join(num(v) for v in group.sort_values("seed")["eval_final"])
        rows.append(
            [
                f"`{name}`",
                clip,
                ckpt,
                num(lr),
                m,
                length,
                objective.upper(),
                len(group),
                f"{k}/{len(group)}",
                finals,
                num(group["clip_token_frac"].mean()),
            ]
        )
    for (name, clip, ckpt, lr, m, length), group in table.groupby(regime, sort=True):
        g, s = group[group.objective == "grpo"], group[group.objective == "gspo"]
        v = search_hit(g["collapsed"], s["collapsed"], len(spec(name).search_seeds), clip, m)
        if v.outcome != "none":
            hits.append({"checkpoint": ckpt, "lr": num(lr), "m": m, "length": length, "clip": clip, "verdict": v})
    ctx = {
        "progress": [progress(s, "search") for s in specs],
        "rows": rows,
        "hits": hits,
        "points": table.groupby(regime).ngroups,
        "found": _found(hits),
    }
    return ctx, {}


def _points(w: pd.DataFrame) -> str:
    """ "lr 1e-04 M 8 (GRPO 1/2, GSPO 0/2), …" for the map points in ``w``; "none" without any."""
    parts = [
        f"lr {num(lr)} M {int(m)} (GRPO {int(r[('k', 'grpo')])}/{int(r[('n', 'grpo')])}, "
        f"GSPO {int(r[('k', 'gspo')])}/{int(r[('n', 'gspo')])})"
        for (lr, m), r in w.iterrows()
    ]
    return "; ".join(parts) or "none"


def _at(w: pd.DataFrame, found: str, missing: str) -> str:
    """A sentence naming the map points in ``w`` after ``found``, or ``missing`` when there are none."""
    return f"{found}: {_points(w)}." if len(w) else f"{missing}."


def _map_specs() -> tuple[str, ...]:
    """:data:`MAP_SPECS` with F2 read at call time (the comparison swaps it)."""
    return (F2["moe"], TEN, *SEARCH_SPECS, F2["candidate"], REWARD_CONFIRM)


def _map_runs(endpoints: bool = False) -> pd.DataFrame:
    """Every moe-sort L = 12 run (no Routing Replay) of :func:`_map_specs`, one row per run, with ``clip`` (the cap's
    label) and ``collapsed`` (each spec's declared flag); with ``endpoints``, endpoint v2's columns too."""
    parts = []
    for name in _map_specs():
        s = spec(name)
        t = declared(s, "all")
        if t.empty:
            continue
        t = with_base(s, t, SEARCH_REGIME)
        if endpoints and "late_acc" not in t:
            t = with_endpoints(s, t)
        parts.append(t.assign(spec=name))
    t = pd.concat(parts, ignore_index=True)
    t = t[(t.checkpoint == "moe-sort") & (t.length == 12)]
    if "routing_replay" in t:
        t = t[~t["routing_replay"].fillna(False).astype(bool)]
    return t.assign(clip=t["grad_clip"].map(clip_label), collapsed=t["collapsed"].astype(bool))


def stability_table() -> pd.DataFrame:
    """Notebook 04's stability map: per (grad clip, lr, M, objective) of every moe-sort L = 12 run of finding 2
    (:data:`MAP_SPECS`): runs, collapsed (each spec's declared flag: endpoint v2 for the re-measured cells, the
    first measurement's for the searches), late held-out accuracy (the mean of the evaluations at rollouts >= 40 of
    80; 64 prompts for the search cells, 256 for the others), and whether the point holds search seeds only."""
    t = _map_runs(endpoints=True)
    t = t.assign(search=t["seed_set"] == "search")
    keys = ["clip", "lr", "minibatches", "objective"]
    return (
        t.groupby(keys)
        .agg(
            n=("collapsed", "size"),
            k=("collapsed", "sum"),
            late_acc=("late_acc", "mean"),
            search_only=("search", "all"),
        )
        .reset_index()
    )


def map_section() -> tuple[dict, dict]:
    """Every moe-sort L = 12 run of finding 2 (:data:`MAP_SPECS`: confirmation, extension and search seeds), as a
    stability map."""
    t = _map_runs()
    data = t.groupby(["clip", "lr", "minibatches", "objective"])["collapsed"].agg(k="sum", n="count").reset_index()
    summary = []
    for cap, d in data.groupby("clip", sort=False):  # cap names where each verdict was read (reread.WHERE)
        w = d.pivot_table(index=["lr", "minibatches"], columns="objective", values=["k", "n"]).dropna()
        rate = w["k"] / w["n"]
        summary.append(
            {
                "clip": cap,
                "grpo": f"{int(w['k']['grpo'].sum())}/{int(w['n']['grpo'].sum())}",
                "gspo": f"{int(w['k']['gspo'].sum())}/{int(w['n']['gspo'].sum())}",
                "more": int((rate["grpo"] > rate["gspo"]).sum()),
                "fewer": int((rate["grpo"] < rate["gspo"]).sum()),
                "points": len(w),
                "verdict": map_verdict(w, f"f2.map.{cap}"),
                "gspo_collapsed_at": _at(w[w["k"]["gspo"] > 0], "GSPO collapsed at", "GSPO collapsed at no point"),
                "separating": _at(
                    w[(w["k"]["grpo"] == w["n"]["grpo"]) & (w["k"]["gspo"] == 0)],
                    "GRPO collapsed in every run and GSPO in none at",
                    "At no point did GRPO collapse in every run and GSPO in none",
                ),
                "neither_at": _at(
                    w[(w["k"]["grpo"] == 0) & (w["k"]["gspo"] == 0)],
                    "Neither collapsed at",
                    "At every point one of them collapsed",
                ),  # fmt: skip
            }
        )
    return {"summary": summary}, {"f2_map": (data, _plot_map)}


def _plot_map(data: pd.DataFrame):
    import matplotlib.pyplot as plt

    from gspo_lab.plots import color

    clips = sorted(set(data["clip"]), key=lambda c: c != "off")
    lrs, ms = sorted(set(data["lr"])), sorted(set(data["minibatches"]))
    fig, axes = plt.subplots(1, len(clips), figsize=(4.6 * len(clips), 3.4), sharey=True, squeeze=False)
    for ax, clip in zip(axes[0], clips, strict=True):
        for row in data[data["clip"] == clip].itertuples():
            x = lrs.index(row.lr) + (-0.2 if row.objective == "grpo" else 0.2)
            y = ms.index(row.minibatches)
            c = color(row.objective)
            ax.scatter(x, y, s=420, marker="s", color=c, alpha=0.12 + 0.88 * row.k / row.n, edgecolors=c)
            ax.annotate(f"{row.k}/{row.n}", (x, y), ha="center", va="center", fontsize=7)
        ax.set_xticks(range(len(lrs)), [f"{lr:.2g}" for lr in lrs], fontsize=8)
        ax.set(xlim=(-0.6, len(lrs) - 0.4), ylim=(-0.6, len(ms) - 0.4), xlabel="learning rate")
        ax.set_title(f"grad-norm clip {clip}")
        ax.set_yticks(range(len(ms)), [str(m) for m in ms])
    axes[0][0].set_ylabel("minibatches per rollout (M)")
    for objective in ("grpo", "gspo"):
        axes[0][-1].scatter([], [], marker="s", color=color(objective), label=f"{objective.upper()}: collapsed / runs")
    axes[0][-1].legend(frameon=False, fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig
