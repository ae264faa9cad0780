"""Finding 6c: does GRPO's trouble grow with response length at fixed difficulty? (issue 37 part B, item 2).

``data/specs/f6c_length_search.toml``, declared before its runs: GRPO, GSPO and grpo_token_mean (TRL's default
"dapo" loss) on ``add_format`` at L = 2, 4, 7 digits (22, 42, 72 response tokens), each length from its own cold
start of the same sampled accuracy; lr {3e-5, 1e-4} on search seeds 0-1. The rule reading it:

``f6c.regime`` (:func:`regime_verdict`): the chosen lr is the largest at which, on every search seed, no arm collapses
(endpoint v2) at the shortest length and GSPO collapses at no length; *none qualifies* when neither does (then the
smallest lr is run and the page says so). A statement on each searched lr's two collapse counts, each read against
"none" (``f6c.qualifies``).

``data/specs/f6c_length_confirm.toml``, declared before its runs: the chosen regime on fresh seeds 20-24. Its rules:

``f6c.gap_grows`` (:func:`gap_grows_verdict`, primary): the least-squares slope of the per-seed paired GSPO − GRPO
late held-out accuracy against log2(response tokens), with a 95 % bootstrap interval (seeds resampled within each
length): *grows* above 0, *shrinks* below 0, else *no trend shown*; the per-seed slopes' sign count beside it. The
same rule on grpo_token_mean − GRPO is the declared secondary reading.

``f6c.gap`` (:func:`gap_verdict`), per length: the paired GSPO − GRPO late held-out accuracy's 95 % Student-t
interval over seeds (range [−1, 1]) above 0 / below 0 / includes 0.
"""

from __future__ import annotations

import pandas as pd

import gspo_record.f6.variance as variance
from gspo_lab.experiments.endpoint_range import DIFFERENCE
from gspo_lab.experiments.stats import declared_t_interval, paired_diff
from gspo_record.f6.length import LENGTHS, tokens
from gspo_record.fmt import num
from gspo_record.joint import Joint, combination, joint_outcome
from gspo_record.rules import PENDING, Rule, register
from gspo_record.signed import signed
from gspo_record.statements import Count
from gspo_record.tables import declared, progress, spec

__all__ = [
    "REGIME",
    "GAP_GROWS",
    "GAP",
    "SEARCH",
    "CONFIRM",
    "ARMS",
    "regime_verdict",
    "qualifies",
    "qualifies_number",
    "qualifies_outcome",
    "regime_outcome",
    "search_table",
    "gaps",
    "gap_grows_verdict",
    "gap_verdict",
    "section",
]

SEARCH = "f6c_length_search"
CONFIRM = "f6c_length_confirm"
#: the arms, in the page's order
ARMS = ("grpo", "gspo", "grpo_token_mean")

REGIME = register(
    Rule(
        "f6c.regime",
        "6",
        {"high": "lr 1e-4 qualifies", "low": "lr 3e-5 qualifies (1e-4 does not)",
         "none": "none qualifies (lr 3e-5 is run)"},
        {"SHORTEST_L": 2, "LRS": "1e-4, 3e-5"},
        declared="data/specs/f6c_length_search.toml, before its runs",
        marker="- f6c.regime: the chosen lr is the largest",
        specs=(SEARCH,),
    )
)  # fmt: skip
_CONFIRM_DECLARED = "data/specs/f6c_length_confirm.toml, before its runs (and f6c_length_search.toml, before its own)"
GAP_GROWS = register(
    Rule(
        "f6c.gap_grows",
        "6",
        {
            "grows": "the gap grows with length",
            "shrinks": "the gap shrinks with length",
            "none": "no trend of the gap with length shown",
        },
        {"LEVEL": 0.95, "TREND_RESAMPLES": variance.TREND_RESAMPLES},
        declared=_CONFIRM_DECLARED,
        null="none",
        null_count="per-seed slopes",
        reads=variance.TREND_READS,
        marker="- f6c.gap_grows (primary)",
        specs=(CONFIRM,),
    )
)
GAP = register(
    Rule(
        "f6c.gap",
        "6",
        {"above": "above 0", "below": "below 0", "none": "not distinguishable from 0"},
        {"LEVEL": 0.95},
        declared=_CONFIRM_DECLARED,
        null="none",
        reads={"above": "above", "below": "below", "none": "none"},
        marker="- f6c.gap, per length",
        specs=(CONFIRM,),
    )
)  # fmt: skip
#: the outcome naming each searched lr, largest first
_LR_OUTCOME = {1e-4: "high", 3e-5: "low"}


def search_table() -> pd.DataFrame:
    """f6c's finished search cells: length, tokens, lr, objective, seed, late_acc, collapsed, frozen."""
    t = declared(spec(SEARCH), "search")
    if t.empty:
        return t
    t = t.assign(tokens=[tokens(int(L)) for L in t["length"]], lr=pd.to_numeric(t["lr"]))
    for column in ("collapsed", "frozen"):
        t[column] = t[column].fillna(False).astype(bool) if column in t else False
    return t


_SHORTEST, _GSPO = "every arm at the shortest length", "GSPO at every length"


def none_collapsed(k: int, n: int) -> Count:
    """k collapsed runs of n read against "none": "at_most" when none collapsed, "at_least" when all did."""
    return Count(k, n, at_least=5, at_most=0)


def qualifies_outcome(shortest: str, gspo: str) -> str:
    """``f6c.qualifies`` from its two counts' outcomes: *qualifies* when no run collapsed at the shortest length and
    none of GSPO's at any length, else *fails*."""
    return "qualifies" if shortest == gspo == "at_most" else "fails"


combination("f6c.qualifies", ("qualifies", "fails"), (_SHORTEST, _GSPO))(
    lambda o: qualifies_outcome(o[_SHORTEST], o[_GSPO])  # looked up when called: a mutant of it is read
)


def regime_outcome(by_lr: dict[str, str]) -> str:
    """``f6c.regime`` from each searched lr's ``f6c.qualifies`` outcome: the largest that qualifies, else *none*."""
    return next((_LR_OUTCOME[lr] for lr in _LR_OUTCOME if by_lr[_lr_name(lr)] == "qualifies"), "none")


def _lr_name(lr: float) -> str:
    return f"lr {lr:.0e}".replace("e-0", "e-")


combination("f6c.regime", tuple(REGIME.outcomes), tuple(_lr_name(lr) for lr in _LR_OUTCOME))(
    lambda o: regime_outcome(o)  # noqa: PLW0108 - looked up when called: a mutant of it is what is read
)


def qualifies_number(table: pd.DataFrame, lr: float, seeds: int = 2) -> Joint | None:
    """The counts f6c.regime reads at ``lr``: collapsed runs at the shortest length (every arm) and GSPO's at every
    length; None while its cells are unfinished (every arm at every length on ``seeds`` seeds)."""
    at = table[table["lr"] == lr]
    if len(at) < len(ARMS) * len(LENGTHS) * seeds:
        return None
    shortest, gspo = at[at["length"] == at["length"].min()], at[at["objective"] == "gspo"]
    counts = (none_collapsed(int(g["collapsed"].sum()), len(g)) for g in (shortest, gspo))
    return Joint("f6c.qualifies", tuple(zip((_SHORTEST, _GSPO), counts, strict=True)))


def qualifies(table: pd.DataFrame, lr: float, seeds: int = 2) -> bool | None:
    """Whether ``lr`` meets f6c.regime's criterion on ``table``; None while its cells are unfinished."""
    number = qualifies_number(table, lr, seeds)
    return None if number is None else joint_outcome(number) == "qualifies"


def regime_verdict(table: pd.DataFrame, seeds: int = 2, id: str = "f6c.regime"):
    """Rule ``f6c.regime``: the largest qualifying lr (module docstring), statement ``id`` on each searched lr's two
    collapse counts; PENDING until every cell is in."""
    if table.empty:
        return REGIME.verdict(PENDING)
    parts = {lr: qualifies_number(table, lr, seeds) for lr in _LR_OUTCOME}
    if any(v is None for v in parts.values()):
        return REGIME.verdict(PENDING)
    number = Joint("f6c.regime", tuple((_lr_name(lr), part) for lr, part in parts.items()))
    return REGIME.state(id, "at which searched lr does no arm collapse at the shortest length and GSPO at none?",
                        number)  # fmt: skip


def gaps(table: pd.DataFrame, arm: str = "gspo", base: str = "grpo") -> pd.DataFrame:
    """Per seed and length, ``arm`` − ``base`` late held-out accuracy (paired by seed): seed, length, tokens, gap."""
    parts = []
    for L, group in table.groupby("length", sort=True):
        diff = paired_diff(group, arm, base, "late_acc", column="objective")
        parts.append(pd.DataFrame({"seed": diff.index, "length": int(L), "tokens": tokens(int(L)), "gap": diff.values}))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["seed", "length", "tokens", "gap"])


def gap_grows_verdict(table: pd.DataFrame, id: str = ""):
    """Rule ``f6c.gap_grows`` on a :func:`gaps` table (PENDING with fewer than two lengths of two seeds each), read on
    the per-seed slopes' t interval (issue 48, item 5): statement ``id``."""
    counts = table.groupby("length").size() if not table.empty else pd.Series(dtype=int)
    if len(counts) < 2 or (counts < 2).any():
        return GAP_GROWS.verdict(PENDING)
    return variance.trend_statement(table, GAP_GROWS, "tokens", "gap", id, "does GSPO's lead grow with length?")


def gap_verdict(diff: pd.Series, id: str = ""):
    """Rule ``f6c.gap`` on one length's per-seed paired difference (late held-out accuracy, range [−1, 1]): statement
    ``id``, its declared Student-t interval."""
    return signed(GAP, diff, lambda v: declared_t_interval(v, DIFFERENCE), "does GSPO lead GRPO at this length?", id,
                  DIFFERENCE)  # fmt: skip


def section() -> tuple[dict, dict]:
    s = spec(SEARCH)
    table = search_table()
    ctx = {"progress": progress(s, "search"), "rows": [], "regime": regime_verdict(table)}
    if table.empty:
        return ctx, {}
    for (lr, L), group in table.groupby(["lr", "length"], sort=True):
        for arm in ARMS:
            runs = group[group["objective"] == arm]
            if runs.empty:
                continue
            late = ", ".join(num(v) for v in runs.sort_values("seed")["late_acc"])
            counts = [f"{int(runs[c].sum())}/{len(runs)}" for c in ("collapsed", "frozen")]
            ctx["rows"].append([num(lr), f"{int(L)} ({tokens(int(L))})", arm, late, *counts])
    return ctx, {}


def _provisional(verdict, table: pd.DataFrame):
    """``verdict`` marked provisional while fewer than the spec's seeds have every cell."""
    from dataclasses import replace

    seeds, want = table["seed"].nunique(), len(spec(CONFIRM).seeds("confirm"))
    if verdict.outcome == PENDING or seeds >= want:
        return verdict
    return replace(verdict, provisional=f"{seeds} of {want} seeds finished")


def confirm_section() -> tuple[dict, dict]:
    """Section 6c's fresh seeds: per length each arm's late held-out accuracy with collapse and freeze counts, the
    paired GSPO − GRPO gap (``f6c.gap``), and the gap's trend with length (``f6c.gap_grows``; grpo_token_mean −
    GRPO's beside it, the declared secondary)."""
    from gspo_record.fmt import arm_cell, diff_cell

    s = spec(CONFIRM)
    t = declared(s)
    ctx = {"progress": progress(s), "rows": [], "grows": GAP_GROWS.verdict(PENDING), "slope": "—",
           "secondary": GAP_GROWS.verdict(PENDING), "secondary_slope": "—", "grows_declared": "—",
           "secondary_declared": "—"}  # fmt: skip
    if t.empty:
        return ctx, {}
    t = t.assign(tokens=[tokens(int(L)) for L in t["length"]])
    for column in ("collapsed", "frozen"):
        t[column] = t[column].fillna(False).astype(bool)
    for L, group in t.groupby("length", sort=True):
        cells_ = []
        for arm in ARMS:
            runs = group[group["objective"] == arm]
            cells_.append(f"{arm_cell(runs['late_acc'].dropna())}; {int(runs['collapsed'].sum())}/{len(runs)} "
                          f"collapsed, {int(runs['frozen'].sum())}/{len(runs)} frozen")  # fmt: skip
        diff = paired_diff(group, "gspo", "grpo", "late_acc", column="objective")
        length = f"{int(L)} ({tokens(int(L))})"
        ctx["rows"].append([length, *cells_, diff_cell(diff, DIFFERENCE), _provisional(gap_verdict(diff), t).short])
    for key, arm in (("grows", "gspo"), ("secondary", "grpo_token_mean")):
        g = gaps(t, arm)
        ctx[key] = _provisional(gap_grows_verdict(g, f"f6c_confirm.{key}"), t)
        if ctx[key].outcome != PENDING:
            ctx[f"{'slope' if key == 'grows' else 'secondary_slope'}"] = variance.slope_cell(g, "tokens", "gap")
            ctx[f"{key}_declared"] = variance.declared_reading(g, GAP_GROWS, "tokens", "gap")
    return ctx, {"f6c_length": (t[["tokens", "objective", "seed", "late_acc"]], _plot)}


def _plot(data: pd.DataFrame):
    import matplotlib.pyplot as plt

    from gspo_lab.plots import color, label

    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    for i, arm in enumerate(ARMS):
        runs = data[data["objective"] == arm]
        shift = 1 + 0.03 * (i - 1)
        ax.scatter(runs["tokens"] * shift, runs["late_acc"], alpha=0.4, color=color(arm), s=14)
        mean = runs.groupby("tokens")["late_acc"].mean()
        ax.plot(mean.index * shift, mean.values, "o-", color=color(arm), lw=2, label=label(arm))
    ax.set_xscale("log", base=2)
    ticks = sorted(data["tokens"].unique())
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.minorticks_off()
    ax.set(xlabel="response tokens (add_format, 10 L + 2)", ylabel="late held-out accuracy")
    ax.legend(frameon=False, fontsize=8)
    fig.tight_layout()
    return fig
