"""Finding 12's confirmations, their declared predictions scored (issue 48, item 6): f12b_lag_confirm's forecast of
rule f12.ess and f12c_lag_isolate's (a) isolating arm and (b) lag 32, each read from the book's statements and 12c's
table of paired drops.

f12b's other predictions are f12a_lag_search's, restated there "unchanged": they are scored once, under f12a's name
(:mod:`gspo_record.predictions`), on f12b's fresh seeds 130-139 (and 12c's lag 32, where a boundary reaches it)."""

from __future__ import annotations

from gspo_record.f12.lag_page import SHORT_ALL, largest_lags
from gspo_record.prediction import Prediction, brief, cell, parts, result_of

__all__ = ["PREDICTIONS"]

#: f12c's prediction (a): the isolating arm degrades from this lag on, and the mask arm's drop minus its own lies
#: above 0 from it (data/specs/f12c_lag_isolate.toml)
FROM = 4
ISOLATING, MASK = "gspo/proximal", "gspo/proximal+sequence_mask"


def _ess_not_scored(ctx: dict) -> tuple[str, str]:
    """f12b: rule f12.ess reads "not scored" (too few failures)."""
    s = ctx["book"].summary("f12.ess")
    return result_of(int(s.rule_outcome == "not_scored"), 1), f"f12.ess: {s.label}{s.mark}, {s.number}"


def _tolerates(ctx: dict, section: str, arm: str, lag: int):
    return ctx["book"].summary(f"{section}.tolerates.{arm}.{lag}")


def _isolating_degrades(ctx: dict) -> tuple[str, str]:
    """f12c (a): rule f12.tolerates reads "degrades" for GSPO with the proximal π_old and no weight at every lag from
    :data:`FROM`; its largest tolerated lag beside GRPO's uncorrected proximal arm's."""
    lags = sorted(int(i.rsplit(".", 1)[1]) for i in _ids(ctx, f"f12c.tolerates.{ISOLATING}."))
    reads = [(d, _tolerates(ctx, "f12c", ISOLATING, d)) for d in lags if d >= FROM]
    checks = [(s.rule_outcome == "degrades", f"D = {d}: {s.label}{s.mark}") for d, s in reads]
    result, words = parts(checks)
    largest = largest_lags(ctx)
    return result, (f"{SHORT_ALL[ISOLATING]}: {words}; its largest tolerated lag {largest[ISOLATING]}, "
                    f"{SHORT_ALL['grpo/proximal']}'s {largest['grpo/proximal']}")  # fmt: skip


def _ids(ctx: dict, prefix: str) -> list[str]:
    return [s.id for s in ctx["f12c"]["statements"] if s.id.startswith(prefix)]


def _mask_drops_less(ctx: dict) -> tuple[str, str]:
    """f12c (a): the mask arm's drop minus the isolating arm's, per lag from :data:`FROM` (12c's table of paired
    drops), has its interval above 0."""
    pair = next(i for i in ctx["f12c"]["isolate"] if i["verdict"].id == "f12c.mask_vs_proximal")
    label = f"{pair['arm']} − {pair['against']}"
    rows = [(r[1], r[2]) for r in ctx["f12c"]["gap_rows"] if r[0] == label and r[1] >= FROM]
    return parts([(cell(text)[1] > 0, f"D = {d}: {brief(text)}") for d, text in rows])


def _at_top(arms: tuple[str, ...], outcome: str):
    """f12c (b): rule f12c.lag32 reads ``outcome`` for each arm at the ladder's top."""

    def score(ctx: dict) -> tuple[str, str]:
        top = ctx["f12c"]["top"]
        reads = [(a, _tolerates(ctx, "f12c", a, top)) for a in arms]
        return parts([(s.rule_outcome == outcome, f"{SHORT_ALL[a]} at D = {top} {s.number.brief}: {s.label}{s.mark}")
                      for a, s in reads])  # fmt: skip

    return score


PREDICTIONS = (
    Prediction("f12b_lag_confirm", "12", 'f12.ess will likely read "not scored"', _ess_not_scored),
    Prediction("f12c_lag_isolate", "12", "gspo with the proximal pi_old and no weight degrades from lag 4 as grpo's "
               "uncorrected proximal arm did (f12b: 2)", _isolating_degrades),
    Prediction("f12c_lag_isolate", "12", "the mask arm's drop minus the isolating arm's is above 0 from D = 4",
               _mask_drops_less),
    Prediction("f12c_lag_isolate", "12", "gspo (behaviour) and grpo (behaviour) degrade at 32",
               _at_top(("gspo/behaviour", "grpo/behaviour"), "degrades")),
    Prediction("f12c_lag_isolate", "12", "grpo + token_truncate and gspo + sequence_mask still tolerate 32",
               _at_top(("grpo/proximal+token_truncate", MASK), "tolerates")),
)  # fmt: skip
