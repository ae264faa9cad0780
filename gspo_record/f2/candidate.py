"""Finding 2e, first part: the best clipped candidate of 2c (``f2_confirm_clip``) on 5 fresh seeds.

Rule ``f2.target`` (:func:`target_verdict`, ``f2_confirm_clip.toml`` and issue 9, before the runs): *the target is
met* when GRPO collapses in ≥ ``COLLAPSES_AT_LEAST`` of 5 and GSPO in ≤ ``TARGET_GSPO_AT_MOST``.

Rule ``f2e.reward_auc`` (:func:`reward_auc_verdict`), seen after the runs (post hoc, to be confirmed on fresh seeds
with the training-reward AUC declared as an endpoint in :mod:`gspo_lab.experiments.summary`): GSPO − GRPO of the mean
training reward per rollout, paired by seed; *higher* / *lower* when its 95 % interval excludes 0.
"""

from __future__ import annotations

import pandas as pd

from gspo_lab.experiments.endpoint_range import DIFFERENCE
from gspo_lab.experiments.stats import paired_diff, rate_table, seed_interval
from gspo_record.f2.collapse import collapsed
from gspo_record.fmt import diff_cell
from gspo_record.joint import Joint, combination
from gspo_record.rules import COLLAPSES_AT_LEAST, PENDING, TARGET_GSPO_AT_MOST, Rule, Verdict, register
from gspo_record.signed import SIGNED, signed
from gspo_record.statements import Count
from gspo_record.tables import F2, FIRST, collapse_rows, declared, progress, spec, with_base, with_endpoints

__all__ = [
    "TARGET",
    "REWARD_AUC",
    "REWARD_CONFIRM",
    "target_verdict",
    "reward_auc_verdict",
    "reward_confirm_verdict",
    "section",
]

TARGET = register(
    Rule(
        "f2.target",
        "2e",
        {"met": "the target is met", "not": "the target is not met"},
        {"COLLAPSES_AT_LEAST": COLLAPSES_AT_LEAST, "TARGET_GSPO_AT_MOST": TARGET_GSPO_AT_MOST},
        declared="issue 9 and data/specs/f2_confirm_clip.toml, before the runs",
        marker="Target (issue): GRPO collapsed",
        specs=(FIRST["candidate"], F2["candidate"]),
    )
)
REWARD_AUC = register(
    Rule(
        "f2e.reward_auc",
        "2e",
        {
            "higher": "GSPO's training reward over the run is higher",
            "lower": "GSPO's is lower",
            "none": "no difference shown",
        },
        {"LEVEL": 0.95},
        null="none",
        reads=SIGNED,
        declared="gspo_record/f2/candidate.py, after the results (post hoc; to confirm on fresh seeds)",
        marker="def reward_auc_verdict(diff: pd.Series) -> Verdict",
        specs=(FIRST["candidate"], F2["candidate"]),
        post_hoc=True,
    )
)


@combination("f2.target", tuple(TARGET.outcomes), ("GRPO", "GSPO"))
def _target(o: dict) -> str:
    """GRPO collapses (>= 4/5) and GSPO in none of its runs: met; else not."""
    return "met" if o["GRPO"] == "at_least" and o["GSPO"] == "at_most" else "not"


def target_verdict(k_grpo: int, n_grpo: int, k_gspo: int, n_gspo: int, seeds_declared: int, id: str = "f2.target"):
    """``f2.target`` on the candidate's collapsed counts (module docstring): statement ``id``, whose number prints
    GRPO's count against the shared thresholds and GSPO's against the target's (none of its runs)."""
    if not n_grpo or not n_gspo:
        return TARGET.verdict(PENDING)
    none = Count(k_gspo, n_gspo, TARGET_GSPO_AT_MOST + 1, TARGET_GSPO_AT_MOST)  # GSPO in none of its runs
    number = Joint("f2.target", (("GRPO", collapsed(k_grpo, n_grpo)), ("GSPO", none)))
    provisional = "" if min(n_grpo, n_gspo) >= seeds_declared else "not all seeds finished"
    return TARGET.state(id, "is the target regime met: GRPO collapses under a cap of 1, GSPO in none of its runs?",
                        number, provisional=provisional)  # fmt: skip


def reward_auc_verdict(diff: pd.Series, id: str = ""):
    """``f2e.reward_auc`` on per-seed differences GSPO − GRPO of the training-reward AUC: statement ``id``."""
    return signed(REWARD_AUC, diff, lambda x: seed_interval(x, DIFFERENCE), "is GSPO's training reward higher?", id,
                  DIFFERENCE)  # fmt: skip


REWARD_CONFIRM = register(
    Rule(
        "f2e.reward_confirm",
        "2e",
        {"confirmed": "confirmed", "not": "not confirmed"},
        {"LEVEL": 0.95},
        reads={"above": "confirmed", "below": "not", "none": "not"},
        declared="data/specs/f2c_reward_confirm.toml, before its runs",
        marker="Declared: the lead is confirmed if GSPO - GRPO reward AUC",
        specs=("f2c_reward_confirm",),
    )
)
#: the fresh-seed confirmation of the candidate's reward lead
CONFIRM_SPEC = "f2c_reward_confirm"


def reward_confirm_verdict(diff: pd.Series, id: str = ""):
    """``f2e.reward_confirm``: GSPO − GRPO reward AUC on the fresh seeds, interval above 0: statement ``id``."""
    return signed(REWARD_CONFIRM, diff, lambda x: seed_interval(x, DIFFERENCE), "is GSPO's reward lead confirmed?", id,
                  DIFFERENCE)  # fmt: skip


def _paired(table: pd.DataFrame, metric: str) -> pd.Series:
    return paired_diff(table.assign(arm_id=table["objective"]), "gspo", "grpo", metric)


def _reward(diff: pd.Series, verdict: Verdict) -> dict:
    return {"verdict": verdict, "diff": diff_cell(diff), "higher": int((diff > 0).sum()), "n": len(diff)}


def section() -> tuple[dict, dict]:
    s = spec(F2["candidate"])
    table = declared(s, "confirm")
    rates = rate_table(table, ["objective"]).set_index("objective")
    k, n = rates["k"].astype(int), rates["n"].astype(int)
    first = with_endpoints(spec(FIRST["candidate"]), declared(spec(FIRST["candidate"])))
    fresh_spec = spec(CONFIRM_SPEC)
    fresh = declared(fresh_spec)
    auc_first, auc, auc_fresh = (_paired(t, "reward_auc") for t in (first, table, fresh))
    fresh_rates = rate_table(fresh, ["objective"]).set_index("objective")
    ctx = {
        "progress": progress(s),
        "rows": collapse_rows(with_base(s, table, ("grad_clip",))),
        "verdict": target_verdict(k["grpo"], n["grpo"], k["gspo"], n["gspo"], len(s.confirm_seeds)),
        "grpo": f"{k['grpo']}/{n['grpo']}",
        "gspo": f"{k['gspo']}/{n['gspo']}",
        "final": diff_cell(_paired(table, "eval_final")),
        "late": diff_cell(_paired(table, "late_acc")),
        "reward_first": _reward(auc_first, reward_auc_verdict(auc_first, "f2e.reward_auc.first")),
        "reward": _reward(auc, reward_auc_verdict(auc, "f2e.reward_auc")),
        "confirm_progress": progress(fresh_spec),
        "reward_confirm": _reward(auc_fresh, reward_confirm_verdict(auc_fresh, "f2e.reward_confirm")),
        "confirm_late": diff_cell(_paired(fresh, "late_acc")),
        "confirm_collapsed": {o: f"{int(r['k'])}/{int(r['n'])}" for o, r in fresh_rates.iterrows()},
    }
    return ctx, {}
