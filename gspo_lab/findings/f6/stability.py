"""Finding 6c: does GRPO's trouble grow with response length at fixed difficulty? (issue 37 part B, item 2).

``data/specs/f6c_length_search.toml``, declared before its runs: GRPO, GSPO and grpo_token_mean (TRL's default
"dapo" loss) on ``add_format`` at L = 2, 4, 7 digits (22, 42, 72 response tokens), each length from its own cold
start of the same sampled accuracy; lr {3e-5, 1e-4} on search seeds 0-1. The rule reading it:

``f6c.regime`` (:func:`regime_verdict`): the chosen lr is the largest at which, on every search seed, no arm collapses
(endpoint v2) at the shortest length and GSPO collapses at no length; *none qualifies* when neither does (then the
smallest lr is run and the page says so).
"""

from __future__ import annotations

import pandas as pd

from gspo_lab.findings.f6.length import tokens
from gspo_lab.findings.fmt import num
from gspo_lab.findings.rules import PENDING, Rule, register
from gspo_lab.findings.tables import declared, progress, spec

__all__ = ["REGIME", "SEARCH", "ARMS", "regime_verdict", "search_table", "section"]

SEARCH = "f6c_length_search"
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


def qualifies(table: pd.DataFrame, lr: float, seeds: int = 2) -> bool | None:
    """Whether ``lr`` meets f6c.regime's criterion on ``table``; None while its cells are unfinished (every arm at
    every length on ``seeds`` seeds)."""
    at = table[table["lr"] == lr]
    if len(at) < len(ARMS) * 3 * seeds:
        return None
    shortest = at[at["length"] == at["length"].min()]
    return not shortest["collapsed"].any() and not at[at["objective"] == "gspo"]["collapsed"].any()


def regime_verdict(table: pd.DataFrame, seeds: int = 2):
    """Rule ``f6c.regime``: the largest qualifying lr (module docstring); PENDING until every cell is in."""
    if table.empty:
        return REGIME.verdict(PENDING)
    verdicts = {lr: qualifies(table, lr, seeds) for lr in _LR_OUTCOME}
    if any(v is None for v in verdicts.values()):
        return REGIME.verdict(PENDING)
    return REGIME.verdict(next((_LR_OUTCOME[lr] for lr, ok in verdicts.items() if ok), "none"))


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
            ctx["rows"].append([num(lr), f"{int(L)} ({tokens(int(L))})", arm, late,
                                f"{int(runs['collapsed'].sum())}/{len(runs)}", f"{int(runs['frozen'].sum())}/{len(runs)}"])  # fmt: skip
    return ctx, {}
