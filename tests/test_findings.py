"""The findings page cannot drift from the data: regenerated from data/results/, it must equal the committed text,
and each figure's input data must hash as recorded. Plus the statistics it is built from."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from gspo_lab.experiments import arm_table, bootstrap_ci, paired_ratio, rate_table, wilson
from gspo_record import page

#: the page is computed once for this module (~3.5 min on 2 cores with its robustness re-readings): the first test
#: that uses it carries that time, past pytest-timeout's 300 s default (under pytest-xdist the module stays on one
#: worker: scripts/test.sh's --dist loadfile)
pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def computed():
    return page.compute()


def test_committed_page_matches_the_stored_results(computed):
    assert page.check(computed) == []


def _smallest_text(fig) -> float:
    from matplotlib.text import Text

    from gspo_record.figures import screen_pt

    fig.canvas.draw()
    return min(screen_pt(fig, t.get_fontsize()) for t in fig.findobj(Text) if t.get_text())


def test_every_figure_reads_at_9_pt_at_the_books_width_and_would_not_without_the_legibility_pass(computed):
    """Issue 48, item 7: legends, labels and tick labels at least 9 pt where the book shows the figure (1040 px of
    article at a 1300 px window); the plot functions alone draw some at 7-8 pt, so the check can fail."""
    import matplotlib.pyplot as plt

    from gspo_record.figures import MIN_PT, legible

    raw = []
    for name, (data, plot) in computed[1].items():
        raw.append((_smallest_text(plot(data)), name))
        assert _smallest_text(legible(plot(data))) >= MIN_PT - 1e-6, name
        plt.close("all")
    assert min(raw)[0] < MIN_PT, "every figure is already legible: the pass checks nothing"


def test_check_sees_a_changed_number_and_a_changed_figure_input(computed):
    import copy

    context, figures = copy.deepcopy(computed)
    context["f1"]["progress"]["done"] -= 1
    assert any("differs" in p for p in page.check((context, figures)))
    context, figures = copy.deepcopy(computed)
    data, plot = figures["f2_map"]
    figures["f2_map"] = (data.assign(k=data["k"] + 1), plot)
    assert page.check((context, figures)) == ["figure f2_map: its input data changed (or it is new / gone)"]


def test_templates_loop_but_never_decide():
    """STYLE 22: the prose's templates may loop, never decide — no if / elif, no inline `x if c else y`."""
    import re

    for path in page.template_files():
        text = path.read_text()
        blocks = re.findall(r"{%-?(.*?)-?%}", text, re.S) + re.findall(r"{{(.*?)}}", text, re.S)
        offenders = [b.strip() for b in blocks if re.search(r"\b(if|elif)\b", b)]
        assert offenders == [], f"{path.name} decides: {offenders}"


def test_every_template_is_used_and_every_section_rendered(computed):
    text = page.render(computed[0])
    assert "{{" not in text and "{%" not in text
    included = "".join((page.HERE / t if "/" in t else page.TEMPLATES / t).read_text() for t in page.PAGES.values())
    used = {"macros.md", *page.PAGES.values()} | set(__import__("re").findall(r'include "(\w+\.md)"', included))
    assert used == {
        p.name if p.parent == page.TEMPLATES else f"{p.parent.name}/{p.name}" for p in page.template_files()
    }
    for out, template in page.PAGES.items():
        text = page.render(computed[0], template)
        assert "{{" not in text and "{%" not in text, out


def test_wilson_and_bootstrap():
    lo, hi = wilson(0, 5)
    assert lo == 0.0 and hi == pytest.approx(0.434, abs=1e-3)  # 0 of 5 still allows a 43 % rate
    lo, hi = wilson(5, 5)
    assert hi == 1.0 and lo == pytest.approx(0.566, abs=1e-3)
    lo, hi = bootstrap_ci([1.0, 2.0, 3.0, 4.0, 5.0])
    assert 1.0 <= lo < 3.0 < hi <= 5.0
    assert all(math.isnan(v) for v in bootstrap_ci([1.0]))


def test_an_arm_at_an_end_of_its_range_on_half_its_seeds_prints_its_count_not_a_mean_interval(monkeypatch):
    """Issue 48, item 5: "0 [0, 0] (n = 5)" says nothing about how sure; the count with its Wilson interval does."""
    import gspo_record.fmt as fmt

    lo, hi = wilson(5, 5)
    assert fmt.arm_cell([0.0] * 5, (0.0, 1.0)) == f"5/5 at 0 [{fmt.num(lo)}, {fmt.num(hi)}]"
    assert fmt.arm_cell([1.0, 1.0, 1.0, 0.9, 0.8], (0.0, 1.0)).startswith("3/5 at 1 [")
    assert fmt.arm_cell([0.0, 0.0, 0.3, 0.4, 0.5], (0.0, 1.0)).endswith("(n = 5)")  # 2 of 5 at 0: a mean interval
    monkeypatch.setattr(fmt, "wilson", lambda k, n: (0.0, 0.0))  # mutant: a count without its interval's width
    assert fmt.arm_cell([0.0] * 5, (0.0, 1.0)) == "5/5 at 0 [0, 0]"


def test_arm_rate_and_paired_tables():
    table = pd.DataFrame({"objective": ["grpo", "gspo"] * 3, "seed": [0, 0, 1, 1, 2, 2],
                          "frac": [0.01, 0.2, 0.02, 0.3, 0.01, 0.1], "collapsed": [1, 0, 1, 0, 0, 0]})  # fmt: skip
    arms = arm_table(table, ["objective"], "frac").set_index("objective")
    assert arms.loc["gspo", "mean"] == pytest.approx(0.2) and arms.loc["grpo", "seeds"] == 3
    rates = rate_table(table, ["objective"]).set_index("objective")
    assert (rates.loc["grpo", "k"], rates.loc["gspo", "k"]) == (2, 0)
    ratio = paired_ratio(table.assign(arm=1), ["arm"], "frac")
    assert ratio["ratio"].tolist() == pytest.approx([20.0, 15.0, 10.0])
    assert paired_ratio(table[table.objective == "grpo"].assign(arm=1), ["arm"], "frac").empty


def test_paired_cells_carry_the_sign_count_and_every_interval_its_declared_range():
    """Stats version 4 (issue 35): one format for a paired comparison, ``mean [lo, hi] (n = k; k/n > 0)``, the
    majority side counted (a zero for neither; both on a tie); every interval on its endpoint's declared range, looked
    up by name, and an endpoint without one refused."""
    from gspo_lab.experiments.endpoint_range import ACCURACY, DIFFERENCE, transformed_t_ci
    from gspo_lab.experiments.stats import interval_method, paired_diff
    from gspo_record.fmt import arm_cell, diff_cell, mean_ci, num, signs, summary

    assert signs([0.1, 0.2, 0.3, 0.05, 0.4]) == "5/5 > 0"
    assert signs([-0.1, 0.0, -0.3, 0.05, -0.4]) == "3/5 < 0"  # the zero counts for neither side
    assert signs([0.1, -0.1, 0.0, 0.2, -0.2]) == "2/5 > 0, 2/5 < 0"
    assert signs([0.0, 0.0]) == "2/2 = 0"
    assert signs([1.2, 1.5, 0.9, 2.0, 1.1], null=1.0) == "4/5 > 1"
    table = pd.DataFrame({"arm_id": ["a", "b"] * 5, "seed": [s for s in range(5) for _ in "ab"],
                          "late_acc": [0.6, 0.1, 0.5, 0.2, 0.7, 0.0, 0.55, 0.3, 0.65, 0.05]})  # fmt: skip
    diff = paired_diff(table, "a", "b", "late_acc")
    assert diff.name == "late_acc"
    lo, hi = transformed_t_ci(diff, DIFFERENCE)
    assert -1 < lo < hi < 1
    assert diff_cell(diff) == f"{num(diff.mean())} [{num(lo)}, {num(hi)}] (n = 5; 5/5 > 0)"
    arm = table[table.arm_id == "b"]["late_acc"]
    lo, hi = transformed_t_ci(arm, ACCURACY)
    assert arm_cell(arm) == f"{num(arm.mean())} [{num(lo)}, {num(hi)}] (n = 5)" and lo > 0  # Student-t: below 0
    ratio = summary(pd.Series([1.2, 1.5, 1.9, 2.0, 1.1]), (0.0, math.inf), null=1.0)
    assert mean_ci(ratio).endswith("(n = 5; 5/5 > 1)") and ratio["ci_low"] > 0
    with pytest.raises(KeyError, match="no declared range"):
        summary(pd.Series([0.1, 0.2], name="undeclared_metric"))
    with pytest.raises(ValueError, match="declared bounds"):
        summary(pd.Series([0.5, 1.5], name="late_acc"))  # an accuracy above 1 is refused
    with interval_method("bootstrap_t"):  # version 3's interval ignores the range
        assert diff_cell(diff) != f"{num(diff.mean())} [{num(lo)}, {num(hi)}] (n = 5; 5/5 > 0)"


def test_readings_whose_specs_declared_student_t_take_the_page_interval_from_version_4():
    """Through version 3 they kept Student-t (the re-reading of version 3 reads them so); from version 4 the page's
    one interval; and every spec the page names as having declared Student-t says so."""
    from gspo_lab.experiments.endpoint_range import DIFFERENCE, transformed_t_ci
    from gspo_lab.experiments.stats import declared_t_interval, interval_method, t_interval
    from gspo_lab.paths import data_dir
    from gspo_record.reread import T_DECLARED_SPECS

    values = [0.10, 0.02, 0.03, 0.01, 0.02]
    assert declared_t_interval(values, DIFFERENCE) == transformed_t_ci(values, DIFFERENCE)
    for old in ("bootstrap_t", "percentile"):
        with interval_method(old):
            assert declared_t_interval(values, DIFFERENCE) == t_interval(values)
    for name in T_DECLARED_SPECS:
        assert "Student-t" in (data_dir() / "specs" / f"{name}.toml").read_text(), name


def test_stored_curves_reads_one_arm_and_names_bad_input():
    from gspo_lab.experiments import stored_curves

    t = stored_curves("f1_clip_fractions", "clip/token_frac:mean", lr=3e-5, minibatches=4)
    assert set(t["objective"]) == {"grpo", "gspo"} and t["seed"].nunique() == 5 and t["rollout"].max() == 29
    per_seed = t.groupby(["objective", "seed"])["value"].mean().unstack("objective")
    assert ((per_seed["gspo"] / per_seed["grpo"]) > 30).all()  # finding 1's stored arm, as the page reports it
    for kw, match in (({"lr": 5e-5}, "lr must be one of"), ({"lrr": 1}, "lrr is not a grid field")):
        with pytest.raises(ValueError, match=match):
            stored_curves("f1_clip_fractions", "clip/token_frac:mean", **kw)
    with pytest.raises(ValueError, match="spec_name must name a spec"):
        stored_curves("f9_nothing", "clip/token_frac:mean")


def test_the_page_wide_robustness_agrees_with_every_declared_re_reading(computed):
    """Where a spec declared its own re-readings (finding 2's and 10's ten-seed readings, finding 11), the section's
    robust / fragile reading must match the page-wide mark on the same statement (gspo_record/robust.py); the page
    prints the statement's mark once, so the two are compared in the build's context, not in the text."""

    def pairs(tree):
        if isinstance(tree, dict):
            verdict = tree.get("verdict", tree.get("paired"))
            if tree.get("sure") in ("robust", "fragile") and hasattr(verdict, "fragile"):
                yield tree["sure"], verdict
            for value in tree.values():
                yield from pairs(value)
        elif isinstance(tree, list | tuple):
            for value in tree:
                yield from pairs(value)

    found = list(pairs(computed[0]))
    assert len(found) >= 20
    assert [v.id for sure, v in found if v.fragile != (sure == "fragile")] == []
    text = "\n".join(page.render(computed[0], template) for template in page.PAGES.values())
    assert "(fragile) [fragile]" not in text and "[robust]" not in text  # "fragile" once per statement
    assert computed[0]["robust"]["fragile_count"] > 0 and computed[0]["robust"]["read"] > 250


def test_the_reversibility_endpoints_read_their_declared_windows():
    """f10z.reversible's endpoints (data/specs/f10z_onset_branch.toml): after = the evaluations at 100-120, pre = at
    10-50, the reward windows [100, 120) and [10, 50), the final evaluation at 120; NaN when a window is incomplete."""
    from gspo_record.f10.revert import endpoints

    ev = {"rollout": list(range(0, 130, 10)), "eval/accuracy_sampled": [0.1 * (i % 7) for i in range(13)]}
    per = {"rollout": list(range(120)), "reward/mean:mean": [r / 100 for r in range(120)]}
    got = endpoints({"eval": ev, "per_rollout": per})
    assert math.isclose(got["late_acc"], (0.3 + 0.4 + 0.5) / 3) and math.isclose(got["eval_final"], 0.5)
    assert math.isclose(got["pre_acc"], (0.1 + 0.2 + 0.3 + 0.4 + 0.5) / 5)
    assert math.isclose(got["reward_auc"], sum(range(100, 120)) / 2000) and math.isclose(got["pre_reward"], 0.295)
    short = endpoints({"eval": {k: v[:11] for k, v in ev.items()}, "per_rollout": per})
    assert math.isnan(short["late_acc"]) and math.isnan(short["eval_final"]) and math.isclose(short["pre_acc"], 0.3)


def test_methods_lists_each_trend_read_on_the_per_seed_slopes_beside_its_declared_reading():
    """Issue 48, item 5: a departure from a declared method prints the declared reading beside the page's, and says
    when the outcome changed."""
    from gspo_record import methods
    from gspo_record.rules import RULES

    ctx: dict = {}
    for i, (rule, section, key, _) in enumerate(methods.TRENDS):
        ctx.setdefault(section, {})[key] = RULES[rule].verdict("none")
        ctx[section][f"{key}_declared"] = "grows" if i == 0 else "none"
    rows = methods.departures(ctx)
    assert [r[-1] for r in rows] == ["**changed**"] + ["same"] * (len(rows) - 1)
    assert rows[0][2] == RULES["f6.grows"].outcomes["grows"] and rows[0][3] == RULES["f6.grows"].outcomes["none"]
