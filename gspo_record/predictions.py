"""Predictions scored (issue 48, item 6): each prediction a spec declared before its runs, quoted from the spec, and
a scoring rule over the build's statements and sections that reads it as borne out, partly or not.

A :class:`Prediction` names its spec and quotes the prediction word for word (whitespace aside: a test checks the
quote is in the spec's description, so nobody paraphrases it into something that came true). Its ``score`` reads the
build's context and returns the result (one of :data:`RESULTS`) and the evidence in words, every number from the
context. :func:`scored` runs every one; the methods page prints them all in one table, each finding page its own.
Findings 11e and 12a are scored here; findings 2, 6, 10, 11's other specs and 12's confirmations in their own modules
(``gspo_record/fN/predictions*.py``, built on :mod:`gspo_record.prediction`). A spec whose description speaks of
predictions but declares none is named in :data:`NONE_DECLARED` with the reason; the specs not scored yet are listed
on methods.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from gspo_record.f2.predictions import PREDICTIONS as F2
from gspo_record.f5.mask_form import PREDICTIONS as F5G
from gspo_record.f5.r3 import PREDICTIONS as F5R
from gspo_record.f5.topk import PREDICTIONS as F5T
from gspo_record.f6.predictions import PREDICTIONS as F6
from gspo_record.f10.predictions import PREDICTIONS as F10
from gspo_record.f10.predictions_b import PREDICTIONS as F10_ACCOUNTS
from gspo_record.f10.predictions_c import PREDICTIONS as F10_BRANCHES
from gspo_record.f11.predictions import PREDICTIONS as F11
from gspo_record.f12.lag_page import SHORT_ALL, largest_lags
from gspo_record.f12.predictions import PREDICTIONS as F12
from gspo_record.prediction import RESULTS, Prediction, result_of

__all__ = ["RESULTS", "Prediction", "PREDICTIONS", "NONE_DECLARED", "scored", "unscored_specs", "result_of",
           "context"]  # fmt: skip

#: specs whose description mentions "predict" but declares no prediction, each with the reason (its own words)
NONE_DECLARED = {
    "f5_precision_confirm": 'declares none: "Nobody predicted the gain, so it is re-measured on 5 fresh seeds"; its '
    "rule (is the gain confirmed?) is a verdict, not a prediction",
}


def _lags(ctx: dict) -> dict[str, int]:
    """Each f12 arm's largest tolerated lag on the longest ladder it ran (:func:`~.f12.lag_page.largest_lags`)."""
    return largest_lags(ctx)


def _gspo_clips_stale(ctx: dict) -> tuple[str, str]:
    clip = {int(r[1]): float(r[8]) for r in ctx["f12b"]["rows"] if r[0] == "GSPO, behaviour π_old" and int(r[1]) > 0}
    held = [d for d, c in clip.items() if c > 0.5]
    shown = ", ".join(f"{c:.3g} at D = {d}" for d, c in sorted(clip.items()))
    return result_of(len(held), len(clip)), f"GSPO's clipped-token share, behaviour π_old: {shown}"


def _gspo_no_more_than_grpo(ctx: dict) -> tuple[str, str]:
    s = ctx["book"].summary("f12c.gspo_vs_grpo")
    held = s.number.a <= s.number.b
    return result_of(int(held), 1), (f"largest tolerated lag GSPO {s.number.a}, GRPO {s.number.b}; the drops at the "
                                     f"deciding lag: {s.secondary.label}, {s.secondary.number.brief}")  # fmt: skip


def _tis_tolerates_most(ctx: dict) -> tuple[str, str]:
    lags = _lags(ctx)
    tis, top = lags["grpo/proximal+token_truncate"], max(lags.values())
    tied = [SHORT_ALL[a] for a, d in lags.items() if d == top and a != "grpo/proximal+token_truncate"]
    result = RESULTS[2] if tis < top else RESULTS[1] if tied else RESULTS[0]
    return result, f"token TIS {tis}, the largest of any arm {top}" + (f", tied with {', '.join(tied)}" * bool(tied))


def _cispo_more_than_grpo(ctx: dict) -> tuple[str, str]:
    lags = _lags(ctx)
    cispo, grpo = lags["cispo/behaviour"], lags["grpo/behaviour"]
    return result_of(int(cispo > grpo), 1), f"largest tolerated lag CISPO {cispo}, GRPO {grpo} (behaviour π_old)"


_LOW_LR = ("lr 1e-5", "lr 2e-5")


def _rows(ctx: dict) -> list[list]:
    return [r for r in ctx["f11e"]["rows"] if r[0] in _LOW_LR]


def _no_collapse_low_lr(ctx: dict) -> tuple[str, str]:
    counts = [(r[0], r[2], r[3]) for r in _rows(ctx)]
    held = sum(int(k.split("/")[0]) * 5 <= int(k.split("/")[1]) for _, _, k in counts)
    shown = ", ".join(f"{arm} {k} at {lr}" for lr, arm, k in counts)
    return result_of(held, len(counts)), f"collapsed: {shown}"


def _like_grpo_or_better(ctx: dict) -> tuple[str, str]:
    reads = [(r[0], r[2], r[8]) for r in _rows(ctx) if r[2] in ("CISPO", "SAPO")]
    ok = ("above GSPO", "like GSPO", "between", "like GRPO")
    held = sum(pos.startswith(ok) for _, _, pos in reads)
    shown = "; ".join(f"{arm} at {lr}: {re.sub(r' [(].*', '', pos)}" for lr, arm, pos in reads)
    return result_of(held, len(reads)), shown


#: the range f11e's prediction gave the successors' KL50, rollout-0 KL k3 (data/specs/f11e_dose_ladder.toml)
KL50_RANGE = (0.05, 0.24)


def _kl50_in_range(ctx: dict) -> tuple[str, str]:
    fits = [f for f in ctx["f11e"]["crossings"]]
    inside = [f for f in fits if KL50_RANGE[0] <= float(f["crossing"].split(" ")[0]) <= KL50_RANGE[1]]
    shown = ", ".join(f"{f['arm']} {f['crossing']}" for f in fits)
    return result_of(len(inside), len(fits)), f"KL50 (rollout-0 KL k3): {shown}"


def _anchors_no_threshold(ctx: dict) -> tuple[str, str]:
    fits = [f for f in ctx["f11e"]["fits"] if f["arm"] in ("GRPO", "GSPO")]
    held = sum(f["verdict"].rule_outcome in ("none", "few", "all") for f in fits)
    return result_of(held, len(fits)), "; ".join(f"{f['arm']}: {f['verdict'].label}" for f in fits)


def _warmup(steps: int, outcome: str, any_of: bool) -> Callable[[dict], tuple[str, str]]:
    def score(ctx: dict) -> tuple[str, str]:
        reads = [(s["arm"], w) for s in ctx["f11e"]["safe"] for w in s["warmup"] if w["warmup"] == steps]
        held = sum(w["verdict"].rule_outcome == outcome for _, w in reads)
        result = (RESULTS[0] if held else RESULTS[2]) if any_of else result_of(held, len(reads))
        return result, "; ".join(f"{arm} {w['collapsed']} collapsed: {w['verdict'].label}" for arm, w in reads)

    return score


_OWN = (
    Prediction("f12a_lag_search", "12", "with the behaviour policy as pi_old, GSPO's sequence band (3e-4 / 4e-4) "
               "clips nearly every stale response (clip/token_frac > 0.5 at D >= 2)", _gspo_clips_stale),
    Prediction("f12a_lag_search", "12", "it tolerates no more lag than GRPO", _gspo_no_more_than_grpo),
    Prediction("f12a_lag_search", "12", "the proximal pi_old with the token correction tolerates the most",
               _tis_tolerates_most),
    Prediction("f12a_lag_search", "12", "CISPO, built for off-policy weights, tolerates more than GRPO with the "
               "behaviour policy", _cispo_more_than_grpo),
    Prediction("f11e_dose_ladder", "11", "at lr <= 2e-5 no arm collapses (<= 1/5)", _no_collapse_low_lr),
    Prediction("f11e_dose_ladder", "11", "and CISPO and SAPO sit \"like GRPO\" or better", _like_grpo_or_better),
    Prediction("f11e_dose_ladder", "11", "the successors' KL50 lies between GRPO's and GSPO's anchor range and theirs "
               "(rollout-0 KL k3 0.05-0.24)", _kl50_in_range),
    Prediction("f11e_dose_ladder", "11", "GRPO's and GSPO's above every x of the ladder (no threshold in range)",
               _anchors_no_threshold),
    Prediction("f11e_dose_ladder", "11", "warm-up 80 delays the successors' collapse but does not save them",
               _warmup(80, "delays", any_of=False)),
    Prediction("f11e_dose_ladder", "11", "warm-up 320 saves at least one of them", _warmup(320, "saves", any_of=True)),
)  # fmt: skip

#: every scored prediction: findings 12a and 11e here, the others from their findings' modules
#: (``fN/predictions*.py``)
PREDICTIONS = _OWN + F2 + F5T + F5G + F5R + F6 + F10 + F10_ACCOUNTS + F10_BRANCHES + F11 + F12


def scored(ctx: dict) -> list[dict]:
    """Every prediction of :data:`PREDICTIONS` scored on the build's context: spec, finding, quote, result,
    evidence."""
    out = []
    for p in PREDICTIONS:
        result, evidence = p.score(ctx)
        if result not in RESULTS:
            raise ValueError(f"prediction of {p.spec} scored {result!r}, not one of {RESULTS}")
        out.append({"spec": p.spec, "finding": p.finding, "quote": p.quote, "result": result, "evidence": evidence})
    return out


def unscored_specs() -> list[str]:
    """The specs in data/specs/ whose description speaks of predictions that :data:`PREDICTIONS` does not score
    yet (sorted), leaving out those :data:`NONE_DECLARED` names."""
    import tomllib

    from gspo_lab.paths import data_dir

    done = {p.spec for p in PREDICTIONS} | set(NONE_DECLARED)
    out = []
    for path in sorted((data_dir() / "specs").glob("*.toml")):
        text = tomllib.loads(path.read_text()).get("description", "")
        if "predict" in text.lower() and path.stem not in done:
            out.append(path.stem)
    return out


def context(ctx: dict) -> dict:
    """The pages' context: every scored prediction as a table row (``rows``: spec, quote, result, evidence), the rows
    of each finding (``by_finding``), the count per result, the specs whose predictions are not scored yet (with the
    methods page's sentence on them, ``unscored_line``) and those that declare none (``none_declared``: spec,
    reason)."""
    done = scored(ctx)
    row = lambda p: [f"`{p['spec']}`", f'"{p["quote"]}"', f"**{p['result']}**", p["evidence"]]  # noqa: E731
    by_finding: dict[str, list] = {}
    for p in done:  # a prediction two specs declared alike and read on one statement (6c's) is printed once
        if row(p)[1:] not in (rows := by_finding.setdefault(p["finding"], [])):
            rows.append(row(p)[1:])
    counts = {r: sum(p["result"] == r for p in done) for r in RESULTS}
    return {"rows": [row(p) for p in done], "by_finding": by_finding, "counts": counts,
            "unscored": (left := unscored_specs()), "unscored_line": _unscored_line(left),
            "none_declared": sorted(NONE_DECLARED.items())}  # fmt: skip


def _unscored_line(specs: list[str]) -> str:
    """The methods page's sentence on the specs not scored yet (templates loop, never decide)."""
    if not specs:
        return "Every spec that declared a prediction has it scored here."
    names = ", ".join(f"`{s}`" for s in specs)
    return (f"Not yet scored: the predictions of {names}. Until they are, their finding pages print them in their "
            "design paragraphs without a result.")  # fmt: skip
