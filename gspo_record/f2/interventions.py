"""Finding 2e's interventions on GRPO's spikes, each declared before its runs (:mod:`gspo_record.f2.mechanism` draws
their section): rules ``f2e.dual_clip``, ``f2e.clip10`` (``f2_mechanism.toml``) and ``f2e.clip30``
(``f2_clip_dose.toml``), by :func:`intervention_verdict`: an arm at ≤ ``STABLE_AT_MOST`` of 5 collapsed gives the
rule's *low* outcome, at ≥ ``COLLAPSES_AT_LEAST`` its *high* outcome, in between *inconclusive*; dual-clip's low
outcome also needs the largest update's median norm below ``PEAK_GSPO_RANGE`` (towards GSPO's), else it is
inconclusive. Rule ``f2e.dose_confirm`` (``f2_clip_dose_confirm.toml``): the MoE/dense difference at grad clip 30 is
*confirmed* when on the fresh seeds the MoE collapses in ≥ ``COLLAPSES_AT_LEAST`` of 5 and the dense twin in ≤
``STABLE_AT_MOST``. Each verdict is a statement about the counts (and the norm) it reads.
"""

from __future__ import annotations

import math

from gspo_record.f2.collapse import collapsed
from gspo_record.joint import Joint, combination
from gspo_record.kinds import Band
from gspo_record.rules import COLLAPSES_AT_LEAST, PENDING, STABLE_AT_MOST, Rule, register
from gspo_record.tables import F2, FIRST

__all__ = ["INTERVENTIONS", "DOSE_CONFIRM", "PEAK_GSPO_RANGE", "intervention_verdict", "dose_confirm_verdict"]

#: f2_mechanism.toml, before its runs: dual-clip brings the largest update "towards GSPO's" below this norm
PEAK_GSPO_RANGE = 100.0
_CLASSES = {"COLLAPSES_AT_LEAST": COLLAPSES_AT_LEAST, "STABLE_AT_MOST": STABLE_AT_MOST}

#: (objective, grad clip) -> the arm's rule; low: its outcome at <= STABLE_AT_MOST of 5, high: >= COLLAPSES_AT_LEAST
INTERVENTIONS = {
    ("grpo_dual_clip", "off"): register(
        Rule(
            "f2e.dual_clip",
            "2e",
            {
                "low": "supports the account (the tokens Eq. 2 leaves unbounded drive the collapse)",
                "high": "refutes the account (those tokens are not the cause)",
                "inconclusive": "inconclusive by the declared rule",
            },
            {**_CLASSES, "PEAK_GSPO_RANGE": PEAK_GSPO_RANGE},
            declared="data/specs/f2_mechanism.toml, before its runs",
            marker="`grpo_dual_clip`, grad clip off",
            specs=(FIRST["mechanism"], F2["mechanism"]),
        )
    ),
    ("grpo", "10"): register(
        Rule(
            "f2e.clip10",
            "2e",
            {
                "low": "capping the spikes at ~3× the typical norm prevents the collapse",
                "high": "capping the spikes at ~3× the typical norm is not enough",
                "inconclusive": "inconclusive by the declared rule",
            },
            _CLASSES,
            declared="data/specs/f2_mechanism.toml, before its runs",
            marker="`grpo` at grad clip 10",
            specs=(FIRST["mechanism"], F2["mechanism"]),
        )
    ),
    ("grpo", "30"): register(
        Rule(
            "f2e.clip30",
            "2e",
            {
                "low": "a cap at 30 still prevents the collapse",
                "high": "the protective cap lies between 10 and 30",
                "inconclusive": "inconclusive by the declared rule",
            },
            _CLASSES,
            declared="data/specs/f2_clip_dose.toml, before its runs",
            marker="GRPO at grad clip 30 (~8x",
            specs=(FIRST["dose"], F2["dose"]),
        )
    ),
}
_NAMES = {("grpo_dual_clip", "off"): "dual-clip", ("grpo", "10"): "grad clip 10", ("grpo", "30"): "grad clip 30"}
DOSE_CONFIRM = register(
    Rule(
        "f2e.dose_confirm",
        "2e",
        {"confirmed": "confirmed", "not": "not confirmed"},
        _CLASSES,
        declared="data/specs/f2_clip_dose_confirm.toml, before its runs",
        marker="Declared: the difference is confirmed",
        specs=(FIRST["dose_confirm"], F2["dose_confirm"]),
    )
)


#: a cap arm's collapsed count read as its rule's outcome (dual-clip's "low" also needs its spikes smaller)
_CLASS_READS = {"at_most": "low", "at_least": "high", "between": "inconclusive"}
combination("f2e.cap", tuple(_CLASS_READS.values()), ("collapsed",))(lambda o: _CLASS_READS[o["collapsed"]])
_DUAL_PARTS = ("collapsed", "largest update's norm, median")
combination("f2e.dual_clip", ("low", "high", "inconclusive"), _DUAL_PARTS)(lambda o: dual_clip_outcome(o))
_CONFIRM_PARTS = ("MoE", "dense")
combination("f2e.dose_confirm", ("confirmed", "not"), _CONFIRM_PARTS)(lambda o: dose_confirm_outcome(o))


def dual_clip_outcome(o: dict) -> str:
    """``f2e.dual_clip``: "low" at <= 1/5 collapsed with the median largest norm below the declared 100, "high" at
    >= 4/5, else "inconclusive" (no collapse, but the spikes did not shrink either)."""
    if o["collapsed"] == "at_most" and o["largest update's norm, median"] == "below":
        return "low"
    return "high" if o["collapsed"] == "at_least" else "inconclusive"


def dose_confirm_outcome(o: dict) -> str:
    """``f2e.dose_confirm``: "confirmed" when the MoE collapses (>= 4/5) and the dense twin is stable (<= 1/5)."""
    return "confirmed" if o["MoE"] == "at_least" and o["dense"] == "at_most" else "not"


def intervention_verdict(rule: Rule, k: int, n: int, peak_median: float, seeds_declared: int, id: str = ""):
    """One intervention arm's verdict by its declared rule (module docstring): statement ``id`` (the rule's name by
    default) about its collapsed count, and for dual-clip also the median largest update norm."""
    if not n:
        return rule.verdict(PENDING)
    provisional = "" if n >= seeds_declared else f"{n} of {seeds_declared} seeds"
    question = f"does {rule.name[4:].replace('_', '-')} prevent GRPO's collapse?"
    if rule.name != "f2e.dual_clip":
        number = Joint("f2e.cap", (("collapsed", collapsed(k, n)),))
        return rule.state(id or rule.name, question, number, provisional=provisional)
    peak = Band(peak_median, PEAK_GSPO_RANGE, math.inf, "", f"{PEAK_GSPO_RANGE:g} (towards GSPO's)")
    number = Joint("f2e.dual_clip", tuple(zip(_DUAL_PARTS, (collapsed(k, n), peak), strict=True)))
    return rule.state(id or rule.name, question, number, provisional=provisional)


def dose_confirm_verdict(k_moe: int, n_moe: int, k_dense: int, n_dense: int, cells_declared: int,
                         id: str = "f2e.dose_confirm"):  # fmt: skip
    """``f2e.dose_confirm`` on the fresh seeds' collapsed counts at grad clip 30 (module docstring): a statement."""
    if not n_moe or not n_dense:
        return DOSE_CONFIRM.verdict(PENDING)
    done = "" if n_moe + n_dense >= cells_declared else "not all cells finished"
    number = Joint("f2e.dose_confirm", (("MoE", collapsed(k_moe, n_moe)), ("dense", collapsed(k_dense, n_dense))))
    return DOSE_CONFIRM.state(id, "on fresh seeds, does the MoE collapse at grad clip 30 where the "
                              "dense twin does not?", number, provisional=done)  # fmt: skip
