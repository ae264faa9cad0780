"""Issue 48, item 6, the specs scored last: the rival accounts of finding 10 (SIZE / CONTENT, each its own entry), its
branches, finding 11's collapse regime and corrections, finding 12's confirmations. Each scoring rule reaches its
results on a small synthetic context; no spec that speaks of predictions is left unscored, and one that declares none
says so in its own words."""

from __future__ import annotations

import math
import re
from types import SimpleNamespace

import pytest
import tomllib

import gspo_record.f10.predictions_b as B
import gspo_record.f10.predictions_c as C
import gspo_record.f11.predictions as F11
import gspo_record.f12.predictions as F12
import gspo_record.predictions as P
from gspo_lab.paths import data_dir
from gspo_record.f10.why import SKIP_SHRINK
from gspo_record.kinds import Band
from gspo_record.prediction import brief, cell
from gspo_record.statements import Interval, outcome_of


def _description(spec: str) -> str:
    return re.sub(r"\s+", " ", tomllib.loads((data_dir() / "specs" / f"{spec}.toml").read_text())["description"])


def test_no_spec_that_speaks_of_predictions_is_left_unscored():
    assert P.unscored_specs() == []


@pytest.mark.parametrize("spec", sorted(P.NONE_DECLARED))
def test_a_spec_declared_without_predictions_is_quoted_and_scores_none(spec):
    quoted = re.findall(r'"([^"]+)"', P.NONE_DECLARED[spec])
    assert quoted and all(q in _description(spec) for q in quoted)
    assert spec not in {p.spec for p in P.PREDICTIONS}


def test_rival_accounts_are_scored_as_entries_of_their_own():
    for spec in ("f10_direction_norm", "f10_onset_dual", "f10_shrink_skip", "f10v_dual_cap_ten", "f10y_sgd_two_by_two"):
        quotes = [p.quote for p in P.PREDICTIONS if p.spec == spec]
        assert any(q.startswith("SIZE") for q in quotes) and any(q.startswith("CONTENT") for q in quotes), spec


def test_a_printed_interval_is_read_back_and_reworded():
    assert cell("0.0952 [0.0234, 0.166] (n = 5; 5/5 > 0)") == (0.0952, 0.0234, 0.166)
    assert brief("-0.211 [-0.316, -0.101] (n = 5; 5/5 < 0)") == "-0.211 [-0.316, -0.101], 5 of 5 seeds < 0"
    assert brief("0.5 [0.4, 0.6]") == "0.5 [0.4, 0.6]"
    with pytest.raises(ValueError, match="not a printed interval"):
        cell("—")


# Synthetic statements: what the scorers read of the book's (rule_outcome, label, mark, fragile, number).


def _iv(lo: float, hi: float, n: int = 5) -> Interval:
    return Interval((lo + hi) / 2, lo, hi, n, n if lo > 0 else 0, n if hi < 0 else 0)


def _s(rule_outcome: str = "", number=None, fragile: bool = False, label: str = "words", rule: str = ""):
    return SimpleNamespace(rule_outcome=rule_outcome or outcome_of(number), number=number, label=label, rule=rule,
                           mark=" (fragile)" * fragile, fragile=fragile, flips=("x",) * fragile,
                           short=label + " (fragile)" * fragile)  # fmt: skip


class _book(dict):
    """A build's book as the scorers read it: ``summary(id)`` and ``book[id]``."""

    def summary(self, id: str):
        return self[id]


UP, FLAT = _iv(0.1, 0.3), _iv(-0.1, 0.2)


def _two_by_two(outcome: str) -> SimpleNamespace:
    effects = ("norm (C − A)", "norm (B − D)", "direction (B − C)", "direction (D − A)")
    ups = {"size": (UP, UP, FLAT, FLAT), "content": (FLAT, FLAT, UP, UP), "mixed": (UP, FLAT, FLAT, UP)}[outcome]
    return _s(outcome, SimpleNamespace(parts=tuple(zip(effects, ups, strict=True))))


@pytest.mark.parametrize(("moe", "dense", "size", "content"), [
    ("size", "size", "borne out", "not borne out"), ("size", "mixed", "partly", "not borne out"),
    ("content", "content", "not borne out", "borne out")])  # fmt: skip
def test_each_account_of_the_two_by_two_reads_the_rule_on_each_model(moe, dense, size, content):
    ctx = {"book": _book({"f10.two_by_two.MoE": _two_by_two(moe), "f10.two_by_two.dense": _two_by_two(dense)})}
    assert B._two_by_two("f10.two_by_two", "size")(ctx)[0] == size
    assert B._two_by_two("f10.two_by_two", "content")(ctx)[0] == content
    assert "(C − A " in B._two_by_two("f10.two_by_two", "size")(ctx)[1]  # each effect named with its side


def _onset_ctx(late: tuple[str, ...], moe30: str) -> dict:
    points = [{"clip": c, "late": x} for c, x in zip(B.DOSE, late, strict=True)]
    dose = [{"model": m, "trend": _s("rises"), "points": points} for m in B.MODELS]
    book = {f"f10.dual_cap.{m}.{cap}": _s("none", FLAT) for m in B.MODELS for cap in ("10", "30")}
    book["f10.dual_cap.MoE.30"] = _s(moe30, UP if moe30 == "higher" else FLAT)
    return {"f10": {"dose": dose}, "book": _book(book)}


def test_the_onset_accounts_read_the_dose_and_dual_clip_under_each_cap():
    rising, protects = ("0.1", "0.2", "0.3", "0.4"), "higher"
    assert B._onset("size")(_onset_ctx(rising, "none"))[0] == "borne out"
    assert B._onset("size")(_onset_ctx(("0.4", "0.3", "0.2", "0.1"), protects))[0] == "partly"  # falls; MoE 30 lifts
    assert B._onset("content")(_onset_ctx(("0.4", "0.3", "0.2", "0.1"), "none"))[0] == "not borne out"
    assert B._onset("content")(_onset_ctx(rising, protects))[0] == "partly"


def _shrink_ctx(skip: str, rel: str) -> dict:
    book = {}
    for m in B.MODELS:
        book[f"f10.SKIP−SHRINK.{m}"] = _s(skip, _iv(-0.02, 0.12), rule=SKIP_SHRINK.name)
        book[f"f10.REL-GRPO−A.{m}"] = _s("higher", _iv(0.2, 0.4), rule=B.LATE.name)
        book[f"f10.REL-GSPO−REL-GRPO.{m}"] = _s(rel, _iv(0.01, 0.1))
    return {"book": _book(book)}


def test_skip_vs_shrink_bears_out_one_account_or_the_other():
    size = _shrink_ctx("lower", "none")
    content = _shrink_ctx("higher", "higher")
    assert B._shrink("size")(size)[0] == "borne out" and B._shrink("content")(size)[0] == "not borne out"
    assert B._shrink("content")(content)[0] == "borne out" and B._shrink("size")(content)[0] == "partly"


def _dual_ten(alone_moe: str, dual: str, moe30) -> dict:
    header = ["model", "cap", "collapsed, dual-clip (fresh)", "cap alone (fresh)"]
    rows = [["MoE", "30", dual, alone_moe], ["dense", "30", dual, "0/5"]]
    return {"f10": {"dual_ten": {"header": header, "rows": rows}}, "book": _book({"f10v.dual_cap.MoE.30": moe30})}


def test_the_kits_ten_seed_prediction_counts_collapses_and_reads_the_pooled_verdict():
    assert B._ten_ours(_dual_ten("4/5", "2/5", _s("higher", UP, fragile=True)))[0] == "borne out"
    assert B._ten_ours(_dual_ten("1/5", "5/5", _s("none", FLAT)))[0] == "partly"  # the dense cap alone still holds
    assert "MoE dual-clip + cap 30 collapsed in 5/5" in B._ten_ours(_dual_ten("1/5", "5/5", _s("none", FLAT)))[1]


def _branches(lifts: dict, tight: bool) -> dict:
    book = {}
    for arm in C.ARMS:
        for point, lift in zip(C.POINTS, lifts[arm], strict=True):
            book[f"f10z.branch.{arm}@{point}"] = _s("higher" if lift > 0.1 else "none", _iv(lift - 0.1, lift + 0.1))
            book[f"f10z.paired.{arm}@{point}"] = _s("tighter" if tight else "not",
                                                    Band(0.05 if tight else 0.2, 0.1, math.inf))  # fmt: skip
    return {"book": _book(book)}


def test_the_branch_predictions_read_each_arm_and_point():
    shrinking = _branches({a: (0.4, 0.3, 0.2) for a in C.ARMS}, tight=True)
    growing = _branches({a: (0.05, 0.2, 0.3) for a in C.ARMS}, tight=False)
    assert C._shrinks(shrinking)[0] == "borne out" and C._shrinks(growing)[0] == "not borne out"
    assert C._tighter(shrinking)[0] == "borne out" and C._tighter(growing)[0] == "not borne out"
    assert "0.25, 0.25, 0.25" in C._tighter(shrinking)[1]  # paired sd over the unpaired sd the rule's limit implies
    protect = C._protect(("CAP10",), C.POINTS, "higher")
    assert protect(shrinking)[0] == "borne out" and protect(growing)[0] == "partly"


def _reversal(cap10: tuple, gspo: tuple, trunk: Interval) -> dict:
    book = {f"f10z.reversible.{a}": _s(o, SimpleNamespace(parts=(("lift", lift), ("gap to before", _iv(0.05, 0.3)))))
            for a, (o, lift) in (("CAP10", cap10), ("GSPO", gspo))}  # fmt: skip
    return {"book": _book(book), "f10": {"revert": {"trunk_interval": trunk, "trunk_collapsed": "4/5"}}}


def test_reversal_after_the_onset_reads_both_arms_the_trunks_and_the_lifts():
    ctx = _reversal(("partly", _iv(0.01, 0.2)), ("partly", _iv(0.1, 0.4)), _iv(-0.3, -0.1))
    assert [f(ctx)[0] for f in (C._partly_reversed, C._trunks_stay, C._gspo_lifts_more)] == ["borne out"] * 3
    ctx = _reversal(("partly", _iv(0.1, 0.4)), ("none", _iv(-0.06, 0.04)), _iv(-0.1, 0.12))
    got = [f(ctx)[0] for f in (C._partly_reversed, C._trunks_stay, C._gspo_lifts_more)]
    assert got == ["partly", "not borne out", "not borne out"]
    assert "lift shown above 0 for CAP10" in C._gspo_lifts_more(ctx)[1]


def _f11(counts: dict, positions: dict) -> dict:
    rows = [[m, arm, "acc", f"{k} (words)"] for m in F11.MODELS for arm, k in counts.items()]
    book = {f"f11.position.{a}.{m}": _s(o) for a, o in positions.items() for m in F11.MODELS}
    return {"f11": {"header": ["model", "objective", "late", "collapsed (v2)"], "rows": rows}, "book": _book(book)}


def test_the_collapse_regimes_successors_are_read_by_count_and_position():
    good = _f11(
        {"luspo": "0/5", "gmpo": "0/5", "sapo": "1/5", "vespo": "0/5"}, {"luspo": "gspo_like", "cispo": "between"}
    )
    bad = _f11(
        {"luspo": "4/5", "gmpo": "5/5", "sapo": "5/5", "vespo": "3/5"}, {"luspo": "below_grpo", "cispo": "grpo_like"}
    )
    for score in (F11._luspo_like_gspo, F11._bounded_stable, F11._cispo_between):
        assert (score(good)[0], score(bad)[0]) == ("borne out", "not borne out")
    assert "dense: SAPO 5/5 collapsed" in F11._bounded_stable(bad)[1]


def _f11c(rho: str, share: str, outcome: str) -> dict:
    header = ["model", "objective", "arm", "mean ρ", "masked tokens", "truncated tokens"]
    rows = [[m, o, a, rho, share, "0"] for m in F11.MODELS for o in ("grpo", "gspo") for a in F11.MODES]
    book = {f"f11c.correction.{m}.{o}.{a}": _s(outcome, _iv(-0.01, 0.02)) for m in F11.MODELS
            for o in ("grpo", "gspo") for a in ("SAMPLER", *F11.MODES)}  # fmt: skip
    return {"f11c": {"header": header, "rows": rows}, "book": _book(book)}


def test_the_corrections_read_the_logged_shares_and_the_rule_per_arm():
    quiet, binds = _f11c("1", "0", "none"), _f11c("1", "0.002", "helps")
    assert F11._band_never_binds(quiet)[0] == "borne out" and F11._band_never_binds(binds)[0] == "partly"
    assert F11._binds_rarely(quiet)[0] == "borne out" and F11._binds_rarely(binds)[0] == "not borne out"
    assert F11._band_never_binds(_f11c("1.3", "0.002", "none"))[0] == "not borne out"
    every = F11._no_difference("dense", ("SAMPLER", *F11.MODES))
    assert every(quiet)[0] == "borne out" and every(binds)[0] == "not borne out"
    assert F11._sampler(quiet)[0] == "borne out" and F11._sampler(binds)[0] == "not borne out"


def _f12(ess: str, tolerates: dict, gaps: tuple[str, ...]) -> dict:
    statements = [SimpleNamespace(id=f"f12c.tolerates.{F12.ISOLATING}.{d}") for d in (2, 4, 8, 16)]
    book = {"f12.ess": _s(ess, "0/240 failed")}
    book |= {f"f12c.tolerates.{arm}.{d}": _s(o, _iv(-0.09, -0.01)) for (arm, d), o in tolerates.items()}
    pair = {"arm": "mask", "against": "isolating", "verdict": SimpleNamespace(id="f12c.mask_vs_proximal")}
    gap_rows = [["mask − isolating", d, g, "clip"] for d, g in zip((2, 4, 8, 16), gaps, strict=True)]
    largest = [{"key": F12.ISOLATING, "lag": 8}, {"key": "grpo/proximal", "lag": 2}]
    f12c = {"statements": statements, "isolate": [pair], "gap_rows": gap_rows, "top": 32, "largest": []}
    return {"book": _book(book), "f12b": {"largest": largest}, "f12c": f12c}


def test_the_lag_confirmations_read_the_ess_rule_the_isolating_arm_and_lag_32():
    arms = ("gspo/behaviour", "grpo/behaviour", "grpo/proximal+token_truncate", F12.MASK)
    as_said = _f12("not_scored", {(F12.ISOLATING, d): "degrades" for d in (2, 4, 8, 16)}
                   | {(a, 32): "degrades" if "behaviour" in a else "tolerates" for a in arms},
                   ("0.0 [-0.01, 0.01]", "0.02 [0.01, 0.03]", "0.03 [0.01, 0.05]", "0.09 [0.08, 0.1]"))  # fmt: skip
    other = _f12("not_enough", {(F12.ISOLATING, d): "tolerates" for d in (2, 4, 8, 16)}
                 | {(a, 32): "tolerates" if "behaviour" in a else "degrades" for a in arms},
                 ("0.0 [-0.01, 0.01]", "0.0 [-0.01, 0.01]", "0.0 [-0.01, 0.01]", "0.0 [-0.01, 0.01]"))  # fmt: skip
    scores = [F12._ess_not_scored, F12._isolating_degrades, F12._mask_drops_less,
              F12._at_top(arms[:2], "degrades"), F12._at_top(arms[2:], "tolerates")]  # fmt: skip
    assert [s(as_said)[0] for s in scores] == ["borne out"] * 5
    assert [s(other)[0] for s in scores] == ["not borne out"] * 5
    assert "its largest tolerated lag 8" in F12._isolating_degrades(other)[1]


def test_mutant_a_scorer_that_reads_another_rules_statement_is_refused():
    ctx = _shrink_ctx("lower", "none")
    ctx["book"]["f10.SKIP−SHRINK.MoE"] = _s("lower", _iv(-0.3, -0.1), rule="f10.relative")  # another rule's reading
    with pytest.raises(ValueError, match="read by f10.relative, not f10.skip_shrink"):
        B._shrink("size")(ctx)


def test_methods_says_whether_any_spec_is_left_unscored():
    assert P._unscored_line([]) == "Every spec that declared a prediction has it scored here."
    assert P._unscored_line(["f1_a", "f2_b"]).startswith("Not yet scored: the predictions of `f1_a`, `f2_b`.")
