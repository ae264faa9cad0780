"""The two failure modes (gspo_lab/experiments/failure.py): frozen vs collapsed with their onsets, on synthetic
per-rollout series reaching every case, and on stored f11 runs; the kept-gradient share's read."""

from __future__ import annotations

import pandas as pd
import pytest

from gspo_lab.experiments.failure import (
    FROZEN_MIN_TAIL,
    FROZEN_SERIES,
    collapse_onset,
    frozen_onset,
    kept_grad_share,
)
from gspo_lab.experiments.store import load_result, results_root
from gspo_lab.experiments.summary import endpoint_v2, is_read

LIVE, DEAD = (0.25, 0.5, 3.0), (0.0, 1.0, 0.0)  # (reward mean, zero-std share, largest gradient norm) of a rollout


def _rows(states) -> dict:
    """A per_rollout dict from per-rollout (reward, zero_std, grad_max) triples."""
    reward, zero_std, grad = zip(*states, strict=True) if states else ((), (), ())
    return {
        "rollout": list(range(len(states))),
        "reward/mean:mean": list(reward),
        "adv/zero_std_frac:mean": list(zero_std),
        "grad/norm:max": list(grad),
    }


def test_the_series_read_are_kept_by_the_thinning():
    assert all(is_read(k) for k in FROZEN_SERIES)


def test_frozen_from_a_rollout_to_the_end():
    assert frozen_onset(_rows([LIVE] * 3 + [DEAD] * 7)) == (True, 3)
    assert frozen_onset(_rows([DEAD] * 10)) == (True, 0)
    rows = _rows([LIVE] * 3 + [DEAD] * 7)
    rows["rollout"] = [r + 40 for r in rows["rollout"]]  # a branch's rollouts: the onset is a rollout, not an index
    assert frozen_onset(rows) == (True, 43)


def test_never_frozen():
    assert frozen_onset(_rows([LIVE] * 10)) == (False, None)
    assert frozen_onset(_rows([])) == (False, None)


def test_all_ones_is_success_not_frozen():
    assert frozen_onset(_rows([LIVE] * 2 + [(1.0, 1.0, 0.0)] * 8)) == (False, None)
    # zero spread and gradient with some groups all right, some all wrong: the policy still solves prompts
    assert frozen_onset(_rows([LIVE] * 2 + [(0.5, 1.0, 0.0)] * 8)) == (False, None)


def test_a_zero_stretch_that_recovers_is_not_frozen():
    assert frozen_onset(_rows([LIVE] + [DEAD] * 7 + [(1 / 128, 0.9375, 2.0)] + [LIVE])) == (False, None)
    # frozen again after the recovery: the onset is the last stretch's
    assert frozen_onset(_rows([DEAD] * 7 + [(1 / 128, 0.9375, 2.0)] + [DEAD] * 6)) == (True, 8)


def test_a_nonzero_gradient_or_a_missing_value_is_not_frozen():
    # zero spread at reward 0 but a gradient (a KL penalty, per-token advantages): the state is not absorbing
    assert frozen_onset(_rows([LIVE] + [(0.0, 1.0, 0.01)] * 9)) == (False, None)
    rows = _rows([LIVE] + [DEAD] * 9)
    rows["grad/norm:max"][-1] = None  # non-finite (a diverged run)
    assert frozen_onset(rows) == (False, None)


def test_too_short_a_tail():
    short = FROZEN_MIN_TAIL - 1
    assert frozen_onset(_rows([LIVE] * 5 + [DEAD] * short)) == (False, None)
    assert frozen_onset(_rows([LIVE] * 5 + [DEAD] * FROZEN_MIN_TAIL)) == (True, 5)
    assert frozen_onset(_rows([LIVE] * 5 + [DEAD] * short), min_tail=short) == (True, 5)


def test_bad_input_names_the_argument():
    rows = _rows([DEAD] * 6)
    del rows["grad/norm:max"]
    with pytest.raises(ValueError, match=r"per_rollout lacks the series \['grad/norm:max'\]"):
        frozen_onset(rows)
    rows = _rows([DEAD] * 6)
    rows["reward/mean:mean"].append(0.0)
    with pytest.raises(ValueError, match="per_rollout's series must have one length"):
        frozen_onset(rows)
    with pytest.raises(ValueError, match="per_rollout must be"):
        frozen_onset([0.0] * 6)
    with pytest.raises(ValueError, match="min_tail must be an int >= 1"):
        frozen_onset(_rows([DEAD] * 6), min_tail=0)


def test_collapse_onset():
    rollouts = [0, 10, 20, 30, 40]
    assert collapse_onset([0.4, 0.3, 0.1, 0.1, 0.1], rollouts, 0.2) == 20
    assert collapse_onset([0.4, 0.1, 0.3, 0.1, 0.1], rollouts, 0.2) == 30  # a dip that recovered is not the onset
    assert collapse_onset([0.4, 0.1, 0.1, 0.1, 0.3], rollouts, 0.2) is None
    assert collapse_onset([0.4, 0.3, 0.3, 0.3, 0.2], rollouts, 0.2) is None  # on the threshold is not below it
    with pytest.raises(ValueError, match="accuracy and rollouts must have one length"):
        collapse_onset([0.4, 0.1], rollouts, 0.2)
    with pytest.raises(ValueError, match="threshold must be a finite number"):
        collapse_onset([0.4], [0], float("nan"))


def _stored(acc, states, diverged=False) -> dict:
    every = 80 // (len(acc) - 1)
    return {
        "key": "k",
        "config": {"rollouts": 80, "eval_prompts": 128, "eval_samples": 2},
        "summary": {"diverged": diverged},
        "eval": {"rollout": [i * every for i in range(len(acc))], "eval/accuracy_sampled": acc},
        "per_rollout": _rows(states),
    }


def test_endpoint_v2_adds_the_onsets_and_changes_nothing_else():
    states = [LIVE] * 30 + [DEAD] * 50
    out = endpoint_v2(_stored([0.4, 0.3, 0.3, 0.1, 0.1, 0.0, 0.0, 0.0, 0.0], states), 0.4)
    assert (out["collapsed"], out["collapse_onset"], out["frozen"], out["frozen_onset"]) == (True, 30, True, 30)
    live = endpoint_v2(_stored([0.4, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3], [LIVE] * 80), 0.4)
    assert (live["collapsed"], live["collapse_onset"], live["frozen"], live["frozen_onset"]) == (
        False,
        None,
    ) * 2
    without = _stored([0.4, 0.1, 0.1], states)
    without["per_rollout"] = {"reward/mean:mean": [0.0] * 80}  # a synthetic result without the series
    assert (endpoint_v2(without, 0.4)["frozen"], endpoint_v2(without, 0.4)["frozen_onset"]) == (None, None)
    old = {k: v for k, v in endpoint_v2(without, 0.4).items() if k not in ("collapse_onset", "frozen", "frozen_onset")}
    assert old["collapsed"] and set(old) == {
        "late_acc", "reward_auc", "collapsed", "threshold", "last_two", "samples",
        *(f"{m}_{w}" for m in ("truncated", "length", "zero_std") for w in ("early", "late")),
    }  # fmt: skip


def test_kept_grad_share():
    rows = {"drift/outside_grpo_band_frac:mean": [0.0, 0.1, 0.2, None], "drift/outside_grpo_band_grad_frac:mean":
            [0.0, 0.05, 0.2, None]}  # fmt: skip
    assert kept_grad_share(rows) == [None, pytest.approx(0.5), pytest.approx(1.0), None]  # 0/0 -> None, not NaN
    with pytest.raises(ValueError, match="per_rollout lacks the series"):
        kept_grad_share(_rows([DEAD]))  # a result logged before issue 37


def _stored_run(spec: str, objective: str, seed: int) -> dict:
    table = pd.read_csv(results_root() / f"{spec}.csv")
    (key,) = table[(table["objective"] == objective) & (table["seed"] == seed)]["key"]
    (path,) = (results_root() / spec).glob(f"{key}.json*")
    return load_result(path)


@pytest.mark.parametrize(
    ("spec", "objective", "seed", "onset"),
    [
        ("f11d_production_confirm", "cispo", 15, 8),
        ("f11d_production_confirm", "sapo", 19, 2),
        ("f11b_successors_production", "cispo", 10, 13),  # 0 at rollouts 4-11, 2/128 at 12, then 0 to the end
    ],
)
def test_stored_successor_runs_at_accuracy_zero_are_frozen(spec, objective, seed, onset):
    result = _stored_run(spec, objective, seed)
    assert result["eval"]["eval/accuracy_sampled"][-1] == 0.0
    assert frozen_onset(result["per_rollout"]) == (True, onset)


def test_stored_gspo_and_a_lucky_sample_are_not_frozen():
    assert frozen_onset(_stored_run("f11d_production_confirm", "gspo", 17)["per_rollout"]) == (False, None)
    # at accuracy 0 at its end, but one success of 128 at rollout 78 after 72 frozen rollouts: not frozen to the end
    sapo = _stored_run("f11b_successors_production", "sapo", 10)
    assert sapo["eval"]["eval/accuracy_sampled"][-1] == 0.0
    assert frozen_onset(sapo["per_rollout"]) == (False, None)
