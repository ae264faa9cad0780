"""Finding 11's declared predictions beyond the dose ladder, scored (issue 48, item 6): the successors in the collapse
regime (f11_successors_collapse) and in regime (b) on the MoE (f11b_successors_production) and the dense model
(f11b_production_dense), its reading on fresh seeds (f11d_production_confirm), CISPO's arms (f11f_cispo_arms), one
update per batch (f11g_one_update) and the sampler corrections (f11c_corrections_precision, f11c_corrections_dense).
Collapse counts and the corrections' logged shares are read from the sections' tables, positions and corrections from
the book's statements (rules f11.position, f11b.position, f11c.correction)."""

from __future__ import annotations

from collections.abc import Callable

from gspo_record.f11.corrections import ARMS as CORRECTION_ARMS
from gspo_record.fmt import num
from gspo_record.prediction import Prediction, parts, result_of

__all__ = ["PREDICTIONS"]

MODELS = ("MoE", "dense")
MODES = CORRECTION_ARMS[2:]  # TRL's four correction modes (after SAMPLER and RECOMPUTE)
#: f11c's predictions: rho stays within [0.9, 1.1] (the MoE's spec); the default band binds on < 1e-3 of tokens (the
#: dense twin's)
RHO_BAND, BINDS_BELOW = (0.9, 1.1), 1e-3

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


def _position(ctx: dict, arm: str, model: str, *ok: str, rule: str = "f11b.position") -> tuple[bool, str]:
    s = ctx["book"].summary(f"{rule}.{arm}.{model}")
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


def _on(model: str, check: tuple[bool, str]) -> tuple[bool, str]:
    return check[0], f"{model}: {check[1]}"


def _collapse_regime(ctx: dict, arm: str, model: str) -> str:
    """``arm``'s collapse count in the collapse regime (f11_successors_collapse's table)."""
    t = ctx["f11"]
    return next(r[t["header"].index("collapsed (v2)")] for r in t["rows"] if r[0] == model and r[1] == arm)


def _luspo_like_gspo(ctx: dict) -> tuple[str, str]:
    """f11_successors_collapse: LUSPO stable and, by rule f11.position, like GSPO on each model."""
    checks = []
    for m in MODELS:
        checks += [_on(m, _class("luspo", _collapse_regime(ctx, "luspo", m), "stable")),
                   _on(m, _position(ctx, "luspo", m, "gspo_like", rule="f11.position"))]  # fmt: skip
    return parts(checks)


def _bounded_stable(ctx: dict) -> tuple[str, str]:
    """f11_successors_collapse: GMPO, SAPO and VESPO stable (<= 1/5) on each model."""
    return parts([_on(m, _class(a, _collapse_regime(ctx, a, m), "stable")) for m in MODELS
                  for a in ("gmpo", "sapo", "vespo")])  # fmt: skip


def _cispo_between(ctx: dict) -> tuple[str, str]:
    """f11_successors_collapse: rule f11.position reads CISPO "between" GRPO and GSPO on each model."""
    return parts([_on(m, _position(ctx, "cispo", m, "between", rule="f11.position")) for m in MODELS])


def _correction(ctx: dict, model: str, objective: str, arm: str):
    return ctx["book"].summary(f"f11c.correction.{model}.{objective}.{arm}")


def _no_difference(model: str, arms: tuple[str, ...]) -> Callable[[dict], tuple[str, str]]:
    """Rule f11c.correction reads "no difference shown" for each arm − RECOMPUTE of both objectives on ``model``;
    the evidence groups the arms by what the rule said."""

    def score(ctx: dict) -> tuple[str, str]:
        reads = [(f"{NAMES[o]} {a}", _correction(ctx, model, o, a)) for o in ("grpo", "gspo") for a in arms]
        said: dict[str, list[str]] = {}
        for name, s in reads:
            said.setdefault(f"{s.label}{s.mark}", []).append(name)
        held = sum(s.rule_outcome == "none" for _, s in reads)
        return result_of(held, len(reads)), f"{model}: " + "; ".join(f"{k}: {', '.join(v)}" for k, v in said.items())

    return score


def _sampler(ctx: dict) -> tuple[str, str]:
    """f11c (MoE): SAMPLER − RECOMPUTE not "helps" for GSPO (lower or no difference), "no difference shown" for
    GRPO."""
    gspo, grpo = (_correction(ctx, "MoE", o, "SAMPLER") for o in ("gspo", "grpo"))
    return parts([(gspo.rule_outcome in ("hurts", "none"), f"MoE: GSPO {gspo.number.brief}: {gspo.label}{gspo.mark}"),
                  (grpo.rule_outcome == "none", f"GRPO {grpo.number.brief}: {grpo.label}{grpo.mark}")])  # fmt: skip


def _logged(ctx: dict, model: str) -> list[tuple[str, float, float]]:
    """Per correction arm of ``model`` (f11c's table): its name, mean ρ and the larger of its masked and truncated
    token shares."""
    t = ctx["f11c"]
    rho, masked, truncated = (t["header"].index(c) for c in ("mean ρ", "masked tokens", "truncated tokens"))
    return [(f"{NAMES[r[1]]} {r[2]}", float(r[rho]), max(float(r[masked]), float(r[truncated])))
            for r in t["rows"] if r[0] == model and r[2] in MODES]  # fmt: skip


def _band_never_binds(ctx: dict) -> tuple[str, str]:
    """f11c (MoE): each correction arm's mean ρ inside :data:`RHO_BAND`, and no token masked or truncated."""
    logged = _logged(ctx, "MoE")
    rho = [r for _, r, _ in logged]
    binds = [(name, share) for name, _, share in logged if share > 0]
    most = max(binds, key=lambda b: b[1], default=None)
    where = f", on at most {num(most[1])} of tokens ({most[0]})" if most else ""
    return parts([(all(RHO_BAND[0] <= r <= RHO_BAND[1] for r in rho), f"MoE: mean ρ {num(min(rho))} to {num(max(rho))} "
                   f"over the {len(rho)} correction arms (the logged reading; ρ's per-token range is not logged)"),
                  (not binds, f"the band bound in {len(binds)} of {len(logged)} MoE arms{where}")])  # fmt: skip


def _binds_rarely(ctx: dict) -> tuple[str, str]:
    """f11c (dense): every correction arm masks or truncates fewer than :data:`BINDS_BELOW` of tokens."""
    logged = _logged(ctx, "dense")
    name, _, most = max(logged, key=lambda x: x[2])
    words = f"{num(most)} ({name})" if most > 0 else "0: no arm masked or truncated a token"
    return result_of(int(most < BINDS_BELOW), 1), f"dense: the largest masked or truncated share over the " \
                                                  f"{len(logged)} correction arms: {words}"  # fmt: skip


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
    Prediction("f11_successors_collapse", "11a", "luspo stable and like GSPO", _luspo_like_gspo),
    Prediction("f11_successors_collapse", "11a", "gmpo, sapo and vespo stable", _bounded_stable),
    Prediction("f11_successors_collapse", "11a", "cispo between GRPO and GSPO", _cispo_between),
    Prediction("f11c_corrections_precision", "11c", "rho stays within [0.9, 1.1] and TRL's default band never binds",
               _band_never_binds),
    Prediction("f11c_corrections_precision", "11c", 'every mode - RECOMPUTE "no difference shown" for both objectives',
               _no_difference("MoE", MODES)),
    Prediction("f11c_corrections_precision", "11c", "SAMPLER - RECOMPUTE: GSPO lower or no difference (taking pi_old "
               "from the sampler makes GSPO clip a large share of tokens before any update, finding 5); GRPO no "
               "difference", _sampler),
    Prediction("f11c_corrections_dense", "11c", 'every arm - RECOMPUTE "no difference shown" for both objectives, '
               "including GSPO sequence_mask", _no_difference("dense", ("SAMPLER", *MODES))),
    Prediction("f11c_corrections_dense", "11c", "the default band binds on < 1e-3 of tokens", _binds_rarely),
)  # fmt: skip
