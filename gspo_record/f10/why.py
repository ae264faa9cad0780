"""Finding 10 — why GRPO collapses and a grad-norm cap saves it, while GSPO needs none (issue 17): interventions that
separate an update's size from its content, each declared with its predictions before its runs.

Specs (``data/specs/f10_*.toml``, committed before their runs; the predictions of a *size* and a *content* account
under AdamW are written in them):

* ``f10_direction_norm`` — the 2×2: GRPO and GSPO, each direction at the other's norm (seeds 30-34).
* ``f10_shrink_skip`` — a cap of 10 vs skipping updates above 10 vs a relative cap at 3× the recent median, for both
  objectives (seeds 30-34, paired with the 2×2's plain arms).
* ``f10_onset_dual`` — GRPO at caps 15 and 20; dual-clip under caps 30 and 10 (seeds 10-14, paired with finding 2's
  stored arms).
* ``f10c_relative_confirm`` — GSPO with and without the relative cap, GRPO with it, on fresh seeds 70-74: a check of
  ``f10_shrink_skip``'s leads, written after its results and before its own runs.

Rules, each declared in its spec before the runs (the marker is the spec's sentence):

* ``f10.late`` (:func:`late_verdict`): one arm minus another, late held-out accuracy paired by seed: *higher* /
  *lower* when the 95 % bootstrap interval excludes 0, else *no difference shown*.
* ``f10.two_by_two`` (:func:`two_by_two_verdict`): from the signs of the two norm effects and the two direction
  effects (each by ``f10.late``): *size* / *content* / *both* / *neither* / *mixed*.
* ``f10.skip_shrink`` (:func:`skip_shrink_verdict`): SKIP − SHRINK.
* ``f10.relative`` (:func:`relative_verdict`): REL-GSPO − REL-GRPO.
* ``f10.dual_cap`` (:func:`dual_cap_verdict`): dual-clip under a cap minus the cap alone.
* ``f10c.rel_gspo`` (:func:`rel_gspo_verdict`): REL-GSPO − GSPO on the fresh seeds: *confirmed* when its interval
  lies above 0 (the lift seen post hoc on seeds 30-34).
* the onset: ``collapse.class`` at caps 15 and 20, and the dose by ``f2e.dose_trend`` over every cap.

One rule written after the results, labelled post hoc on the page:

* ``f10.account`` (:func:`account_verdict`): per model, which account the three verdicts above carry together — the
  size account when the 2×2 shows norm effects; the content account when it shows direction effects, skipping the
  large updates beats shrinking them, or GSPO keeps its lead under equal relative caps.
"""

from __future__ import annotations

import pandas as pd

import gspo_record.f10.two_by_two as two_by_two
from gspo_lab.experiments.endpoint_range import DIFFERENCE
from gspo_lab.experiments.stats import declared_t_sign, interval_sign, paired_diff, seed_interval
from gspo_record.f10.two_by_two import EFFECTS
from gspo_record.joint import Joint, combination
from gspo_record.rules import PENDING, Rule, register
from gspo_record.signed import SIGNED, signed

__all__ = [
    "SPECS",
    "LATE",
    "TWO_BY_TWO",
    "SKIP_SHRINK",
    "RELATIVE",
    "DUAL_CAP",
    "ACCOUNT",
    "REL_GSPO",
    "EFFECTS",
    "late_verdict",
    "two_by_two_verdict",
    "skip_shrink_verdict",
    "relative_verdict",
    "dual_cap_verdict",
    "account_verdict",
    "rel_gspo_verdict",
    "effects",
]

SPECS = {
    "two": "f10_direction_norm",
    "shrink": "f10_shrink_skip",
    "onset": "f10_onset_dual",
    "confirm": "f10c_relative_confirm",
    "ten": "f10t_two_by_two_ten",
    "shrink_ten": "f10u_shrink_skip_ten",
    "dual_ten": "f10v_dual_cap_ten",
    "adam": "f10w_adam_state",
    "branch": "f10z_branch",
    "sgd_two": "f10y_sgd_two_by_two",
}
_SIGN = {1: "higher", -1: "lower", 0: "none"}

LATE = register(
    Rule(
        "f10.late",
        "10",
        {"higher": "higher", "lower": "lower", "none": "no difference shown"},
        {"LEVEL": 0.95},
        declared="data/specs/f10_*.toml, before their runs",
        marker="Primary endpoint: late held-out accuracy (rollouts >= 40 of 80), paired by seed, 95 %",
        null="none",
        reads=SIGNED,
        specs=tuple(
            v for k, v in SPECS.items() if k not in ("ten", "adam", "branch", "sgd_two")
        ),  # these declare their own
    )
)
TWO_BY_TWO = register(
    Rule(
        "f10.two_by_two",
        "10",
        {
            "size": "size: GSPO's norms protect whichever direction they carry; its direction not shown to",
            "content": "content: GSPO's direction protects at either norm; its norm not shown to",
            "both": "both: each of GSPO's norm and GSPO's direction protects on its own",
            "neither": "neither: neither GSPO's norm nor its direction shown to protect",
            "mixed": "mixed: the effects do not fit one account",
        },
        {"LEVEL": 0.95},
        declared="data/specs/f10_direction_norm.toml, before its runs",
        marker='Rule f10.two_by_two per model: "size" when both norm effects are higher',
        specs=(SPECS["two"],),
    )
)
SKIP_SHRINK = register(
    Rule(
        "f10.skip_shrink",
        "10",
        {
            "higher": "skipping beats shrinking: the large updates' content harms",
            "lower": "shrinking beats skipping: the large updates carry signal; only their weight in Adam's moments "
            "harms",
            "none": "no difference shown between skipping and shrinking",
        },
        {"LEVEL": 0.95},
        declared="data/specs/f10_shrink_skip.toml, before its runs",
        marker="Rules per model: f10.skip_shrink on SKIP - SHRINK",
        null="none",
        reads=SIGNED,
        specs=(SPECS["shrink"],),
    )
)
RELATIVE = register(
    Rule(
        "f10.relative",
        "10",
        {
            "higher": "GSPO keeps its lead under equal relative caps",
            "lower": "GRPO leads under equal relative caps",
            "none": "no lead shown under equal relative caps",
        },
        {"LEVEL": 0.95},
        declared="data/specs/f10_shrink_skip.toml, before its runs",
        marker="f10.relative on REL-GSPO - REL-GRPO",
        null="none",
        reads=SIGNED,
        specs=(SPECS["shrink"], SPECS["confirm"]),
    )
)
DUAL_CAP = register(
    Rule(
        "f10.dual_cap",
        "10",
        {
            "higher": "dual-clip under the cap ends higher in late held-out accuracy",
            "lower": "dual-clip under the cap ends lower in late held-out accuracy",
            "none": "dual-clip under the cap: no difference in late held-out accuracy shown",
        },
        {"LEVEL": 0.95},
        declared="data/specs/f10_onset_dual.toml, before its runs",
        marker="f10.dual_cap on dual+cap - cap at caps 10 and 30",
        null="none",
        reads=SIGNED,
        null_count="seeds",
        specs=(SPECS["onset"],),
    )
)

REL_GSPO = register(
    Rule(
        "f10c.rel_gspo",
        "10",
        {
            "confirmed": "the relative cap's lift of GSPO is confirmed",
            "not": "the relative cap's lift of GSPO is not confirmed",
        },
        {"LEVEL": 0.95},
        declared="data/specs/f10c_relative_confirm.toml, before its runs",
        marker="Rules per model: f10c.rel_gspo",
        reads={"above": "confirmed", "below": "not", "none": "not"},
        specs=(SPECS["confirm"],),
    )
)
ACCOUNT = register(
    Rule(
        "f10.account",
        "10",
        {
            "both": "both accounts carry part: the norm decides the 2×2, and content shows under relative caps (each "
            "objective capped at 3× its own recent median norm) or where the large updates are dropped",
            "size": "size: no content effect shown by the 2×2, skip vs shrink or equal relative caps",
            "content": "content: no norm effect shown; content shows",
            "neither": "neither account shown",
        },
        {},
        declared="gspo_record/f10/why.py, after the results (post hoc)",
        marker="def account_verdict(two_by_two: Verdict, skip_shrink: Verdict, relative: Verdict) -> Verdict",
        specs=(SPECS["two"], SPECS["shrink"]),
        post_hoc=True,
    )
)


def page_sign(diff: pd.Series) -> int:
    """The page's :func:`~gspo_lab.experiments.stats.interval_sign` of per-seed differences of accuracies (declared
    range: DIFFERENCE)."""
    return interval_sign(diff, DIFFERENCE)


def declared_t(diff: pd.Series) -> int:
    """:func:`~gspo_lab.experiments.stats.declared_t_sign` of per-seed differences of accuracies (declared range:
    DIFFERENCE): the sign of the readings whose specs declared Student-t (f10t, f10s, f10d)."""
    return declared_t_sign(diff, DIFFERENCE)


def _signed(rule: Rule, diff: pd.Series, interval=None, id: str = ""):
    """``rule``'s higher / lower / none on per-seed differences, an interval statement ``id`` (the rule's name by
    default) with ``interval`` (default the page's: :func:`gspo_record.f10.two_by_two.page_interval`)."""
    return signed(rule, diff, interval or two_by_two.page_interval, f"{rule.outcomes['higher']}?", id, DIFFERENCE)


def late_verdict(diff: pd.Series, id: str = ""):
    """``f10.late`` on per-seed differences of late held-out accuracy."""
    return _signed(LATE, diff, id=id)


def skip_shrink_verdict(diff: pd.Series, id: str = ""):
    """``f10.skip_shrink`` on per-seed SKIP − SHRINK differences of late held-out accuracy."""
    return _signed(SKIP_SHRINK, diff, id=id)


def relative_verdict(diff: pd.Series, id: str = ""):
    """``f10.relative`` on per-seed REL-GSPO − REL-GRPO differences of late held-out accuracy."""
    return _signed(RELATIVE, diff, id=id)


def dual_cap_verdict(diff: pd.Series, id: str = ""):
    """``f10.dual_cap`` on per-seed (dual-clip + cap) − (cap) differences of late held-out accuracy."""
    return _signed(DUAL_CAP, diff, id=id)


def rel_gspo_verdict(diff: pd.Series, id: str = ""):
    """``f10c.rel_gspo`` on per-seed REL-GSPO − GSPO differences of late held-out accuracy on the fresh seeds:
    *confirmed* when the page's 95 % interval lies above 0 (statement ``id``)."""
    return signed(REL_GSPO, diff, lambda x: seed_interval(x, DIFFERENCE), "is the relative cap's lift confirmed?", id,
                  DIFFERENCE)  # fmt: skip


def effects(runs: pd.DataFrame, column: str = "late_acc") -> dict[str, pd.Series]:
    """The 2×2's four effects (:data:`EFFECTS`) on one model's runs (columns arm_id in A-D, seed, ``column``)."""
    return {name: paired_diff(runs, arm, base, column) for name, (arm, base) in EFFECTS.items()}


def two_by_two_verdict(diffs: dict[str, pd.Series], rule: Rule | None = None, interval=None, id: str = ""):
    """``f10.two_by_two`` (or ``rule``, with its ``interval``: ``f10t.two_by_two`` Student-t) on the four effects'
    per-seed differences: a joint statement of the four intervals (:mod:`gspo_record.f10.two_by_two`)."""
    return two_by_two.read(diffs, rule or TWO_BY_TWO, interval or two_by_two.page_interval, id)


def account_outcome(two_by_two: str, skip_shrink: str, relative: str) -> str:
    """``f10.account``'s combination of its parts' outcomes: size shows when the 2×2 reads *size* or *both*; content
    shows when it reads *content* or *both*, when skipping beats shrinking, or when GSPO keeps its lead under equal
    relative caps (an interval above 0)."""
    size = two_by_two in ("size", "both")
    content = two_by_two in ("content", "both") or "above" in (skip_shrink, relative)
    return {(True, True): "both", (True, False): "size", (False, True): "content", (False, False): "neither"}[
        (size, content)
    ]


ACCOUNT_PARTS = ("2×2", "SKIP − SHRINK", "REL-GSPO − REL-GRPO")
combination("f10.account", tuple(ACCOUNT.outcomes), ACCOUNT_PARTS, shown=("both", "content"))(
    lambda o: account_outcome(*(o[k] for k in ACCOUNT_PARTS))  # looked up when called: a mutant of it is read
)


def account_verdict(two_by_two, skip_shrink, relative, rule: Rule | None = None, id: str = "", words=None):
    """``f10.account`` (post hoc; or ``rule``, which reads it on other data) on one model's statements of
    ``f10.two_by_two``, ``f10.skip_shrink`` and ``f10.relative``: a joint statement of their numbers, pending while
    any of the three is."""
    rule = rule or ACCOUNT
    parts = (two_by_two, skip_shrink, relative)
    if any(v.outcome == PENDING for v in parts):
        return rule.verdict(PENDING)
    number = Joint("f10.account", tuple(zip(ACCOUNT_PARTS, (v.number for v in parts), strict=True)))
    return rule.state(id or rule.name, "which account, size or content, do the three tests carry together?", number,
                      words=words)  # fmt: skip
