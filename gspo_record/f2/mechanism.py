"""Finding 2e: the interventions on GRPO's spikes in the confirmed regime (M = 16, lr 5e-5), each declared before
its runs, and GRPO's grad-norm dose (the clipped candidate is :mod:`gspo_record.f2.candidate`).

Rules ``f2e.dual_clip``, ``f2e.clip10`` (``f2_mechanism.toml``) and ``f2e.clip30`` (``f2_clip_dose.toml``), by
:func:`intervention_verdict`: an arm at ≤ ``STABLE_AT_MOST`` of 5 collapsed gives the rule's *low* outcome, at ≥
``COLLAPSES_AT_LEAST`` its *high* outcome, in between *inconclusive*; dual-clip's low outcome also needs the largest
update's median norm below ``PEAK_GSPO_RANGE`` (towards GSPO's), else it is inconclusive.

Rule ``f2e.dose_confirm`` (``f2_clip_dose_confirm.toml``): the MoE/dense difference at grad clip 30 is *confirmed* when
on the fresh seeds the MoE collapses in ≥ ``COLLAPSES_AT_LEAST`` of 5 and the dense twin in ≤ ``STABLE_AT_MOST``.

Rule ``f2e.dose_trend`` (:func:`dose_trend_verdict`, post hoc): whether GRPO's late held-out accuracy rises as the cap
tightens.
"""

from __future__ import annotations

import pandas as pd

from gspo_lab.experiments.endpoint_range import DIFFERENCE
from gspo_lab.experiments.spec import cells
from gspo_lab.experiments.stats import paired_diff, rate_table, seed_interval
from gspo_record.f2.interventions import (
    _NAMES,
    DOSE_CONFIRM,
    INTERVENTIONS,
    dose_confirm_verdict,
    intervention_verdict,
)
from gspo_record.f2.spikes import plot_spikes
from gspo_record.fmt import mean_ci, num, summary
from gspo_record.joint import Joint, combination
from gspo_record.rules import (
    PENDING,
    Rule,
    class_verdict,
    null_words,
    register,
)
from gspo_record.statements import Count, Interval
from gspo_record.tables import (
    F2,
    MODELS,
    declared,
    mechanism_table,
    progress,
    run_endpoints,
    spec,
)

__all__ = ["INTERVENTIONS", "DOSE_CONFIRM", "intervention_verdict", "dose_confirm_verdict", "section"]

DOSE_TREND = register(
    Rule(
        "f2e.dose_trend",
        "2e",
        {
            "rises": "rises at every tighter cap",
            "overall": "rises from no cap to a cap of 1, not at every step",
            "none": "does not rise detectably",
        },
        {"LEVEL": 0.95},
        null="none",
        declared="gspo_record/f2/mechanism.py, after the results (post hoc)",
        marker="def dose_trend_verdict(late: pd.DataFrame) -> Verdict",
        specs=(F2["moe"], F2["dense"], F2["mechanism"], F2["dose"]),
        post_hoc=True,
    )
)
#: GRPO's grad-norm caps from none to the tightest, the dose's steps
CAPS = ("off", "30", "10", "1")


def dose_trend_outcome(ends: str, steps: str) -> str:
    """``f2e.dose_trend`` from its parts' outcomes: *none* unless the tightest − no-cap interval lies above 0; then
    *rises* when the mean rises at every step, else *overall*."""
    if ends != "above":
        return "none"
    return "rises" if steps == "at_least" else "overall"


_DOSE_PARTS = ("tightest − no cap", "steps where the mean rises")
combination("f2e.dose_trend", tuple(DOSE_TREND.outcomes), _DOSE_PARTS, shown=("rises", "overall"))(
    lambda o: dose_trend_outcome(*(o[k] for k in _DOSE_PARTS))  # looked up when called: a mutant of it is read
)


def dose_trend_verdict(late: pd.DataFrame, caps: tuple[str, ...] | None = None, id: str = "f2e.dose_trend"):
    """``f2e.dose_trend`` on one model's GRPO runs (columns clip in ``caps``, default :data:`CAPS`, from no cap to the
    tightest; seed, late_acc): *rises* when the mean late held-out accuracy grows at every tighter cap and the paired
    tightest − no-cap difference has its interval above 0; *overall* when only the latter holds; else *none*. A joint
    statement of that interval and the count of steps at which the mean rises (steps, not seeds: no rate)."""
    caps = caps or CAPS
    means = [late[late["clip"] == c]["late_acc"].mean() for c in caps]
    ends = paired_diff(late.assign(arm_id=late["clip"]), caps[-1], caps[0], "late_acc")
    if any(pd.isna(m) for m in means) or len(ends) < 2:
        return DOSE_TREND.verdict(PENDING)
    rising, steps = sum(a < b for a, b in zip(means, means[1:], strict=False)), len(means) - 1
    parts = (Interval.of(ends, lambda x: seed_interval(x, DIFFERENCE), bounds=DIFFERENCE),
             Count(rising, steps, steps, steps - 1, steps, wilson_shown=False))  # fmt: skip
    return DOSE_TREND.state(id, "does GRPO's late accuracy rise as the grad-norm cap tightens?",
                            Joint("f2e.dose_trend", tuple(zip(_DOSE_PARTS, parts, strict=True))),
                            words=null_words(DOSE_TREND, ends))  # fmt: skip


def _dose_confirm() -> dict:
    s = spec(F2["dose_confirm"])
    table = declared(s, "confirm")
    rates = rate_table(table, ["checkpoint"]).set_index("checkpoint")
    kn = {c: (int(r["k"]), int(r["n"])) for c, r in rates.iterrows()}
    (km, nm), (kd, nd) = kn.get("moe-sort", (0, 0)), kn.get("dense-sort", (0, 0))
    return {
        "moe": f"{km}/{nm}",
        "dense": f"{kd}/{nd}",
        "verdict": dose_confirm_verdict(km, nm, kd, nd, len(cells(s, "confirm"))),
    }


def _table_rows(table: pd.DataFrame) -> list[list]:
    rows = []
    for (model, _, arm, clip), g in table.groupby(["model", "order", "arm", "clip"], sort=False):
        peak = f"{num(g['peak'].median())} [{num(g['peak'].min())}–{num(g['peak'].max())}]"
        rows.append(
            [
                model,
                arm,
                clip,
                f"`{g['source'].iloc[0]}`",
                len(g),
                f"{int(g['collapsed'].sum())}/{len(g)}",
                mean_ci(summary(g["eval_final"])),
                num(g["typical"].median()),
                peak,
                num(g["early_above"].mean()),
            ]
        )
    return rows


def _verdicts(table: pd.DataFrame, seeds_declared: int) -> tuple[list[dict], list[dict]]:
    """Each intervention arm's verdict by its declared rule; for the cap of 30, its fresh seeds and the pooled 10."""
    fresh = declared(spec(F2["dose_confirm"]), "confirm").assign(model=lambda d: d["checkpoint"].map(MODELS))
    verdicts, pooled30 = [], []
    for model, g in table.groupby("model", sort=False):
        for (objective, clip), rule in INTERVENTIONS.items():
            arm = g[(g.objective == objective) & (g["clip"] == clip)]
            if arm.empty:
                continue
            k, n, peak = int(arm["collapsed"].sum()), len(arm), arm["peak"].median()
            verdicts.append(
                {
                    "model": model,
                    "name": _NAMES[(objective, clip)],
                    "k": k,
                    "n": n,
                    "peak": num(peak),
                    "verdict": intervention_verdict(rule, k, n, peak, seeds_declared, f"{rule.name}.{model}"),
                }
            )
            if clip == "30":
                again = fresh[fresh.model == model]
                kf, nf = int(again["collapsed"].sum()), len(again)
                pooled30.append(
                    {
                        "model": model,
                        "first": f"{k}/{n}",
                        "fresh": f"{kf}/{nf}",
                        "pooled": f"{k + kf}/{n + nf}",
                        "verdict": class_verdict(k + kf, n + nf, f"collapse.class.f2e.pooled30.{model}"),
                    }
                )
    return verdicts, pooled30


def _dose(table: pd.DataFrame) -> list[dict]:
    """GRPO's collapsed runs, final and late held-out accuracy as the cap tightens, per model, with the trend."""
    dose = []
    for model, g in table[table.objective == "grpo"].groupby("model", sort=False):
        steps = [
            {
                "clip": c,
                "k": int(d["collapsed"].sum()),
                "n": len(d),
                "final": num(d["eval_final"].mean()),
                "late": mean_ci(summary(d["late_acc"])),
            }
            for c in CAPS
            if len(d := g[g["clip"] == c])
        ]
        dose.append({"model": model, "steps": steps, "trend": dose_trend_verdict(g, id=f"f2e.dose_trend.{model}")})
    return dose


def section() -> tuple[dict, dict]:
    s = spec(F2["mechanism"])
    table = mechanism_table()
    late = [run_endpoints(src, k)["late_acc"] for src, k in zip(table["source"], table["key"], strict=True)]
    table = table.assign(late_acc=late)
    verdicts, pooled30 = _verdicts(table, len(s.confirm_seeds))
    ctx = {
        "progress": progress(s),
        "dose_progress": progress(spec(F2["dose"])),
        "rows": _table_rows(table),
        "verdicts": verdicts,
        "dose": _dose(table),
        "dose_confirm": _dose_confirm(),
        "pooled30": pooled30,
    }
    data = table[["model", "clip", "arm", "objective", "seed", "peak", "collapsed"]]
    return ctx, {"f2_mechanism": (data, plot_spikes)}
