"""Finding 12's fresh-seed section (12b): every rule declared with the search (``data/specs/f12a_lag_search.toml``)
read on ``f12b_lag_confirm``'s seeds 130-139.

Per arm and lag D > 0: the per-seed drop late(D) − late(0) with its declared interval and sign count, rule
``f12.tolerates`` on it, rule ``f12.learning`` (late(D) against the cold start's accuracy) beside it, and the arm's
largest tolerated lag; then ``f12.corrections`` (three pairs of arms), ``f12.gspo_vs_grpo`` and ``f12.ess``, each
comparison with its secondary, continuous reading: per lag, the paired difference between the two arms' drops.
Rules: :mod:`.lag`; the table's formatting: :mod:`.lag_page`.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace

import pandas as pd

import gspo_lab.experiments.reading as reading
import gspo_record.f12.ess as f12_ess
import gspo_record.f12.lag as lag
from gspo_lab.experiments.stats import declared_t_interval
from gspo_record.f12.lag_page import NAMES, SHORT_ALL, plot_lags
from gspo_record.fmt import num, signs
from gspo_record.tables import progress, spec

__all__ = ["PAIRS", "GROUPS", "PAIR_IDS", "cold_accuracy", "arm_readings", "up_to", "drop_gap", "deciding_lag",
           "drops_statement", "comparison_text", "section"]  # fmt: skip

#: f12.corrections' pairs (arm, against) and f12.gspo_vs_grpo's, as declared
PAIRS = {
    "corrections": (("grpo/proximal+token_truncate", "grpo/behaviour"),
                    ("grpo/proximal+token_truncate", "grpo/proximal"),
                    ("gspo/proximal+sequence_mask", "gspo/behaviour")),
    "gspo_vs_grpo": (("gspo/behaviour", "grpo/behaviour"),),
}  # fmt: skip
_DROP, _GAP = (-1.0, 1.0), (-2.0, 2.0)


def cold_accuracy() -> float:
    """The cold start's sampled accuracy for the confirmation's checkpoint, length, temperature and task (the pooled
    ``p0_cold_start`` cells: :func:`gspo_lab.experiments.read.cold_starts`)."""
    from gspo_lab.experiments.read import cold_start_key, cold_starts
    from gspo_lab.experiments.spec import cells

    cfg = cells(spec(lag.SPEC_CONFIRM), "all")[0].cfg
    return float(cold_starts()[cold_start_key(cfg)]["accuracy"])


def declared_cell(values, bounds, shift: float = 0.0, count: bool = True) -> str:
    """``mean [lo, hi] (n = k; signs)`` with the declared Student-t interval on ``bounds`` (the interval the rules
    read), every number minus ``shift`` (the sign count is of the shifted values; ``count=False`` leaves it out);
    "—" for no seed."""
    values = [float(v) for v in values]
    if not values:
        return "—"
    lo, hi = declared_t_interval(values, bounds) if len(values) > 1 else (float("nan"),) * 2
    mean, n = sum(values) / len(values) - shift, len(values)
    tail = f"; {signs([v - shift for v in values])}" if count else ""
    return f"{num(mean)} [{num(lo - shift)}, {num(hi - shift)}] (n = {n}{tail})"


def arm_readings(table: pd.DataFrame, arm: str, cold: float, note: str = "", rules: dict | None = None,
                 section: str = "f12b", again: int = 0) -> dict:  # fmt: skip
    """One arm's rules per lag D > 0: ``tolerates`` and ``learning`` (lag → Statement ``{section}.tolerates.{arm}.{D}``
    and ``….learning.…``, ``provisional`` = ``note``), the words the table prints (``words``: "tolerates, learning
    nothing shown" where both say so), and ``largest`` (:func:`~.lag.largest_tolerated`). ``rules``: lag → the rule
    read there in place of ``f12.tolerates``. ``again``: the lags up to which these are re-readings of verdicts another
    section printed (12c re-reads 12b's lags to extend the ladder), read within
    :func:`~gspo_lab.experiments.reading.inner` so the robustness pass counts each verdict once."""
    lags = sorted(int(d) for d in table.loc[table["arm"] == arm, "lag"].unique() if d > 0)
    tolerates, learning, words = {}, {}, {}
    for d in lags:
        with reading.inner() if d <= again else contextlib.nullcontext():
            late = table.loc[(table["arm"] == arm) & (table["lag"] == d), "late_acc"].dropna()
            rule = (rules or {}).get(d, lag.TOLERATES)
            tolerates[d] = lag.tolerates_verdict(lag.drops(table, arm, d), rule, f"{section}.tolerates.{arm}.{d}", note)
            learning[d] = lag.learning_verdict(late, cold, f"{section}.learning.{arm}.{d}", note)
        both = tolerates[d].rule_outcome == "tolerates" and learning[d].rule_outcome == "none"
        words[d] = f"{tolerates[d].label}{tolerates[d].mark}" + (f", {learning[d].label}" if both else "")
    return {"tolerates": tolerates, "learning": learning, "words": words, "largest": lag.largest_tolerated(tolerates)}


def _provisional(verdict, note: str):
    return replace(verdict, provisional=note) if note and verdict.outcome != lag.PENDING else verdict


def drop_gap(table: pd.DataFrame, arm: str, against: str, d: int) -> pd.Series:
    """Per seed: ``arm``'s drop at lag ``d`` minus ``against``'s (:func:`~.lag.drops`), over the seeds both have."""
    a, b = lag.drops(table, arm, d), lag.drops(table, against, d)
    common = a.index.intersection(b.index)
    return (a[common] - b[common]).rename("late_acc")


def _lag_text(largest, idle: bool = False, drop_from: int | None = None, brief: bool = False) -> str:
    """An arm's largest tolerated lag in words: "pending", "D = 0 (no lag shown tolerated)", "D = 8", with "; a drop
    inside the margin shown from D = 4" when ``drop_from`` (the smallest tolerated lag whose drop's interval lies below
    0) and "; learning nothing shown" when ``idle`` (a tolerated lag where ``f12.learning`` showed no learning).
    ``brief``: the At a glance row's words ("0 (none shown)", "16 (a drop shown from 4)")."""
    if largest is None:
        return "pending"
    notes = (
        ["none shown" if brief else "no lag shown tolerated"] * (largest == 0)
        + [f"a drop shown from {drop_from}" if brief else f"a drop inside the margin shown from D = {drop_from}"]
        * (drop_from is not None)
        + ["learning nothing shown"] * idle
    )
    return ("" if brief else "D = ") + f"{largest}" + (f" ({'; '.join(notes)})" if notes else "")


def _tolerated(reading: dict) -> list[int]:
    """The lags up to the arm's largest tolerated one (all read "tolerates")."""
    largest = reading["largest"] or 0
    return [d for d in sorted(reading["tolerates"]) if 0 < d <= largest]


def _words(reading: dict, brief: bool = False) -> str:
    """:func:`_lag_text` of one arm's readings (:func:`arm_readings`)."""
    lags = _tolerated(reading)
    idle = any(reading["learning"][d].rule_outcome == "none" for d in lags)
    drops = [d for d in lags if reading["tolerates"][d].outcome == "within_below"]
    return _lag_text(reading["largest"], idle, drops[0] if drops else None, brief)


def up_to(reading: dict, top: int) -> dict:
    """One arm's readings (:func:`arm_readings`) on the lags ≤ ``top`` only: each lag's verdicts stand alone (its drop
    is paired with lag 0), so only the largest tolerated lag is read again."""
    kept = {key: {d: v for d, v in reading[key].items() if d <= top} for key in ("tolerates", "learning", "words")}
    return {**kept, "largest": lag.largest_tolerated(kept["tolerates"])}


#: the boundary rules f12b reads: (context key, rule, its declared pairs)
GROUPS = (("corrections", lag.CORRECTIONS, PAIRS["corrections"]), ("gspo_vs_grpo", lag.GSPO_VS_GRPO,
                                                                     PAIRS["gspo_vs_grpo"]))  # fmt: skip
#: each compared pair's statement name: ``{section}.{name}`` (``f12b.tis_vs_behaviour``), its secondary ``….drops``
PAIR_IDS = {
    ("grpo/proximal+token_truncate", "grpo/behaviour"): "tis_vs_behaviour",
    ("grpo/proximal+token_truncate", "grpo/proximal"): "tis_vs_proximal",
    ("gspo/proximal+sequence_mask", "gspo/behaviour"): "mask_vs_behaviour",
    ("gspo/behaviour", "grpo/behaviour"): "gspo_vs_grpo",
    ("gspo/proximal+sequence_mask", "gspo/proximal"): "mask_vs_proximal",
    ("gspo/proximal", "gspo/behaviour"): "proximal_vs_behaviour",
}


def deciding_lag(mine: int, theirs: int, both: list[int]) -> int:
    """Where a boundary comparison's paired difference is read: the first lag both arms ran past the smaller of
    their largest tolerated lags (where one of them, or both, stopped tolerating), else the largest lag both ran."""
    past = [d for d in both if d > min(mine, theirs)]
    return past[0] if past else max(both)


def drops_statement(table: pd.DataFrame, arm: str, against: str, d: int, id: str, provisional: str = "",
                    supersedes: tuple[str, ...] = ()):  # fmt: skip
    """The paired difference of two arms' drops at lag ``d`` (:func:`drop_gap`, on [−2, 2]) as a statement of its own
    (the secondary beside a boundary statement): the first arm lost less / more accuracy, or no difference shown;
    None below 2 paired seeds. ``supersedes``: an older section's statement of the same difference at the same lag."""
    from gspo_record.statements import Interval, Statement

    gap = [float(v) for v in drop_gap(table, arm, against, d) if v == v]
    if len(gap) < 2:
        return None
    a = SHORT_ALL[arm]
    words = {"above": f"{a} lost less accuracy at lag {d}", "below": f"{a} lost more accuracy at lag {d}",
             "none": f"no difference in the drops at lag {d} shown"}  # fmt: skip
    number = Interval.of(gap, lambda x: declared_t_interval(x, _GAP), bounds=_GAP)
    return Statement(id, f"does one arm lose more accuracy than the other at lag {d}?", number, words,
                     provisional=provisional, supersedes=supersedes)  # fmt: skip


def _older_at(older: dict, arm: str, against: str, both: list[int]) -> int | None:
    """Where the older section (readings ``older``, up to its ladder's top) read ``arm`` − ``against``'s drops."""
    mine, theirs = older[arm]["largest"], older[against]["largest"]
    low = [d for d in both if d <= max(older[arm]["tolerates"], default=0)]
    return deciding_lag(mine, theirs, low) if mine is not None and theirs is not None and low else None


def comparison_text(v) -> str:
    """A boundary statement as the page's bullet prints it: its words in bold with the boundaries it compares, then
    its secondary's words and number; a pending verdict as itself."""
    if not hasattr(v, "number"):
        return f"**{v}**"
    text = f"**{v.label}** ({v.number}){v.mark}"
    return text + (f"; {v.secondary.label}: {v.secondary.number}" if v.secondary is not None else "")


def _comparisons(table: pd.DataFrame, readings: dict, texts: dict[str, str], note: str, groups=GROUPS,
                 section: str = "f12b", supersedes: str = "", older: dict | None = None) -> dict:  # fmt: skip
    """Boundary rules on their declared pairs (``groups``: :data:`GROUPS`), each a statement ``{section}.{pair}``
    (:data:`PAIR_IDS`) with its paired difference of drops at the deciding lag (:func:`deciding_lag`) beside it;
    ``supersedes``: the section whose statements of the same pairs these re-read on more lags (``"f12b"``), and
    ``older`` its readings (each arm's :func:`up_to` its ladder): where the older section read its difference of
    drops at the same lag, the new one supersedes it too (one difference, one statement). ``texts``: each arm's
    :func:`_words`."""
    out = {}
    top = int(table["lag"].max())
    lags = sorted(int(d) for d in table["lag"].unique() if d > 0)
    clip = table[table["lag"] > 0].groupby(["arm", "lag"])["clip"].mean()
    for name, rule, pairs in groups:
        out[name] = []
        for arm, against in pairs:
            mine, theirs = readings[arm]["largest"], readings[against]["largest"]
            both = [d for d in lags if (arm, d) in clip.index and (against, d) in clip.index]  # lags both were run at
            id = f"{section}.{PAIR_IDS[(arm, against)]}"
            at = deciding_lag(mine, theirs, both) if mine is not None and theirs is not None and both else None
            old = f"{supersedes}.{PAIR_IDS[(arm, against)]}"
            same = older is not None and at == _older_at(older, arm, against, both)  # the older read it there too
            secondary = (drops_statement(table, arm, against, at, f"{id}.drops", note, (f"{old}.drops",) * same)
                         if at is not None else None)  # fmt: skip
            older_ids = (old,) if supersedes else ()
            verdict = lag.boundary_verdict(rule, mine, theirs, top, id=id, provisional=note, secondary=secondary,
                                           supersedes=older_ids)  # fmt: skip
            out[name].append({
                "arm": NAMES[arm], "against": NAMES[against], "short": SHORT_ALL[arm],
                "short_against": SHORT_ALL[against], "largest": texts[arm],
                "largest_against": texts[against], "verdict": verdict, "text": comparison_text(verdict), "at": at,
                "top": max(both, default=top),  # the largest lag both ran, where the secondary is printed
                "top_gap": declared_cell(drop_gap(table, arm, against, max(both)), _GAP) if both else "—",
                "gaps": [{"lag": d, "gap": declared_cell(drop_gap(table, arm, against, d), _GAP),
                          "clip": f"{num(clip.get((arm, d)))} vs {num(clip.get((against, d)))}"} for d in both],
            })  # fmt: skip
    return out


def _rows(table: pd.DataFrame, readings: dict, cold: float) -> list[list]:
    out = []
    for arm in [a for a in NAMES if a in readings]:
        for d, g in table[table["arm"] == arm].sort_values("lag").groupby("lag"):
            counts = [f"{int(g[c].sum())}/{len(g)}" for c in ("collapsed", "frozen")]
            late = g["late_acc"].dropna()
            learned = readings[arm]["learning"].get(d)
            above = declared_cell(late, (0.0, 1.0), shift=cold) + (f": {learned.label}{learned.mark}" if d else "")
            drop = declared_cell(lag.drops(table, arm, d), _DROP) if d > 0 else "—"
            words = readings[arm]["words"].get(d, "—")
            out.append([NAMES[arm], int(d), *counts, declared_cell(late, (0.0, 1.0), count=False), drop, words, above,
                        num(float(g["clip"].mean())), num(float(g["stale_kl"].mean())) if d > 0 else "—"])  # fmt: skip
    return out


def section() -> tuple[dict, dict]:
    s = spec(lag.SPEC_CONFIRM)
    table = lag.lag_table(lag.SPEC_CONFIRM, "confirm")
    done = progress(s, "confirm")
    seeds = int(table["seed"].nunique()) if len(table) else 0
    note = "" if done["done"] >= done["total"] else f"{seeds} of {len(s.seeds('confirm'))} seeds"
    cold = cold_accuracy()
    readings = {arm: arm_readings(table, arm, cold, note) for arm in lag.ARMS.values() if (table["arm"] == arm).any()}
    stale_runs = table[table["lag"] > 0]
    ess = _provisional(f12_ess.ess_verdict(stale_runs), note) if len(table) else lag.ESS.verdict(lag.PENDING)
    failed = int(table.loc[table["lag"] > 0, "failed"].sum()) if len(table) else 0
    texts = {a: _words(r) for a, r in readings.items()}
    largest = [{"arm": NAMES[a], "short": SHORT_ALL[a], "largest": texts[a], "brief": _words(r, brief=True),
                "lag": r["largest"], "key": a} for a, r in readings.items()]  # fmt: skip
    compared = _comparisons(table, readings, texts, note) if readings else {"corrections": [], "gspo_vs_grpo": []}
    shown = [
        v
        for r in readings.values()
        for key in ("tolerates", "learning")
        for v in r[key].values()
        if hasattr(v, "number")
    ]  # the statements its table prints
    ctx = {"progress": done, "seeds": seeds, "cold": num(cold), "rows": _rows(table, readings, cold),
           "statements": shown,
           "largest": largest, **compared, "ess": ess, "failed": failed,
           "stale_runs": int((table["lag"] > 0).sum()) if len(table) else 0}  # fmt: skip
    stale = table[table["lag"] > 0] if len(table) else table
    ess_min = stale.groupby("lag")["ess_min"] if len(stale) else None
    ctx["ess_by_lag"] = [{"lag": int(d), "median": num(float(g.median())), "n": int(g.notna().sum())}
                         for d, g in ess_min] if ess_min is not None else []  # fmt: skip
    ctx["gap_rows"] = [[f"{c['arm']} − {c['against']}", g["lag"], g["gap"], g["clip"]]
                       for c in ctx["corrections"] + ctx["gspo_vs_grpo"] for g in c["gaps"]]  # fmt: skip
    columns = ["arm", "lag", "seed", "late_acc", "failed"]
    data = table[columns].reset_index(drop=True) if len(table) else pd.DataFrame(columns=columns)
    return ctx, {"f12b_lags": (data, plot_lags)}
