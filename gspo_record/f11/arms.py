"""Finding 11 settled (issue 37, part A): what in CISPO kills it, and whether one update per batch (M = 1) does too.
Rules declared in ``data/specs/f11f_cispo_arms.toml`` and ``data/specs/f11g_one_update.toml`` before their runs.

- :func:`arm_table`: f11f's runs (regime (b), fresh seeds 25-29), ``arm_id`` the objective with CISPO's tight cap
  named apart (``cispo@1.28``), and f11g's (M = 1 at M = 8's optimizer steps) with ``arm_id`` ``<objective>@M1``.
- :func:`arm_verdicts`: rule ``f11f.arm`` — finding 11's position per arm against this spec's GRPO and GSPO, beside
  collapse and freeze counts and the share of out-of-band tokens that keep their gradient.
- :func:`mask_verdict`: rule ``f11f.mask`` — the direct test of "never zeroing a token's gradient": MiniMax-M1's
  token mask on CISPO's weight.
- :func:`one_update_verdict`: rule ``f11g.one_update`` — on-policy updates (M = 1), where CISPO's and SAPO's gradients
  equal GRPO's up to the normaliser: does a successor still collapse?
"""

from __future__ import annotations

import math
from dataclasses import replace

import pandas as pd

from gspo_lab.experiments import failure
from gspo_lab.experiments.reading import remember
from gspo_record.f2.collapse import collapsed
from gspo_record.f11.regimes import per_rollout
from gspo_record.f11.successors import POSITION, position
from gspo_record.joint import Joint, combination, joint_outcome
from gspo_record.rules import COLLAPSES_AT_LEAST, PENDING, STABLE_AT_MOST, Rule, register
from gspo_record.tables import declared, spec

__all__ = ["SPEC_F", "SPEC_G", "TIGHT", "ARMS_F", "arm_table", "arm_verdicts", "mask_outcome", "mask_verdict",
           "one_update_verdict",
           "ARM", "MASK", "ONE_UPDATE"]  # fmt: skip

SPEC_F, SPEC_G = "f11f_cispo_arms", "f11g_one_update"
#: CISPO's tight cap in f11f (1 + DAPO's ε_high), named apart from the default cap's arm
TIGHT = 1.28
ARMS_F = ("cispo", f"cispo@{TIGHT:g}", "cispo_clip", "cispo_mask", "sapo")
SEEDS = 5
#: the rollouts over which the kept-gradient share is averaged: the first batches, before most runs collapse
EARLY = 10

ARM = register(
    Rule(
        "f11f.arm",
        "11",
        dict(POSITION.outcomes),
        {"LEVEL": 0.95},
        declared="data/specs/f11f_cispo_arms.toml, before its runs",
        marker="- f11f.arm per arm other than grpo and gspo",
        specs=(SPEC_F,),
    )
)  # fmt: skip
MASK = register(
    Rule(
        "f11f.mask",
        "11",
        {"supported": f"supported: with the mask CISPO stayed stable (≤ {STABLE_AT_MOST}/5 collapsed), without it it "
                      f"collapsed (≥ {COLLAPSES_AT_LEAST}/5), and it did not end below GRPO",
         "refuted": "refuted: CISPO collapses with the mask",
         "unresolved": "unresolved"},
        {"STABLE_AT_MOST": STABLE_AT_MOST, "COLLAPSES_AT_LEAST": COLLAPSES_AT_LEAST},
        declared="data/specs/f11f_cispo_arms.toml, before its runs (the reading it tests is post hoc)",
        marker="- f11f.mask (the reading of f11b/f11d",
        specs=(SPEC_F,),
    )
)  # fmt: skip
ONE_UPDATE = register(
    Rule(
        "f11g.one_update",
        "11",
        {"artefact": "artefact flagged: a successor collapses with on-policy updates",
         "kept": "off-policy account kept: nothing collapses with on-policy updates", "unresolved": "unresolved"},
        {"STABLE_AT_MOST": STABLE_AT_MOST, "COLLAPSES_AT_LEAST": COLLAPSES_AT_LEAST},
        declared="data/specs/f11g_one_update.toml, before its runs",
        marker="- f11g.one_update: \"artefact flagged\"",
        specs=(SPEC_G,),
    )
)  # fmt: skip


def _kept_share(source: str, key: str) -> float:
    """The mean over the first :data:`EARLY` rollouts of the share of out-of-band tokens that keep their gradient."""
    try:
        shares = failure.kept_grad_share(per_rollout(source, key))[:EARLY]
    except ValueError:
        return math.nan
    shares = [s for s in shares if s is not None]
    return sum(shares) / len(shares) if shares else math.nan


@remember()
def arm_table() -> pd.DataFrame:
    """f11f's and f11g's finished runs: arm_id, seed, late_acc, reward_auc, eval_final, collapsed, frozen, kept."""
    parts = []
    f = declared(spec(SPEC_F))
    if not f.empty:
        tight = pd.to_numeric(f["eps_high"], errors="coerce").eq(TIGHT) if "eps_high" in f else False
        parts.append(f.assign(arm_id=f["objective"].where(~tight, f"cispo@{TIGHT:g}"), source=SPEC_F))
    g = declared(spec(SPEC_G))
    if not g.empty:
        parts.append(g.assign(arm_id=g["objective"] + "@M1", source=SPEC_G))
    if not parts:
        return pd.DataFrame(columns=["arm_id", "seed", "late_acc", "collapsed", "frozen", "kept", "source"])
    table = pd.concat(parts, ignore_index=True)
    table["kept"] = [_kept_share(s, k) for s, k in zip(table["source"], table["key"], strict=True)]
    for column in ("collapsed", "frozen"):
        table[column] = table[column].fillna(False).astype(bool)
    return table


def _count(table: pd.DataFrame, arm: str) -> tuple[int, int]:
    runs = table[table["arm_id"] == arm]
    return int(runs["collapsed"].sum()), len(runs)


def arm_verdicts(table: pd.DataFrame) -> list[dict]:
    """Rule ``f11f.arm`` per arm of :data:`ARMS_F` with its collapse and freeze counts and kept-gradient share."""

    m8 = table[table["source"] == SPEC_F]
    out = []
    for arm in ARMS_F:
        runs = m8[m8["arm_id"] == arm]
        if runs.empty:
            continue
        verdict = position(m8, arm, rule=ARM)
        if len(runs) < SEEDS and verdict.outcome != PENDING:
            verdict = replace(verdict, provisional=f"{len(runs)} of {SEEDS} seeds finished")
        out.append({"arm": arm, "collapsed": int(runs["collapsed"].sum()), "frozen": int(runs["frozen"].sum()),
                    "n": len(runs), "kept": float(runs["kept"].median()), "verdict": verdict})  # fmt: skip
    return out


def mask_combine(mask: str, cispo: str, position: str) -> str:
    """``f11f.mask`` from its parts' outcomes: *refuted* when CISPO with the mask collapses (>= 4/5); *supported* when
    it is stable (<= 1/5), not below GRPO, and CISPO without it collapses; else *unresolved*."""
    if mask == "at_least":
        return "refuted"
    return "supported" if mask == "at_most" and position != "below_grpo" and cispo == "at_least" else "unresolved"


_MASK_PARTS = ("CISPO + mask", "CISPO", "CISPO + mask's late accuracy")
combination("f11f.mask", tuple(MASK.outcomes), _MASK_PARTS, shown=("supported",))(
    lambda o: mask_combine(*(o[k] for k in _MASK_PARTS))  # looked up when called: a mutant of it is read
)


def _mask_number(table: pd.DataFrame, metric: str = "late_acc"):
    """The joint number ``f11f.mask`` reads (both CISPO arms' collapse counts, the mask arm's position against GRPO
    and GSPO on ``metric``), None without both arms."""
    m8 = table[table["source"] == SPEC_F] if "source" in table else table
    (k_mask, n_mask), (k_cispo, n_cispo) = _count(m8, "cispo_mask"), _count(m8, "cispo")
    where = position(m8, "cispo_mask", metric, rule=ARM) if n_mask and n_cispo else None
    if where is None or where.outcome == PENDING:
        return None
    parts = (collapsed(k_mask, n_mask), collapsed(k_cispo, n_cispo), where.number)
    return Joint("f11f.mask", tuple(zip(_MASK_PARTS, parts, strict=True)))


def mask_outcome(table: pd.DataFrame, metric: str = "late_acc") -> str:  # noqa: D417
    """``f11f.mask``'s outcome on ``table`` (f11f's runs): PENDING without both CISPO arms."""
    number = _mask_number(table, metric)
    return PENDING if number is None else joint_outcome(number)


def mask_verdict(table: pd.DataFrame, id: str = "f11f.mask"):
    """Rule ``f11f.mask`` as statement ``id`` (the page's robustness pass re-reads it with each seed left out and on
    the secondary endpoints: gspo_record/robust.py)."""
    number = _mask_number(table)
    if number is None:
        return MASK.verdict(PENDING)
    done = int((table["arm_id"] == "cispo_mask").sum())
    return MASK.state(id, "does MiniMax-M1's token mask keep CISPO from collapsing without ending below GRPO?", number,
                      provisional="" if done >= SEEDS else f"{done} of {SEEDS} seeds finished")  # fmt: skip


def one_update_outcome(o: dict) -> str:
    """``f11g.one_update`` from the three collapse counts' outcomes: *artefact* when CISPO or SAPO collapses (>= 4/5),
    *kept* when all three are stable (<= 1/5), else *unresolved*."""
    if "at_least" in (o["CISPO"], o["SAPO"]):
        return "artefact"
    return "kept" if o["GRPO"] == o["CISPO"] == o["SAPO"] == "at_most" else "unresolved"


combination("f11g.one_update", tuple(ONE_UPDATE.outcomes), ("GRPO", "CISPO", "SAPO"), shown=("artefact",))(
    lambda o: one_update_outcome(o)  # noqa: PLW0108 - looked up when called: a mutant of it is what is read
)


def one_update_verdict(table: pd.DataFrame, id: str = "f11g.one_update"):
    """Rule ``f11g.one_update`` on f11g's runs (M = 1): a joint statement of the three collapse counts on the shared
    thresholds; PENDING until GRPO, CISPO and SAPO each have a run."""
    counts = {a: _count(table, f"{a}@M1") for a in ("grpo", "cispo", "sapo")}
    if any(n == 0 for _, n in counts.values()):
        return ONE_UPDATE.verdict(PENDING)
    done = min(n for _, n in counts.values())
    note = "" if done >= SEEDS else f"{done} of {SEEDS} seeds finished"
    number = Joint("f11g.one_update", tuple((a.upper(), collapsed(k, n)) for a, (k, n) in counts.items()))
    return ONE_UPDATE.state(id, "does a successor collapse with on-policy updates (M = 1)?", number, provisional=note)
