"""Finding 11's declared predictions beyond the dose ladder, scored (issue 48, item 6): the successors in regime (b)
on the MoE (f11b_successors_production) and the dense model (f11b_production_dense), its reading on fresh seeds
(f11d_production_confirm), CISPO's arms (f11f_cispo_arms) and one update per batch (f11g_one_update). Collapse counts
are read from the sections' tables, positions from the book's statements (rule f11b.position)."""

from __future__ import annotations

from collections.abc import Callable

from gspo_record.prediction import Prediction, parts

__all__ = ["PREDICTIONS"]

#: collapse.class on five seeds: "collapses" at >= 4 of 5, "stable" at <= 1 of 5 (scaled to the runs finished)
COLLAPSES, STABLE = 4, 1
SUCCESSORS = ("cispo", "sapo", "luspo", "vespo", "gmpo")
NAMES = {"grpo": "GRPO", "gspo": "GSPO", "cispo": "CISPO", "sapo": "SAPO", "luspo": "LUSPO", "vespo": "VESPO",
         "gmpo": "GMPO", "cispo_mask": "CISPO + mask", "cispo_clip": "CISPO, clipped weight",
         "cispo@1.28": "CISPO at cap 1.28"}  # fmt: skip


def _count(text: str) -> tuple[int, int]:
    """``"k/n ..."`` -> (k, n)."""
    k, n = (int(x) for x in text.split(" ")[0].split("/"))
    return k, n


def _class(arm: str, count: str, want: str) -> tuple[bool, str]:
    """Does ``arm``'s collapse count (``"k/n"``) read as collapse.class ``want`` ("collapses" or "stable")?"""
    k, n = _count(count)
    held = k * 5 >= COLLAPSES * n if want == "collapses" else k * 5 <= STABLE * n
    return held, f"{NAMES.get(arm, arm)} {k}/{n} collapsed"


def _production(ctx: dict, model: str) -> dict[str, str]:
    """Regime (b)'s collapse count per objective on ``model`` (f11b's table)."""
    return {r[1]: r[3] for r in ctx["f11"]["production"]["rows"] if r[0] == model}


def _position(ctx: dict, arm: str, model: str, *ok: str) -> tuple[bool, str]:
    s = ctx["book"].summary(f"f11b.position.{arm}.{model}")
    return s.rule_outcome in ok, f"{NAMES[arm]} {s.label}{s.mark}"


def _nothing_collapses(ctx: dict) -> tuple[str, str]:
    """f11b (MoE): with a grad-norm clip no successor collapses (each stable, <= 1/5)."""
    counts = _production(ctx, "MoE")
    return parts([_class(a, counts[a], "stable") for a in SUCCESSORS if a in counts])


def _between(ctx: dict) -> tuple[str, str]:
    """f11b (MoE): every successor between GRPO and GSPO or like one of them; LUSPO like GSPO."""
    within = ("gspo_like", "between", "grpo_like")
    checks = [_position(ctx, a, "MoE", *within) for a in SUCCESSORS]
    luspo = _position(ctx, "luspo", "MoE", "gspo_like")
    return parts([*checks, (luspo[0], "LUSPO like GSPO, as predicted" if luspo[0] else "LUSPO not like GSPO")])


def _dense(ctx: dict) -> tuple[str, str]:
    """f11b_production_dense: the MoE's outcomes again on the dense model."""
    counts, low = _production(ctx, "dense"), ("grpo_like", "below_grpo")
    return parts([_class("grpo", counts["grpo"], "stable"), _class("gspo", counts["gspo"], "stable"),
                  _class("cispo", counts["cispo"], "collapses"), _class("sapo", counts["sapo"], "collapses"),
                  _position(ctx, "cispo", "dense", *low), _position(ctx, "sapo", "dense", *low),
                  _position(ctx, "vespo", "dense", *low), _position(ctx, "luspo", "dense", "gspo_like"),
                  _position(ctx, "gmpo", "dense", "gspo_like", "unresolved")])  # fmt: skip


def _confirm_counts(ctx: dict) -> tuple[str, str]:
    """f11d: on fresh seeds CISPO and SAPO collapse (>= 4/5), GRPO and GSPO stable (<= 1/5)."""
    c = ctx["f11"]["confirm"]
    counts = {r[0]: r[2] for r in c["rows"]} | {b[0]: b[2] for b in c["baselines"]}
    return parts(
        [
            _class("cispo", counts["cispo"], "collapses"),
            _class("sapo", counts["sapo"], "collapses"),
            _class("grpo", counts["grpo"], "stable"),
            _class("gspo", counts["gspo"], "stable"),
        ]
    )


def _arms(**want: str) -> Callable[[dict], tuple[str, str]]:
    """f11f: each named arm's collapse class (arm ids as f11f's table keys them; ``cap128`` is ``cispo@1.28``)."""

    def score(ctx: dict) -> tuple[str, str]:
        counts = ctx["f11f"]["counts"]
        return parts([_class(a, counts[a], w) for a, w in ((k.replace("cap128", "cispo@1.28"), w)
                                                           for k, w in want.items())])  # fmt: skip

    return score


def _one_update(ctx: dict) -> tuple[str, str]:
    """f11g: rule f11g.one_update reads "off-policy account kept", and no arm collapses at M = 1 (<= 1/5 each)."""
    s, counts = ctx["book"].summary("f11g.one_update"), ctx["f11f"]["counts"]
    arms = [(a, counts[f"{a}@M1"]) for a in ("grpo", "gspo", "cispo", "sapo") if f"{a}@M1" in counts]
    return parts([(s.rule_outcome == "kept", f"{s.label}{s.mark}"), *(_class(a, k, "stable") for a, k in arms)])


PREDICTIONS = (
    Prediction("f11b_successors_production", "11b", "with a grad-norm clip nothing collapses", _nothing_collapses),
    Prediction("f11b_successors_production", "11b", "every successor between GRPO and GSPO or like one of them on "
               "late held-out accuracy — none above GSPO and none below GRPO; LUSPO like GSPO", _between),
    Prediction("f11b_production_dense", "11b", 'GRPO and GSPO do not collapse (collapse.class "stable" for both); '
               'CISPO and SAPO collapse (collapse.class "collapses") and lie like or below GRPO; VESPO like or below '
               "GRPO; LUSPO like GSPO; GMPO like GSPO or unresolved", _dense),
    Prediction("f11d_production_confirm", "11b", 'the reading predicts CISPO and SAPO "collapses" (>= 4/5), GRPO and '
               'GSPO "stable" (<= 1/5)', _confirm_counts),
    Prediction("f11f_cispo_arms", "11f", "under that reading cispo_mask collapses in <= 1/5 and cispo_clip and cispo "
               "at cap 1.28 in >= 4/5", _arms(cispo_mask="stable", cispo_clip="collapses", cap128="collapses")),
    Prediction("f11f_cispo_arms", "11f", "cispo and sapo collapse in >= 4/5 as in f11b/f11d; grpo and gspo in <= 1/5",
               _arms(cispo="collapses", sapo="collapses", grpo="stable", gspo="stable")),
    Prediction("f11g_one_update", "11f", '"off-policy account kept" — no arm collapses at M = 1', _one_update),
)  # fmt: skip
