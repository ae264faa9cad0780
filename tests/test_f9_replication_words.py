"""Finding 9's replication clause is written in plain sentences from each statement's Rates (no nested brackets)."""

import gspo_record.kinds as kinds
from gspo_record.f9.precursors import _rates_words


def test_rates_words_full_and_short():
    overlap = kinds.Rates(3, 21, 0.05, 0.35, 5, 129, 0.017, 0.088, names=("warned ahead", "false alarms"))
    apart = kinds.Rates(8, 31, 0.137, 0.432, 1, 79, 0.002, 0.068, names=("warned ahead", "false alarms"))
    assert _rates_words(overlap, True) == (
        "it warned ahead in 3 of 21 collapsing runs against false alarms in 5 of 129 stable ones, intervals overlapping"
    )
    assert _rates_words(apart, False) == "8 of 31 against 1 of 79, intervals apart"
    assert "[" not in _rates_words(overlap, True) + _rates_words(apart, False)
