"""Finding 10's branches after a collapse's onset (issue 22, item 5, stage 2): ``data/specs/f10z_onset_branch.toml``.

GRPO's MoE runs on seeds 60-64, now 120 rollouts long, are the trunks; each is branched at the first multiple of 10 at
or after its onset (finding 9's definition, read on the stored 80-rollout runs) under a cap of 10 (CAP10) or GSPO,
paired with its own unchanged trunk. Is a collapse reversible here?

Endpoints (declared in the spec): *after*, the mean held-out accuracy of the evaluations at rollouts 100-120; *pre*,
the trunk's mean held-out accuracy at rollouts 10-50. Rule ``f10z.reversible`` per arm, Student-t 95 % intervals over
the seeds of lift = branch after − trunk after and gap = trunk pre − branch after: *reversed* when lift's interval
lies above 0 and gap's does not; *partly reversed* when both lie above 0; *no recovery shown* when lift's does not.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd

from gspo_lab.experiments.endpoint_range import DIFFERENCE
from gspo_lab.experiments.spec import cell_key, cells
from gspo_lab.experiments.stats import declared_t_interval, paired_diff, seed_interval
from gspo_lab.experiments.store import load_result, result_path, results_dir, stored_files
from gspo_lab.experiments.summary import endpoint_v2
from gspo_record.f10.ten import reread_flips
from gspo_record.facts import PrintedCount, record
from gspo_record.fmt import diff_cell, robustness
from gspo_record.joint import Joint, combination
from gspo_record.rules import PENDING, Rule, consistent, consistent_label, majority, register
from gspo_record.statements import Interval
from gspo_record.tables import progress, spec

__all__ = ["SPEC", "ARMS", "AFTER", "PRE", "REVERSIBLE", "arm_of", "endpoints", "runs", "reversible_verdict",
           "read", "reproduced", "section"]  # fmt: skip

SPEC = "f10z_onset_branch"
ARMS = ("CAP10", "GSPO")
#: the evaluations averaged into *after* and *pre* (rollouts; declared in the spec)
AFTER = (100, 110, 120)
PRE = (10, 20, 30, 40, 50)
#: the training-reward windows of the secondary reading, [start, stop) rollouts (declared in the spec)
REWARD_AFTER, REWARD_PRE = (100, 120), (10, 50)
#: the stored 80-rollout runs each trunk's first 80 rollouts must reproduce (stage 1's trunks, same configs)
STORED, STORED_ROLLOUTS = "f10z_branch", 80
#: the *pre* column each reading compares with (``reread_flips``'s columns)
_PRE_OF = {"late_acc": "pre_acc", "eval_final": "pre_acc", "reward_auc": "pre_reward"}

REVERSIBLE = register(
    Rule(
        "f10z.reversible",
        "10",
        {"reversed": "reversed", "partly": "partly reversed", "none": "no recovery shown"},
        {"LEVEL": 0.95},
        f"data/specs/{SPEC}.toml, before its runs (Student-t intervals, five paired seeds)",
        "f10z.reversible per arm",
        null="none",
        null_count="lift",
        specs=(SPEC,),
    )
)


def arm_of(point: dict) -> str:
    """A run's arm from its grid values: ``TRUNK``, ``CAP10`` or ``GSPO``."""
    if not point.get("branch_at"):
        return "TRUNK"
    return "GSPO" if point.get("objective") == "gspo" else "CAP10"


def _mean_at(rollouts, values, wanted) -> float:
    picked = [v for r, v in zip(rollouts, values, strict=False) if r in wanted and v is not None]
    return float(np.mean(picked)) if len(picked) == len(wanted) else math.nan


def endpoints(result: dict) -> dict:
    """One stored run's declared endpoints: ``late_acc`` (*after*), ``reward_auc`` (training reward over rollouts
    100-119), ``eval_final`` (the evaluation at rollout 120), ``pre_acc`` and ``pre_reward`` (*pre*, held-out and
    training reward); NaN where the run lacks them."""
    ev, per = result["eval"], result["per_rollout"]
    acc, reward = ev["eval/accuracy_sampled"], per["reward/mean:mean"]
    return {
        "late_acc": _mean_at(ev["rollout"], acc, AFTER),
        "reward_auc": _mean_at(per["rollout"], reward, range(*REWARD_AFTER)),
        "eval_final": _mean_at(ev["rollout"], acc, AFTER[-1:]),
        "pre_acc": _mean_at(ev["rollout"], acc, PRE),
        "pre_reward": _mean_at(per["rollout"], reward, range(*REWARD_PRE)),
    }


def runs() -> pd.DataFrame:
    """One row per finished cell: arm_id, seed, branch_at, collapsed (endpoint v2 at rollout 120, the page's: the last
    two evaluations below half the pooled cold start; issue 35, it read the v1 flag before), ``collapsed_v1`` (the
    stored flag) and :func:`endpoints`; a branch's *pre* columns hold its trunk's (the same state up to the branch
    point)."""
    from gspo_lab.experiments.read import cold_start_key, cold_starts

    rows, pooled = [], cold_starts()
    for cell in cells(spec(SPEC), "confirm"):
        if (path := result_path(cell)).exists():
            result, c = load_result(path), cell.cfg
            v2 = endpoint_v2(result, pooled[cold_start_key(c)]["accuracy"])["collapsed"]
            rows.append({"arm_id": arm_of(cell.point), "seed": cell.seed, "branch_at": c.branch_at, "collapsed": v2,
                         "collapsed_v1": bool(result["summary"]["collapsed"]), **endpoints(result)})  # fmt: skip
    columns = ["arm_id", "seed", "branch_at", "collapsed", "collapsed_v1", *_PRE_OF, "pre_acc", "pre_reward"]
    m = pd.DataFrame(rows, columns=columns)
    trunk = m[m["arm_id"] == "TRUNK"].set_index("seed")
    for column in ("pre_acc", "pre_reward"):
        m[column] = m["seed"].map(trunk[column]) if len(trunk) else math.nan
    return m


def reversible_outcome(lift: str, gap: str) -> str:
    """``f10z.reversible`` from its intervals' outcomes: *none* unless the lift lies above 0; then *partly* while the
    gap to the level before the collapse lies above 0, else *reversed*."""
    if lift != "above":
        return "none"
    return "partly" if gap == "above" else "reversed"


combination("f10z.reversible", tuple(REVERSIBLE.outcomes), ("lift", "gap to before"), shown=("partly", "reversed"))(
    lambda o: reversible_outcome(o["lift"], o["gap to before"])  # looked up when called: a mutant of it is read
)


def reversible_verdict(lift: pd.Series, gap: pd.Series, id: str = ""):
    """``f10z.reversible`` on per-seed lift (branch after − trunk after) and gap (trunk pre − branch after): a joint
    statement of their declared Student-t intervals (pending below two seeds of each)."""
    if min(len(lift), len(gap)) < 2:
        return REVERSIBLE.verdict(PENDING)
    parts = tuple((name, Interval.of(d, lambda x: declared_t_interval(x, DIFFERENCE), bounds=DIFFERENCE))
                  for name, d in (("lift", lift), ("gap to before", gap)))  # fmt: skip
    words = dict(REVERSIBLE.outcomes)  # "no recovery shown" says so when every seed's lift shares a side (issue 35)
    count = consistent(lift)
    words["none"] = consistent_label(count) if count else f"{words['none']} (lift {majority(lift)})"
    return REVERSIBLE.state(id or REVERSIBLE.name, "does the branch recover after the onset?",
                            Joint("f10z.reversible", parts), words=words)  # fmt: skip


def read(m: pd.DataFrame, arm: str, column: str = "late_acc", id: str = "") -> tuple:
    """(lift, gap, verdict) of one arm under one reading (``column``: ``late_acc``, ``reward_auc``, ``eval_final``)."""
    lift = paired_diff(m, arm, "TRUNK", column)
    branch = m[m["arm_id"] == arm].set_index("seed")
    gap = (branch[_PRE_OF[column]] - branch[column]).reindex(lift.index).dropna()
    return lift, gap, reversible_verdict(lift, gap, id)


def reproduced() -> str:
    """How many trunks' first 80 rollouts equal the stored 80-rollout run of their config (training reward per
    rollout and the held-out evaluations): "k of n"."""
    same, trunks = 0, [c for c in cells(spec(SPEC), "confirm") if not c.cfg.branch_at and result_path(c).exists()]
    for cell in trunks:
        found = stored_files(results_dir(STORED), cell_key(replace(cell.cfg, rollouts=STORED_ROLLOUTS)))
        if not found:
            continue
        old, new = load_result(found[0]), load_result(result_path(cell))
        n, e = STORED_ROLLOUTS, len(old["eval"]["rollout"])
        rewards = new["per_rollout"]["reward/mean:mean"][:n] == old["per_rollout"]["reward/mean:mean"]
        evals = new["eval"]["eval/accuracy_sampled"][:e] == old["eval"]["eval/accuracy_sampled"]
        same += bool(rewards and evals)
    return f"{same} of {len(trunks)}"


def section() -> dict:
    """Per arm: lift and gap with ``f10z.reversible`` and its robustness, collapsed k/n; the trunks' own after − pre,
    their branch points and their reproduction of the stored runs."""
    m = runs()
    rows, verdicts = [], []
    for arm in ARMS:
        lift, gap, verdict = read(m, arm, id=f"f10z.reversible.{arm}")
        flips = [] if verdict.outcome == PENDING else reread_flips(lambda r, c, a=arm: read(r, a, c)[2], m,
                                                                    verdict.outcome)  # fmt: skip
        sure = "—" if verdict.outcome == PENDING else robustness(flips)
        rows.append([arm, diff_cell(lift, DIFFERENCE), diff_cell(gap, DIFFERENCE), verdict.short, sure,
                     _count(m, arm, f"10f table, {arm}, collapsed at 120")])  # fmt: skip
        verdicts.append({"arm": arm, "verdict": verdict})
    trunk = m[m["arm_id"] == "TRUNK"]
    points = m[m["arm_id"] != "TRUNK"].drop_duplicates("seed").sort_values("seed")
    return {
        "progress": progress(spec(SPEC)),
        "header": [
            "arm",
            "lift: branch − trunk, after (rollouts 100-120)",
            "gap: trunk pre − branch after",
            "f10z.reversible",
            "robustness",
            "collapsed at 120",
        ],  # fmt: skip
        "rows": rows,
        "verdicts": verdicts,
        "trunk_change": diff_cell((trunk["late_acc"] - trunk["pre_acc"]).dropna(), DIFFERENCE),
        # the same number as an interval, for the prediction that reads it (not the printed cell read back)
        "trunk_interval": _interval((trunk["late_acc"] - trunk["pre_acc"]).dropna()),
        "trunk_collapsed": _count(m, "TRUNK", "10f text, trunks collapsed at rollout 120"),
        "points": ", ".join(f"seed {s}: {b}" for s, b in zip(points["seed"], points["branch_at"], strict=True)) or "—",
        "reproduced": reproduced(),
    }


def _interval(diff: pd.Series) -> Interval | None:
    """The trunks' after − pre as the page's interval on the difference range (what ``diff_cell`` prints)."""
    return Interval.of(diff, lambda x: seed_interval(x, DIFFERENCE), bounds=DIFFERENCE) if len(diff) >= 2 else None


def _count(m: pd.DataFrame, arm: str, where: str) -> str:
    """``arm``'s collapsed k/n at rollout 120 on endpoint v2 (the page's), recorded for the referee lint."""
    g = m[m["arm_id"] == arm]
    k, n = int(g["collapsed"].sum()), len(g)
    record(PrintedCount("f10_why.md", where, k, n, endpoint="v2"))
    return f"{k}/{n}"
