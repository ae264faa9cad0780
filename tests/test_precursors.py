"""What comes before a collapse (gspo_lab.precursors), on synthetic curves: the onset, alarms up and down, scoring
with its intervals, the exploratory choice, the frozen rules file."""

from __future__ import annotations

import math

import pytest

from gspo_lab.precursors import LEAD, AlarmRule, alarm, choose, load_frozen, onset, score


def _run(collapse_at: int | None, spike_at: int | None, n: int = 40) -> dict:
    """A per-rollout run: reward 0.5 that falls to 0.05 from ``collapse_at``; a signal 1.0 that jumps to 10 from
    ``spike_at``; a flat signal."""
    reward = [0.5 if collapse_at is None or t < collapse_at else 0.05 for t in range(n)]
    signal = [1.0 if spike_at is None or t < spike_at else 10.0 for t in range(n)]
    return {"reward/mean:mean": reward, "s": signal, "flat": [1.0] * n}


def test_onset():
    assert onset(_run(20, None)["reward/mean:mean"]) == 20
    assert onset(_run(None, None)["reward/mean:mean"]) is None
    recovered = [0.5] * 10 + [0.05] * 10 + [0.5] * 20
    assert onset(recovered) is None  # the reward came back: not a collapse
    assert onset([0.5] * 10 + [0.05] * 3) is None  # too short a tail to call it
    assert onset([0.5, None, 0.5, 0.5, 0.5] + [0.0] * 10) == 5  # a missing rollout is skipped


def test_alarm_up_and_down():
    assert alarm(_run(None, 12)["s"], AlarmRule("s", 3.0)) == 12
    assert alarm(_run(None, 12)["s"], AlarmRule("s", 20.0)) is None
    falling = [1.0] * 10 + [0.1] * 10
    assert alarm(falling, AlarmRule("x", 0.5)) == 10 and alarm(falling, AlarmRule("x", 2.0)) is None
    assert alarm([0.0] * 20, AlarmRule("x", 2.0)) is None  # a zero baseline cannot be scaled
    with pytest.raises(ValueError, match="factor must be"):
        AlarmRule("x", 1.0)


def test_score_counts_lead_and_false_alarms():
    runs = [_run(30, 10), _run(30, 28), _run(None, 15), _run(None, None), _run(None, None)]
    row = score(runs, [AlarmRule("s", 3.0)]).iloc[0]
    assert (row["collapsing"], row["warned"], row["median_lead"]) == (2, 1, 20.0)  # 28 is only 2 ahead of 30
    assert (row["stable"], row["false_alarms"]) == (3, 1)
    assert row["warned_lo"] <= row["warned_rate"] <= row["warned_hi"] and row["false_lo"] <= row["false_rate"]
    assert LEAD == 5
    missing = score([{"reward/mean:mean": [0.5] * 20}], [AlarmRule("s", 3.0)]).iloc[0]
    assert missing["collapsing"] == missing["stable"] == 0 and math.isnan(missing["warned_rate"])


def test_choose_prefers_the_rule_that_separates():
    runs = [_run(30, 12) for _ in range(4)] + [_run(None, None) for _ in range(4)]
    rules = {r.signal: r for r in choose(runs, signals=("s", "flat"), factors=(0.5, 3.0, 20.0))}
    assert rules["s"].factor == 3.0  # warns every collapse 18 rollouts ahead, never fires in a stable run
    assert rules["flat"].factor == 0.5  # nothing separates: the gentler factor of the ties


def test_frozen_rules_load():
    header, rules = load_frozen()
    assert header["version"] == "v1" and header["chosen_on"] and header["held_out"]
    assert set(header["chosen_on"]).isdisjoint(header["held_out"])
    assert all(isinstance(r, AlarmRule) for r in rules)


def test_version_2_is_what_choose_picks_on_version_1s_runs():
    """rules_v2.toml's factors are choose()'s on the chosen_on runs (with the derived ESS), its held-out sets are
    disjoint from them, and its family is the Bonferroni size."""
    from gspo_lab.paths import data_dir
    from gspo_lab.precursors import LEVEL_V2, SIGNALS_V2, with_derived
    from gspo_record.f9.precursors import stored_runs

    header, rules = load_frozen(data_dir() / "precursors" / "rules_v2.toml")
    v1, _ = load_frozen()
    assert header["version"] == "v2" and header["chosen_on"] == v1["chosen_on"]
    assert [r.signal for r in rules] == list(SIGNALS_V2) and header["family"] == len(SIGNALS_V2)
    assert LEVEL_V2 == pytest.approx(0.9875)
    held = header["held_out_later"] + header["held_out_fresh"]
    assert set(header["chosen_on"]).isdisjoint(held) and set(v1["held_out"]).isdisjoint(held)
    runs = [with_derived(r) for r in stored_runs(header["chosen_on"])]
    assert choose(runs, SIGNALS_V2) == rules
    from gspo_record.f9.precursors import LATER, SKILL_V2

    assert header["held_out_later"] == list(LATER) and SKILL_V2.specs == tuple(held)  # one list, written twice


def test_the_derived_ess_is_kish_for_normal_log_ratios():
    """exp(−σ²) is (E w)² / E w² for w = exp(X), X ~ N(μ, σ²); None stays None."""
    import numpy as np

    from gspo_lab.precursors import with_derived

    x = np.random.default_rng(0).normal(0.1, 0.4, 400_000)
    w = np.exp(x)
    kish = w.mean() ** 2 / (w**2).mean()
    run = with_derived({"ratio/tok_log_std:mean": [0.4, None]})
    assert run["ratio/tok_ess:mean"][0] == pytest.approx(kish, rel=5e-3) and run["ratio/tok_ess:mean"][1] is None
    assert "ratio/tok_ess:mean" not in with_derived({"kl/k3:mean": [0.1]})


def test_a_stricter_level_widens_the_interval_and_a_bad_one_is_refused():
    from gspo_lab.precursors import _wilson

    lo95, hi95 = _wilson(3, 10)
    lo, hi = _wilson(3, 10, 0.9875)
    assert lo < lo95 and hi > hi95
    with pytest.raises(ValueError, match="level must lie in"):
        _wilson(3, 10, 95)
