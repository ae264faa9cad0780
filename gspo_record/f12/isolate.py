"""Finding 12's follow-up section (12c): ``data/specs/f12c_lag_isolate.toml``, declared after f12b and before its runs,
on f12b's seeds 130-139 and read paired by seed with f12b's runs.

(a) GSPO with the proximal π_old and no weight to the behaviour policy (``gspo/proximal``) at lags 0-16: rule
``f12c.isolate`` compares its largest tolerated lag with the sequence-mask arm's (which adds the sequence weight) and
with GSPO on the behaviour policy's (which drops the proximal π_old), on the ladder both were run on (lags ≤ 16).
(b) Lag 32 for the four arms that tolerated every lag up to 16: rule ``f12c.lag32`` (``f12.tolerates``' test, its drop
paired with the arm's f12b lag-0 run), then ``f12.corrections`` and ``f12.gspo_vs_grpo`` re-read on {0, 2, …, 16, 32}.
Rules and the lag machinery: :mod:`.lag`; readings and comparisons: :mod:`.confirm`.
"""

from __future__ import annotations

import pandas as pd

import gspo_record.f12.confirm as confirm
import gspo_record.f12.lag as lag
from gspo_record.f12.lag_page import NAMES, SHORT_ALL, plot_lags
from gspo_record.rules import Rule, register
from gspo_record.tables import progress, spec

__all__ = ["SPEC_ISOLATE", "ISOLATED", "TOP", "TOP_ARMS", "PAIRS", "ISOLATE", "LAG32", "combined", "context", "section"]

SPEC_ISOLATE = "f12c_lag_isolate"
#: (a)'s arm: GSPO, proximal π_old, no sampler correction
ISOLATED = "gspo/proximal"
#: (b)'s lag and the arms run at it (those f12b found tolerating every lag up to 16)
TOP = 32
TOP_ARMS = ("grpo/behaviour", "gspo/behaviour", "grpo/proximal+token_truncate", "gspo/proximal+sequence_mask")
#: f12c.isolate's declared pairs (arm, against)
PAIRS = (("gspo/proximal+sequence_mask", ISOLATED), (ISOLATED, "gspo/behaviour"))
_PAIR_ARMS = tuple(dict.fromkeys(arm for pair in PAIRS for arm in pair))
_DECLARED = "data/specs/f12c_lag_isolate.toml, before its runs"

ISOLATE = register(Rule(
    "f12c.isolate", "12",
    {"up": "moves the boundary up", "down": "moves the boundary down", "none": "no move shown"},
    {"MARGIN": lag.MARGIN}, declared=_DECLARED, null="none", marker="- f12c.isolate, on (a)", specs=(SPEC_ISOLATE,),
    reads=lag.BOUNDARY_READS,
))  # fmt: skip
LAG32 = register(Rule(
    "f12c.lag32", "12", {"tolerates": "tolerates", "degrades": "degrades", "inconclusive": "inconclusive"},
    {"MARGIN": lag.MARGIN, "LEVEL": 0.95}, declared=_DECLARED, null="inconclusive", marker="- f12c.lag32, on (b)",
    specs=(SPEC_ISOLATE,), reads=lag.TOLERATES_READS,
))  # fmt: skip


def combined(after: pd.DataFrame) -> pd.DataFrame:
    """f12b's runs and ``after``, f12c's (``lag_table(SPEC_ISOLATE, "confirm")``; the same seeds, base config and
    endpoint): one table of every arm and lag."""
    before = lag.lag_table(lag.SPEC_CONFIRM, "confirm")
    return pd.concat([before, after], ignore_index=True) if len(after) else before


#: the arms this section reads: its own, the lag-32 ones and every arm of a comparison it prints (CISPO is in none)
_READ = {ISOLATED, *TOP_ARMS, *_PAIR_ARMS, *(arm for _, _, pairs in confirm.GROUPS for pair in pairs for arm in pair)}


def _readings(table: pd.DataFrame, cold: float, note: str) -> dict:
    """The readings (:func:`~.confirm.arm_readings`) of the arms the section reads, ``f12c.lag32`` at :data:`TOP`."""
    arms = [a for a in NAMES if a in _READ and (table["arm"] == a).any()]
    # 12b printed these arms' verdicts at lags up to 16: read again here to extend the ladder, counted once
    return {a: confirm.arm_readings(table, a, cold, note, {TOP: LAG32}, section="f12c",
                                    again=0 if a == ISOLATED else lag.LADDER[-1]) for a in arms}  # fmt: skip


def context(table: pd.DataFrame, cold: float, note: str = "") -> dict:
    """The section's readings on ``table`` (:func:`combined`): the rows it adds to 12b's (the new arm at every lag,
    every arm at :data:`TOP`), each arm's largest tolerated lag, ``f12c.isolate`` on the lags ≤ 16 both arms ran, 12b's
    comparisons re-read on the whole ladder, and each comparison's secondary (``gap_rows``; ``top_rows`` at TOP)."""
    low = table[table["lag"] <= lag.LADDER[-1]]
    readings = _readings(table, cold, note)
    low_readings = {a: confirm.up_to(readings[a], lag.LADDER[-1]) for a in _PAIR_ARMS if a in readings}
    low_texts = {a: confirm._words(r) for a, r in low_readings.items()}
    texts = {a: confirm._words(r) for a, r in readings.items()}
    isolate = confirm._comparisons(low, low_readings, low_texts, note, (("isolate", ISOLATE, PAIRS),),
                                   section="f12c")["isolate"]  # fmt: skip
    older = {a: confirm.up_to(r, lag.LADDER[-1]) for a, r in readings.items()}  # as 12b read them
    reread = confirm._comparisons(table, readings, texts, note, confirm.GROUPS, section="f12c", supersedes="f12b",
                                  older=older)  # fmt: skip
    shown = [v for a, r in readings.items() for key in ("tolerates", "learning") for d, v in r[key].items()
             if (a == ISOLATED or d == TOP) and hasattr(v, "number")]  # fmt: skip
    pairs = reread["corrections"] + reread["gspo_vs_grpo"]
    return {
        "rows": [r for r in confirm._rows(table, readings, cold) if r[0] == NAMES[ISOLATED] or r[1] == TOP],
        "largest": [{"arm": NAMES[a], "short": SHORT_ALL[a], "largest": texts[a], "lag": readings[a]["largest"],
                     "key": a} for a in (ISOLATED, *TOP_ARMS) if a in readings],
        "isolate": isolate, **reread, "statements": shown,
        "gap_rows": [[f"{c['arm']} − {c['against']}", g["lag"], g["gap"], g["clip"]]
                     for c in isolate for g in c["gaps"]],
        "top_rows": [[f"{c['arm']} − {c['against']}", g["lag"], g["gap"], g["clip"]]
                     for c in pairs for g in c["gaps"] if g["lag"] == TOP],
    }  # fmt: skip


def section() -> tuple[dict, dict]:
    s = spec(SPEC_ISOLATE)
    done = progress(s, "confirm")
    mine = lag.lag_table(SPEC_ISOLATE, "confirm")
    seeds = int(mine["seed"].nunique()) if len(mine) else 0
    note = "" if done["done"] >= done["total"] else f"{seeds} of {len(s.seeds('confirm'))} seeds"
    ctx = {"progress": done, "seeds": seeds, "top": TOP, "top_arms": len(TOP_ARMS), "rows": [], "largest": [],
           "isolate": [], "corrections": [], "gspo_vs_grpo": [], "gap_rows": [], "top_rows": [],
           "statements": []}  # fmt: skip
    if not len(mine):
        return ctx, {"f12c_lags": (pd.DataFrame(columns=["arm", "lag", "seed", "late_acc", "failed"]), plot_lags)}
    table = combined(mine)
    ctx.update(context(table, confirm.cold_accuracy(), note))
    shown = table[table["arm"].isin((ISOLATED, *TOP_ARMS))]
    data = shown[["arm", "lag", "seed", "late_acc", "failed"]].reset_index(drop=True)
    return ctx, {"f12c_lags": (data, plot_lags)}
