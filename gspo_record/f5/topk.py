"""Finding 5, the sampler's side (issue 50, item 1): top-k sampling's biased ratio and sampling replay in training
(``data/specs/f5t_topk_replay.toml``), its declared rule and predictions.

Rule ``f5t.replay`` (declared in the spec before its runs), per objective: replay − no replay in final held-out
accuracy, paired by seed, the page's 95 % interval on [−1, 1]: *higher* above 0, *lower* below, *none* otherwise.
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

__all__ = ["SPEC", "REPLAY", "runs", "replay_verdict", "declared_flips", "section", "PREDICTIONS"]

SPEC = "f5t_topk_replay"
REPLAY = register(
    Rule(
        "f5t.replay",
        "5",
        {"higher": "higher with sampling replay", "lower": "lower with sampling replay", "none": "no difference shown"},
        {"LEVEL": 0.95},
        null="none",
        reads=SIGNED,
        declared="data/specs/f5t_topk_replay.toml, before its runs",
        marker="Declared rule f5t.replay, per objective",
        specs=(SPEC,),
    )
)


def runs() -> pd.DataFrame:
    """The spec's finished runs (:func:`.toggle.runs`): arm_id "grpo" / "grpo+replay", replay = sampling replay on."""
    return toggle.runs(SPEC, "sampling_replay", "+replay")


def replay_verdict(diff: pd.Series, id: str = ""):
    """``f5t.replay`` on per-seed replay − no replay differences: statement ``id``."""
    return signed(REPLAY, diff, lambda x: seed_interval(x, DIFFERENCE), "does sampling replay change where it ends?",
                  id, DIFFERENCE)  # fmt: skip


def declared_flips(t: pd.DataFrame, objective: str, outcome: str) -> list[str]:
    """The spec's re-readings under which ``f5t.replay`` leaves ``outcome`` (:func:`.toggle.declared_flips`)."""
    return toggle.declared_flips(t, objective, outcome, replay_verdict, "+replay")


def section() -> tuple[dict, dict]:
    return toggle.section(SPEC, runs(), replay_verdict, "+replay", "f5t.replay")


def _read(ctx: dict, objective: str) -> dict:
    return toggle.read(ctx, "f5t", SPEC, objective)


def _gspo_clips_more(ctx: dict) -> tuple[str, str]:
    """(1) GSPO without replay clips at least 3x the tokens it clips with replay, over the run."""
    v = _read(ctx, "gspo")
    return parts([(v["clip_off"] >= 3 * v["clip_on"], f"GSPO clipped tokens {num(v['clip_off'])} without replay, "
                   f"{num(v['clip_on'])} with it")])  # fmt: skip


def _grpo_unchanged(ctx: dict) -> tuple[str, str]:
    """(2) GRPO: f5t.replay reads "none"."""
    v = _read(ctx, "grpo")
    s = ctx["book"][v["verdict"].id]
    return parts([(s.rule_outcome == "none", f"GRPO replay − no replay {s.number.brief}: {s.label}")])


PREDICTIONS = (
    Prediction(SPEC, "5t", "GSPO without replay clips at least 3x the tokens it clips with replay, over the run",
               _gspo_clips_more),
    Prediction(SPEC, "5t", 'GRPO: f5t.replay reads "none"', _grpo_unchanged),
)  # fmt: skip
