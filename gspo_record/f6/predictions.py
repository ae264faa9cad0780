"""Finding 6's declared predictions, scored (issue 48, item 6): the gradient-noise probes (p6, p6b), the training
gap's trend with length (f6c) and LUSPO's length claim (f6d), each read from the book's statements."""

from __future__ import annotations

from collections.abc import Callable

from gspo_record.prediction import Prediction, parts, result_of
from gspo_record.statements import outcome_of

__all__ = ["PREDICTIONS"]


def _gap_grows(ctx: dict) -> tuple[str, str]:
    """f6c: the GSPO − GRPO late accuracy gap grows with length (rule f6c.gap_grows on the fresh seeds)."""
    s = ctx["book"].summary("f6c_confirm.grows")
    held = s.outcome == "above"
    return result_of(int(held), 1), f"slope per doubling of the response tokens {s.number.brief}: {s.label}{s.mark}"


def _noise(prefix: str, lengths: tuple[str, ...]) -> Callable[[dict], tuple[str, str]]:
    """p6 / p6b: the noise ratio lies above 1 at every unclipped length, and grows with length."""

    def score(ctx: dict) -> tuple[str, str]:
        book = ctx["book"]
        cells = [(length, book.summary(f"{prefix}.above_one.{length}")) for length in lengths]
        above = [length for length, s in cells if s.outcome == "above"]
        shown = ", ".join(f"{length} {s.number.brief}" for length, s in cells)
        grows = book.summary(f"{prefix}.grows")
        return parts(
            [
                (len(above) == len(cells), f"ratio above 1 at {len(above)} of {len(cells)} lengths ({shown})"),
                (grows.outcome == "above", f"slope against log2 length {grows.number.brief}: {grows.label}"),
            ]
        )

    return score


def _luspo_differs(ctx: dict) -> tuple[str, str]:
    """f6d: GSPO's late response length differs from LUSPO's (either side counts)."""
    s = ctx["book"].summary("f6d.luspo")
    held = outcome_of(s.number) in ("above", "below")
    return result_of(int(held), 1), f"GSPO − LUSPO late length (tokens) {s.number.brief}: {s.label}{s.mark}"


_GAP = "the GSPO - GRPO gap grows with length"

PREDICTIONS = (
    Prediction("p6_gradient_noise", "6", "the token-weight argument predicts noise_ratio > 1, growing with L",
               _noise("f6", ("L4", "L8", "L16"))),
    Prediction("p6b_noise_length", "6", "above 1 at every length, and grows with length",
               _noise("f6b", ("L2", "L4", "L7"))),
    Prediction("f6c_length_search", "6", _GAP, _gap_grows),
    Prediction("f6c_length_confirm", "6", _GAP, _gap_grows),
    Prediction("f6d_length_drift", "6", "only that GSPO's late length differs from LUSPO's", _luspo_differs),
)  # fmt: skip
