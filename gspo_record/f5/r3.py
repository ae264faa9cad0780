"""Finding 5, the sampler's side (issue 51, item 1): R3, the bf16 sampler's routing replayed in the trainer, in
training (``data/specs/f5r_routing_replay.toml``), its declared rule and predictions.

Rule ``f5r.r3`` (declared in the spec before its runs), per objective: R3 − no R3 in final held-out accuracy, paired
by seed, the page's 95 % interval on [−1, 1]: *higher* above 0, *lower* below, *none* otherwise.
The spec's own re-readings (training-reward AUC, the mean of the run's evaluations, each seed left out) are printed
beside it (:func:`declared_flips`); the page's robustness column adds its own.
"""

from __future__ import annotations

import pandas as pd

from gspo_lab.experiments.endpoint_range import DIFFERENCE
from gspo_lab.experiments.stats import seed_interval
from gspo_record.f5 import toggle
from gspo_record.fmt import num
from gspo_record.prediction import Prediction, parts
from gspo_record.rules import Rule, register
from gspo_record.signed import SIGNED, signed

__all__ = ["SPEC", "R3", "runs", "r3_verdict", "declared_flips", "section", "PREDICTIONS"]

SPEC = "f5r_routing_replay"
R3 = register(
    Rule(
        "f5r.r3",
        "5",
        {"higher": "higher with R3", "lower": "lower with R3", "none": "no difference shown"},
        {"LEVEL": 0.95},
        null="none",
        reads=SIGNED,
        declared="data/specs/f5r_routing_replay.toml, before its runs",
        marker="Declared rule f5r.r3, per objective",
        specs=(SPEC,),
    )
)


def runs() -> pd.DataFrame:
    """The spec's finished runs (:func:`.toggle.runs`): arm_id "grpo" / "grpo+r3", replay = R3 on."""
    return toggle.runs(SPEC, "sampler_routing_replay", "+r3")


def r3_verdict(diff: pd.Series, id: str = ""):
    """``f5r.r3`` on per-seed R3 − no R3 differences: statement ``id``."""
    return signed(R3, diff, lambda x: seed_interval(x, DIFFERENCE), "does R3 change where it ends?", id,
                  DIFFERENCE)  # fmt: skip


def declared_flips(t: pd.DataFrame, objective: str, outcome: str) -> list[str]:
    """The spec's re-readings under which ``f5r.r3`` leaves ``outcome`` (:func:`.toggle.declared_flips`)."""
    return toggle.declared_flips(t, objective, outcome, r3_verdict, "+r3")


def section() -> tuple[dict, dict]:
    return toggle.section(SPEC, runs(), r3_verdict, "+r3", "f5r.r3")


def _read(ctx: dict, objective: str) -> dict:
    return toggle.read(ctx, "f5r", SPEC, objective)


def _reads_none(objective: str):
    def score(ctx: dict) -> tuple[str, str]:
        v = _read(ctx, objective)
        s = ctx["book"][v["verdict"].id]
        return parts([(s.rule_outcome == "none", f"{objective.upper()} R3 − no R3 {s.number.brief}: {s.label}")])

    score.__doc__ = f'{objective.upper()}: f5r.r3 reads "none".'
    return score


def _gspo_clips_as_much(ctx: dict) -> tuple[str, str]:
    """(3) GSPO with R3 clips at least 0.8x the tokens it clips without, over the run."""
    v = _read(ctx, "gspo")
    return parts([(v["clip_on"] >= 0.8 * v["clip_off"], f"GSPO clipped tokens {num(v['clip_on'])} with R3, "
                   f"{num(v['clip_off'])} without")])  # fmt: skip


PREDICTIONS = (
    Prediction(SPEC, "5r", 'GRPO: f5r.r3 reads "none"', _reads_none("grpo")),
    Prediction(SPEC, "5r", 'GSPO: f5r.r3 reads "none"', _reads_none("gspo")),
    Prediction(SPEC, "5r", "GSPO with R3 clips at least 0.8x the tokens it clips without, over the run",
               _gspo_clips_as_much),
)  # fmt: skip
