"""The robustness column (issue 22, item 2): the readings a referee runs first (each seed left out, the secondary
endpoint, the final evaluation alone) reach the stored results where the page reads them, and every verdict they
change is marked fragile."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import gspo_lab.experiments.reading as reading
from gspo_lab.experiments.spec import cells, spec_named
from gspo_lab.experiments.summary import endpoint_v2, endpoints
from gspo_record import robust
from gspo_record.rules import Rule


def _result(acc, rewards, rollouts=80):
    evals = list(range(0, rollouts + 1, 10))[: len(acc)]
    return {
        "config": {"rollouts": rollouts, "eval_prompts": 128, "eval_samples": 2},
        "summary": {"diverged": False},
        "eval": {"rollout": evals, "eval/accuracy_sampled": acc},
        "per_rollout": {"reward/mean:mean": rewards},
    }


def test_endpoint_readings_swap_late_accuracy_and_the_collapse_flag_only():
    r = _result([0.6, 0.5, 0.4, 0.4, 0.45, 0.5, 0.3, 0.35, 0.1], [0.2, 0.4])
    late = endpoints(r)["late_acc"]
    assert late == pytest.approx((0.45 + 0.5 + 0.3 + 0.35 + 0.1) / 5)
    with reading.reading(endpoint="auc"):
        assert endpoints(r)["late_acc"] == pytest.approx(0.3)
        assert endpoints(r)["reward_auc"] == pytest.approx(0.3)
    with reading.reading(endpoint="final"):
        assert endpoints(r)["late_acc"] == pytest.approx(0.1)
    # v2's flag: the last two below 0.5 x 0.6 = 0.3 (0.35 is not), the last alone is
    assert endpoint_v2(r, 0.6)["collapsed"] is False
    with reading.reading(endpoint="final"):
        assert endpoint_v2(r, 0.6)["collapsed"] is True
    with reading.reading(endpoint="auc"):
        assert endpoint_v2(r, 0.6)["collapsed"] is False
    assert endpoints(r)["late_acc"] == pytest.approx(late)  # the reading ends with its block


def test_a_left_out_seed_leaves_every_training_spec_but_not_the_pooled_cold_starts():
    s = spec_named("f10v_dual_cap_ten")
    with reading.track() as seen:
        full = cells(s, "confirm")
    assert seen == {60, 61, 62, 63, 64}
    with reading.reading(drop_seed=62):
        kept = cells(s, "confirm")
        cold = cells(spec_named("p0_cold_start"), "all")
    assert len(kept) == len(full) - 6 and {c.seed for c in kept} == {60, 61, 63, 64}
    assert len(cold) == len(cells(spec_named("p0_cold_start"), "all"))


def test_bad_readings_are_refused_with_their_argument_named():
    with pytest.raises(ValueError, match="endpoint must be one of"):
        with reading.reading(endpoint="median"):
            pass
    with pytest.raises(ValueError, match="drop_seed must be an int"):
        with reading.reading(drop_seed="3"):
            pass


RULE = Rule("test.sign", "0", {"higher": "higher", "none": "no difference"}, {}, declared="test")
#: per seed: (late accuracy, reward AUC, final evaluation); seed 3 carries the "higher" verdict alone
RUNS = {1: (0.02, 0.3, 0.1), 2: (-0.01, 0.3, 0.1), 3: (0.40, 0.3, 0.1), 4: (0.01, 0.3, 0.1)}


def _section(data=RUNS):
    """A section reading the per-seed values as the page does: seeds through the reading, ``late_acc`` swapped."""

    def section():
        seeds = [s for s in data if s != reading.left_out()]
        reading.note_seeds(seeds)
        values = pd.Series([reading.late_value(*data[s]) for s in seeds])
        clear = RULE.verdict("higher" if min(data[s][1] for s in seeds) > 0 else "none")  # AUC > 0 everywhere
        edge = RULE.verdict("higher" if values.mean() > 0.05 else "none")
        with reading.inner():
            RULE.verdict("none")  # a section's own re-reading: not a verdict of the page
        return {"edge": edge, "clear": clear}, {}

    return section


def test_robustness_marks_exactly_the_verdicts_a_reading_changes():
    result = robust.robustness({"s": _section()})
    assert result["seeds"] == {"s": [1, 2, 3, 4]}
    assert [o for _, o, _ in result["base"]["s"]] == ["higher", "higher"]  # the inner re-reading is not counted
    assert result["flips"] == {"s": {1: ["without seed 3: no difference"]}}  # AUC 0.3, final 0.1: both above 0.05
    assert 0 not in result["flips"]["s"]  # the clear verdict holds under every reading
    summary = robust.summary(result)
    assert summary["read"] == 2 and summary["fragile_count"] == 1 and summary["passes"] == 6
    assert summary["rules"] == [["`test.sign`", 2, 1]]


def test_the_final_pass_carries_each_verdicts_flips():
    from gspo_record.reread import verdicts

    result = robust.robustness({"s": _section()})
    _, outputs = verdicts({"s": _section()}, robust.marks(result))
    ctx, _ = outputs["s"]
    assert ctx["edge"].fragile and str(ctx["edge"]).endswith("(fragile)") and "fragile" in ctx["edge"].sure
    assert not ctx["clear"].fragile and str(ctx["clear"]) == "higher"


def test_a_section_that_reads_other_rules_under_a_reading_is_reported_not_re_read():
    other = Rule("test.other", "0", {"x": "x"}, {}, declared="test")

    def section():
        reading.note_seeds([1, 2])
        return {"v": RULE.verdict("higher") if reading.left_out() != 2 else other.verdict("x")}, {}

    result = robust.robustness({"s": section})
    assert result["unread"] == {"s": ["without seed 2: it reads other rules"]}
    assert result["flips"] == {}


def test_fragility_needs_the_left_out_seed_mutant_shows_it(monkeypatch):
    """Mutant: readings without the leave-one-out → the verdict that rests on seed 3 alone is not seen as fragile."""
    data = {s: (late, 0.3, 0.3) for s, (late, _, _) in RUNS.items()}  # the endpoints agree: only seed 3 moves it
    assert robust.robustness({"s": _section(data)})["flips"] != {}
    monkeypatch.setattr(robust, "readings", lambda seeds: [(reading.ENDPOINTS[e], {"endpoint": e}) for e in ("auc",)])
    assert robust.robustness({"s": _section(data)})["flips"] == {}


def test_nan_stays_nan_under_every_reading():
    for e in reading.ENDPOINTS:
        with reading.reading(endpoint=e):
            assert math.isnan(endpoints(_result([], []))["late_acc"])


def test_the_page_pass_must_read_what_the_robustness_pass_read():
    """The marks go by position: a page pass that reads another count of a rule's verdicts stops the build."""
    from gspo_record.reread import page_pass

    result = robust.robustness({"s": _section()})
    _, rows = page_pass({"s": _section()}, marks=robust.marks(result))
    robust.check_pairing(result, rows)
    with pytest.raises(RuntimeError, match="read other verdicts"):
        robust.check_pairing(result, [{**rows[0], "read": rows[0]["read"] + 1}])


def test_memoized_cells_still_follow_the_reading_and_record_the_seeds():
    """Within reading.memo() each spec's cells are built once, yet every call sees the reading's left-out seed and
    is recorded by track(), as without the memo; a Cell's key is computed once."""
    s = spec_named("f10v_dual_cap_ten")
    plain = cells(s, "confirm")
    with reading.memo():
        first = cells(s, "confirm")
        assert [c.key for c in first] == [c.key for c in plain]
        with reading.track() as seen:
            again = cells(s, "confirm")
        assert seen == {60, 61, 62, 63, 64} and again[0] is first[0]  # the same Cell objects, built once
        with reading.reading(drop_seed=61):
            assert {c.seed for c in cells(s, "confirm")} == {60, 62, 63, 64}
        again.pop()  # a caller changing its list does not change the memo
        assert len(cells(s, "confirm")) == len(plain)
    assert "key" in first[0].__dict__  # cached on the Cell


def test_a_memoised_reading_equals_an_unmemoised_one():
    """Within store.cached() the tables a reading computes (reading.remember: declared runs, finding 2's late runs)
    are kept per reading; a section read under a left-out seed after the page's reading filled the memo, and again
    from the memo, gives what it gives without any memo: the same verdicts, the same context, the seeds read."""
    from gspo_lab.experiments.store import cached
    from gspo_record.page import SECTIONS
    from gspo_record.reread import verdicts

    section = {"f2late": SECTIONS["f2late"]}
    with reading.track() as seen:
        _, base_out = verdicts(section)
    seed = sorted(seen)[1]
    with reading.reading(drop_seed=seed), reading.track() as plain_seen:
        plain, plain_out = verdicts(section)
    assert repr(plain_out) != repr(base_out)  # it moves numbers: a memo blind to the reading would be caught
    with cached():
        verdicts(section)
        for _ in range(2):  # computed under the reading, then read back from the memo
            with reading.reading(drop_seed=seed), reading.track() as memo_seen:
                memo, memo_out = verdicts(section)
            assert memo == plain and repr(memo_out) == repr(plain_out) and memo_seen == plain_seen


def test_remember_keys_on_the_reading_copies_and_refuses_tables():
    """reading.remember computes once per reading within reading.memo(), hands out copies, replays the seeds read,
    and refuses a table argument (its repr elides rows, so it is no key)."""
    calls = []

    @reading.remember()
    def table(n: int) -> pd.DataFrame:
        calls.append(reading.left_out())
        reading.note_seeds([1, 2])
        return pd.DataFrame({"x": range(n)})

    table(2), table(2)
    assert calls == [None, None]  # no memo outside memo()
    with reading.memo():
        first = table(2)
        first.loc[0, "x"] = 99  # a caller changing its copy does not change the memo
        with reading.track() as seen:
            assert table(2)["x"].tolist() == [0, 1]
        assert seen == {1, 2}
        with reading.reading(drop_seed=1):
            table(2)
        with pytest.raises(TypeError, match="no tables"):
            table(pd.DataFrame())
    assert calls == [None, None, None, 1]


def _two_by_two_runs(shift: float, seeds=range(60, 67)) -> pd.DataFrame:
    """Arms A-D over ``seeds`` with late accuracy, reward AUC and final evaluation; B, C and D above A by ``shift``
    plus per-seed noise; seed 70 has arm A alone (in the table, in no paired difference)."""
    rng = np.random.default_rng(7)
    rows = [{"arm_id": arm, "seed": seed, **{c: 0.3 + shift * (arm != "A") + rng.normal(0, 0.05) for c in
             ("late_acc", "reward_auc", "eval_final")}} for seed in seeds for arm in "ABCD"]  # fmt: skip
    return pd.DataFrame(rows + [{"arm_id": "A", "seed": 70, "late_acc": 0.3, "reward_auc": 0.3, "eval_final": 0.3}])


@pytest.mark.parametrize("shift", [0.0, 0.04, 0.3])
def test_paired_flips_read_what_reread_flips_reads(shift):
    """Finding 10's leave-one-out readings from the per-seed differences (f10.ten.paired_flips: a seed left out drops
    its entry) give the flips that re-measuring each table without the seed gives (reread_flips), for one difference
    and for the 2×2's four."""
    from gspo_lab.experiments.stats import paired_diff
    from gspo_record.f10.ten import paired_flips, reread_flips, ten_verdict
    from gspo_record.f10.why import effects, late_verdict

    m = _two_by_two_runs(shift)
    for measure, judge in (
        (lambda runs, column: paired_diff(runs, "B", "A", column), late_verdict),
        (effects, ten_verdict),
    ):
        read = lambda runs, column, measure=measure, judge=judge: judge(measure(runs, column))  # noqa: E731
        outcome = judge(measure(m, "late_acc")).outcome
        assert paired_flips(measure, judge, m, outcome) == reread_flips(read, m, outcome)
        every = paired_flips(measure, judge, m, "no such outcome")  # every reading, its label as reread_flips gives it
        assert every == reread_flips(read, m, "no such outcome") and len(every) == 2 + 8


def test_the_re_readings_in_two_processes_are_the_re_readings_in_one(monkeypatch):
    """robust._read_all shares the re-readings among forked processes: the same flips, unread sections and counts as
    reading them one after another."""
    from gspo_lab.experiments.store import cached
    from gspo_record.page import SECTIONS

    sections = {name: SECTIONS[name] for name in ("f2late", "f4", "f7")}
    out = {}
    for n in ("1", "2"):
        monkeypatch.setenv("GSPO_RECORD_WORKERS", n)
        assert robust.workers() == int(n)
        with cached():
            out[n] = robust.robustness(sections)
    assert out["2"] == out["1"]
    assert sum(out["2"]["tried"].values()) > 3, "the sections were re-read"
