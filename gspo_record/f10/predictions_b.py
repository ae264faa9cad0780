"""Finding 10's rival accounts, scored (issue 48, item 6): where a spec declared what SIZE and what CONTENT predicts,
each account's prediction is its own entry, quoting its own words, so the page says which one the data bore out; the
kit's own ("Ours", "we predict") is a third. The 2×2 under AdamW (f10_direction_norm, seeds 30-34), the cap dose and
dual-clip under a cap (f10_onset_dual, seeds 10-14), skip vs shrink and equal relative caps (f10_shrink_skip, seeds
30-34), dual-clip under a cap on ten seeds (f10v_dual_cap_ten) and the 2×2 under SGD (f10y_sgd_two_by_two). Each reads
the statement of the seeds the spec predicted, by id (``book[id]``: a newer reading on more seeds may supersede it in
the summaries, not here)."""

from __future__ import annotations

from collections.abc import Callable

from gspo_record.f10.predictions import MODELS, _sgd_dense_neither, _sgd_moe_size, _stable
from gspo_record.f10.why import LATE, SKIP_SHRINK
from gspo_record.prediction import RESULTS, Prediction, parts
from gspo_record.statements import outcome_of

__all__ = ["PREDICTIONS"]

_SIDE = {"above": "higher", "below": "lower", "none": "not shown"}
#: the caps of f10_onset_dual's predicted dose, loosest first ("30 -> 20 -> 15 -> 10")
DOSE = ("30", "20", "15", "10")
#: f10v's own prediction: the cap alone collapses in >= 3 of 5 fresh MoE seeds, <= 1 of 5 dense; dual-clip + cap 30
#: in 1-3 of 5 on each model (data/specs/f10v_dual_cap_ten.toml)
ALONE_MOE_AT_LEAST, ALONE_DENSE_AT_MOST, DUAL_RANGE = 3, 1, (1, 3)


def _effects(s) -> str:
    """A 2×2 statement's four effects, each by its difference's name and side: "C − A higher, B − D not shown, …"."""
    return ", ".join(f"{name.rsplit('(', 1)[-1].rstrip(')')} {_SIDE[outcome_of(i)]}" for name, i in s.number.parts)


def _two_by_two(rule: str, account: str, note: Callable[[dict, str], str] = lambda ctx, m: "") -> Callable:
    """An account's prediction of a 2×2: its rule (``f10.two_by_two`` / ``f10y.two_by_two``) reads ``account`` on
    each model."""

    def score(ctx: dict) -> tuple[str, str]:
        reads = [(m, ctx["book"].summary(f"{rule}.{m}")) for m in MODELS]
        return parts([(s.rule_outcome == account, f"{m}: {s.label}{s.mark} ({_effects(s)}){note(ctx, m)}")
                      for m, s in reads])  # fmt: skip

    return score


def _sgd_regime(ctx: dict, model: str) -> str:
    """Under SGD, whether GRPO (A) collapsed at its chosen lr: where it did not (<= 1/5), the 2×2 ran in a regime
    without collapse, the case f10y's spec foresaw ("where the toy cannot tell")."""
    two = ctx["f10"]["sgd_two"]
    row = next(r for r in two["rows"] if r[0] == model)
    a = row[two["header"].index("collapsed A / B / C / D")].split(" / ")[0]
    return f"; GRPO (A) collapsed in {a}" + (": a regime without collapse" if _stable(a) else "")


def _ours_sgd(ctx: dict) -> tuple[str, str]:
    """f10y's "Ours" (declared in f10x, scored there too): "size" on the MoE, "neither" on the dense model."""
    return parts([(r == RESULTS[0], e) for r, e in (_sgd_moe_size(ctx), _sgd_dense_neither(ctx))])


def _dose(ctx: dict, model: str) -> tuple[bool, str]:
    """GRPO's mean late accuracy rises at every step of :data:`DOSE` (f10_onset_dual's dose, ``ctx["f10"]["dose"]``);
    the rule f2e.dose_trend's reading from no cap to a cap of 1 beside it."""
    d = next(x for x in ctx["f10"]["dose"] if x["model"] == model)
    late = {p["clip"]: p["late"] for p in d["points"]}
    caps = [c for c in DOSE if c in late]
    held = len(caps) > 1 and all(float(late[a]) < float(late[b]) for a, b in zip(caps, caps[1:], strict=False))
    means = " → ".join(f"{late[c]} at cap {c}" for c in caps)
    return held, f"{model} GRPO late accuracy (means) {means}; f10.dose_trend: {d['trend'].label}"


def _dual(ctx: dict, model: str, cap: str) -> tuple[str, str]:
    """f10.dual_cap's outcome (higher / lower / none) on (dual-clip + cap) − cap at ``cap``, seeds 10-14, and the
    words."""
    s = ctx["book"][f"f10.dual_cap.{model}.{cap}"]  # the five-seed reading the spec predicted (ten seeds: f10v)
    return s.rule_outcome, f"{model} cap {cap}: {s.number.brief}: {s.short}"


def _onset(account: str) -> Callable[[dict], tuple[str, str]]:
    """f10_onset_dual, per model: the dose rises (both accounts); SIZE: dual-clip adds nothing at cap 10 and little
    at 30 (read: the rule does not say "adds protection" there); CONTENT: it adds protection at both caps."""

    def score(ctx: dict) -> tuple[str, str]:
        checks = [_dose(ctx, m) for m in MODELS]
        for cap in ("10", "30"):
            for m in MODELS:
                outcome, words = _dual(ctx, m, cap)
                if account == "content":
                    want = outcome == "higher"
                else:  # "adds nothing" at 10; "little" at 30: anything but "adds protection"
                    want = outcome == "none" if cap == "10" else outcome != "higher"
                checks.append((want, words))
        return parts(checks)

    return score


def _compared(ctx: dict, model: str, arm: str, base: str, rule) -> tuple[str, str]:
    """f10_shrink_skip's five-seed comparison ``arm − base`` on ``model``: the rule's outcome and the row's words."""
    s = ctx["book"][f"f10.{arm}−{base}.{model}"]  # the five-seed reading the spec predicted
    if s.rule != rule.name:
        raise ValueError(f"{model} {arm} − {base}: read by {s.rule}, not {rule.name}")
    return s.rule_outcome, f"{model} {arm} − {base} {s.number.brief}: {s.short}"


def _shrink(account: str) -> Callable[[dict], tuple[str, str]]:
    """f10_shrink_skip, per model. SIZE: SKIP − SHRINK lower, REL-GRPO − GRPO higher, REL-GSPO − REL-GRPO no
    difference shown; CONTENT: SKIP − SHRINK not lower, REL-GSPO − REL-GRPO higher (rule f10.relative)."""

    def score(ctx: dict) -> tuple[str, str]:
        checks = []
        for m in MODELS:
            skip, skip_words = _compared(ctx, m, "SKIP", "SHRINK", SKIP_SHRINK)
            rel = ctx["book"].summary(f"f10.REL-GSPO−REL-GRPO.{m}")
            rel_words = f"{m} REL-GSPO − REL-GRPO {rel.number.brief}: {rel.label}{rel.mark}"
            if account == "size":
                lift, lift_words = _compared(ctx, m, "REL-GRPO", "A", LATE)
                checks += [(skip == "lower", skip_words), (lift == "higher", lift_words),
                           (rel.rule_outcome == "none", rel_words)]  # fmt: skip
            else:
                checks += [(skip != "lower", skip_words), (rel.rule_outcome == "higher", rel_words)]
        return parts(checks)

    return score


def _ten(ctx: dict, model: str, cap: str):
    return ctx["book"].summary(f"f10v.dual_cap.{model}.{cap}")


def _ten_says(ctx: dict, cells: tuple[tuple[str, str], ...], outcome: str) -> tuple[str, str]:
    """Rule f10v.dual_cap (ten seeds pooled) reads ``outcome`` at each (model, cap) of ``cells``."""
    reads = [(m, cap, _ten(ctx, m, cap)) for m, cap in cells]
    return parts([(s.rule_outcome == outcome, f"{m} cap {cap} {s.number.brief}: {s.label}{s.mark}")
                  for m, cap, s in reads])  # fmt: skip


def _fresh_count(ctx: dict, model: str, column: str) -> tuple[int, int]:
    """A collapse count of f10v's table on the fresh seeds at cap 30 (``column``: its header's name)."""
    d = ctx["f10"]["dual_ten"]
    row = next(r for r in d["rows"] if r[0] == model and r[1] == "30")
    k, n = (int(x) for x in row[d["header"].index(column)].split("/"))
    return k, n


def _ten_ours(ctx: dict) -> tuple[str, str]:
    """f10v's own prediction at cap 30: the cap alone's fresh collapse counts, dual-clip + cap's, and the pooled MoE
    verdict "adds protection" but fragile."""
    checks = []
    for m, at_least, at_most in (("MoE", ALONE_MOE_AT_LEAST, 5), ("dense", 0, ALONE_DENSE_AT_MOST)):
        k, n = _fresh_count(ctx, m, "cap alone (fresh)")
        checks.append((at_least <= k <= at_most, f"{m} cap 30 alone collapsed in {k}/{n} fresh seeds"))
    for m in MODELS:
        k, n = _fresh_count(ctx, m, "collapsed, dual-clip (fresh)")
        checks.append((DUAL_RANGE[0] <= k <= DUAL_RANGE[1], f"{m} dual-clip + cap 30 collapsed in {k}/{n}"))
    s = _ten(ctx, "MoE", "30")
    checks.append((s.rule_outcome == "higher" and s.fragile, f"pooled MoE cap 30 {s.number.brief}: {s.label}{s.mark}"))
    return parts(checks)


PREDICTIONS = (
    Prediction("f10_direction_norm", "10", "SIZE: GRPO's rare large-norm updates are what harms; its directions are "
               "as good as GSPO's. Predicts C ~ B (higher than A: GSPO's norms have no GRPO-sized spikes) and D lower "
               "than B (D inherits GRPO's spikes); D ~ A.", _two_by_two("f10.two_by_two", "size")),
    Prediction("f10_direction_norm", "10", "CONTENT: GRPO's directions are what harms (token-level weights "
               "concentrate the update on few tokens with extreme w_{i,t}); norms are secondary. Predicts C ~ A (lower "
               "than B) and D ~ B (higher than A).", _two_by_two("f10.two_by_two", "content")),
    Prediction("f10_onset_dual", "10", "SIZE: GRPO's late accuracy rises as the cap tightens (30 -> 20 -> 15 -> 10); "
               "dual-clip adds nothing under a cap of 10 (the cap already bounds what dual-clip would shrink) and "
               "little under 30", _onset("size")),
    Prediction("f10_onset_dual", "10", "CONTENT: the same dose; dual-clip removes specific tokens' contributions "
               "(Â < 0, w far above 1) whatever the norm, so it adds protection under both caps.", _onset("content")),
    Prediction("f10_shrink_skip", "10", "SIZE (the large updates harm by their weight in Adam's moments, their "
               "directions carry signal): SHRINK better than SKIP (shrinking keeps the signal, skipping drops it); "
               "REL-GRPO higher than plain GRPO and the gap REL-GSPO - REL-GRPO closes (no difference shown).",
               _shrink("size")),
    Prediction("f10_shrink_skip", "10", "CONTENT (the large updates' directions harm): SKIP at least as good as "
               "SHRINK; under equal relative caps GSPO keeps its lead (REL-GSPO - REL-GRPO higher).",
               _shrink("content")),
    Prediction("f10v_dual_cap_ten", "10", 'SIZE (the cap bounds what dual-clip would shrink): "adds nothing" at cap '
               '10 on both models, and at cap 30 "adds nothing" on the dense model.',
               lambda ctx: _ten_says(ctx, (("MoE", "10"), ("dense", "10"), ("dense", "30")), "none")),
    Prediction("f10v_dual_cap_ten", "10", "we predict the cap alone collapses in >= 3 of the 5 fresh MoE seeds and "
               "in <= 1 of the 5 fresh dense seeds, dual-clip + cap 30 collapses in 1-3 of 5 on each model, and the "
               'pooled MoE cap-30 verdict reads "adds protection" but fragile', _ten_ours),
    Prediction("f10v_dual_cap_ten", "10", "CONTENT (dual-clip removes specific tokens' contributions whatever the "
               'norm) would predict "adds protection" under both caps on both models.',
               lambda ctx: _ten_says(ctx, tuple((m, c) for m in MODELS for c in ("10", "30")), "higher")),
    Prediction("f10y_sgd_two_by_two", "10", 'SIZE predicts C like B and D toward A ("size")',
               _two_by_two("f10y.two_by_two", "size", _sgd_regime)),
    Prediction("f10y_sgd_two_by_two", "10", 'CONTENT predicts C near A and D near B ("content")',
               _two_by_two("f10y.two_by_two", "content", _sgd_regime)),
    Prediction("f10y_sgd_two_by_two", "10", 'Ours: "size" on the MoE; "neither" on the dense model.', _ours_sgd),
)  # fmt: skip
