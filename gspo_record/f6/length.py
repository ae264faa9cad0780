"""Finding 6b: gradient noise against response length to >= 64 tokens (issue 37 part B) — probe ``p6b_noise_length``.

``data/specs/p6b_noise_length.toml``, declared before its runs: finding 6's probe on ``add_format`` at L = 2, 4, 7
digits (correct responses 22, 42, 72 tokens with <eos>), each length with its own cold start fine-tuned to the same
sampled accuracy (fixed difficulty). The rules are finding 6's, declared here before the runs:

``f6b.above_one`` (:func:`variance.above_one_verdict`), per length: the noise ratio's 95 % interval over seeds lies
above 1 / below 1 / includes 1.

``f6b.grows`` (:func:`variance.grows_verdict` with ``x = "tokens"``): the least-squares slope of the ratio against
log2(response tokens), tokens := 10 L + 2, with a 95 % bootstrap interval (seeds resampled within each length); above 0:
*grows with length*, below: *shrinks*, else *no trend shown*; the per-seed slopes' sign count beside it.
"""

from __future__ import annotations

import pandas as pd

from gspo_lab.experiments.store import finished
from gspo_record.f6.variance import (
    ABOVE_READS,
    TREND_READS,
    _plot_noise,
    _rows,
    above_one_verdict,
    declared_reading,
    grows_verdict,
    slope_cell,  # fmt: skip
)
from gspo_record.fmt import mean_ci, num, summary
from gspo_record.rules import PENDING, Rule, register
from gspo_record.tables import progress, spec

__all__ = ["ABOVE_ONE_B", "GROWS_B", "SPEC", "tokens", "section"]

SPEC = "p6b_noise_length"
#: the digits L of the length study (its cold starts are sweep-addfmt-L{L})
LENGTHS = (2, 4, 7)
_DECLARED = "data/specs/p6b_noise_length.toml, before its runs"

ABOVE_ONE_B = register(
    Rule(
        "f6b.above_one",
        "6",
        {"above": "above 1", "below": "below 1", "inside": "not distinguishable from 1"},
        {"LEVEL": 0.95},
        null="inside",
        reads=ABOVE_READS,
        declared=_DECLARED,
        marker="- f6b.above_one, per length",
        specs=(SPEC,),
    )
)
GROWS_B = register(
    Rule(
        "f6b.grows",
        "6",
        {"grows": "grows with length", "shrinks": "shrinks with length", "none": "no trend with length shown"},
        {"LEVEL": 0.95, "TREND_RESAMPLES": 10_000},
        declared=_DECLARED,
        null="none",
        null_count="per-seed slopes",
        reads=TREND_READS,
        marker="- f6b.grows: the least-squares slope",
        specs=(SPEC,),
    )
)


def tokens(length: int) -> int:
    """A correct add_format response's tokens at L digits without a final carry, <eos> included: L columns of 8,
    L − 1 separators, ``|``, L answer digits, <eos> (the spec's x axis)."""
    return 10 * length + 2


def cold_accuracies() -> str:
    """The add_format cold starts' pooled sampled accuracy at their own lengths (spec p0b_cold_start_add), in L's
    order, or "pending"."""
    from gspo_lab.experiments.read import cold_starts

    pooled = cold_starts()
    at = [pooled.get((f"sweep-addfmt-L{L}", L, 1.0, "add_format")) for L in LENGTHS]
    if any(a is None for a in at):
        return "pending"
    return ", ".join(f"{num(a['accuracy'])} at {tokens(L)} tokens" for a, L in zip(at, LENGTHS, strict=True)) + (
        f" ({at[0]['samples']:,} samples each)"
    )


def section() -> tuple[dict, dict]:
    s = spec(SPEC)
    table = finished(s, "confirm")
    ctx = {"progress": progress(s), "rows": [], "per_length": [], "grows": GROWS_B.verdict(PENDING), "slope": "—",
           "grows_declared": "—",
           "clipped": ABOVE_ONE_B.verdict(PENDING), "clipped_ratio": "—", "cold": cold_accuracies()}  # fmt: skip
    if table.empty:
        return ctx, {}
    table = table.assign(tokens=[tokens(int(L)) for L in table["length"]])
    unclipped, clipped = table[~table["clipped"].astype(bool)], table[table["clipped"].astype(bool)]
    ctx["rows"] = _rows(table)
    ctx["per_length"] = [
        {"L": int(L), "tokens": tokens(int(L)), "ratio": mean_ci(summary(g["noise_ratio_kK"], null=1.0)),
         "verdict": above_one_verdict(g["noise_ratio_kK"], ABOVE_ONE_B, f"f6b.above_one.L{int(L)}")}
        for L, g in unclipped.groupby("length")
    ]  # fmt: skip
    if unclipped["length"].nunique() >= 2:
        ctx["grows"], ctx["slope"] = (
            grows_verdict(unclipped, GROWS_B, "tokens", "f6b.grows"),
            slope_cell(unclipped, "tokens"),
        )
        ctx["grows_declared"] = declared_reading(unclipped, GROWS_B, "tokens")
    if not clipped.empty:
        ctx["clipped_ratio"] = mean_ci(summary(clipped["noise_ratio_kK"], null=1.0))
        ctx["clipped"] = above_one_verdict(clipped["noise_ratio_kK"], ABOVE_ONE_B, "f6b.above_one.clipped")
    return ctx, {"f6b_noise_length": (table[["tokens", "clipped", "seed", "noise_ratio_kK"]], _plot)}


def _plot(data: pd.DataFrame):
    return _plot_noise(data, "tokens", "response tokens (add_format, 10 L + 2)")
