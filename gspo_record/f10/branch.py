"""Finding 10's "why" by paired branching (issue 22, item 5): ``data/specs/f10z_branch.toml``. GRPO's MoE runs on
seeds 60-64 are the trunks; from each trunk's saved state after rollouts 10, 20 and 30 a branch continues under a cap
of 10 (CAP10), skipping updates above 10 (SKIP10), GSPO's gradient norm (GSPO_NORM) or GSPO itself (GSPO), paired
with its own trunk (the unchanged branch).

Rule ``f10z.branch`` per arm and branch point (declared in the spec, before its runs): branch − trunk in late
held-out accuracy over the five seeds, *protects* / *harms* when the 95 % Student-t interval lies above / below 0.
Rule ``f10z.paired``: *tighter* when the paired differences' standard deviation is below half the spread the same
difference has between unpaired runs, sqrt(var(branch) + var(trunk)) over the same seeds. Beside them: whether each
trunk reproduced the stored run of the same config (``f10t_two_by_two_ten``'s arm A), as it must.
"""

from __future__ import annotations

import math

import pandas as pd

from gspo_lab.experiments.endpoint_range import DIFFERENCE
from gspo_lab.experiments.stats import declared_t_interval, paired_diff
from gspo_record.f10.ten import paired_flips
from gspo_record.f10.why import SPECS
from gspo_record.fmt import diff_cell, num, off, robustness
from gspo_record.kinds import Band
from gspo_record.rules import PENDING, Rule, register
from gspo_record.signed import SIGNED, signed
from gspo_record.tables import progress, spec

__all__ = ["SPEC", "ARMS", "BRANCH", "PAIRED", "POINTS", "arm_of", "branch_verdict", "paired_verdict", "spreads",
           "reproduced", "section"]  # fmt: skip

SPEC = SPECS["branch"]
ARMS = ("CAP10", "SKIP10", "GSPO_NORM", "GSPO")
POINTS = (10, 20, 30)
#: f10z.paired: "tighter" below this share of the unpaired spread (declared in the spec)
TIGHTER = 0.5
_DECLARED = f"data/specs/{SPEC}.toml, before its runs"

BRANCH = register(
    Rule(
        "f10z.branch",
        "10",
        {"higher": "protects", "lower": "harms", "none": "no difference shown"},
        {"LEVEL": 0.95},
        _DECLARED + " (Student-t interval, five paired seeds)",
        "f10z.branch per arm and branch point",
        null="none",
        reads=SIGNED,
        specs=(SPEC,),
    )
)
PAIRED = register(
    Rule(
        "f10z.paired",
        "10",
        {"tighter": "paired differences tighter than unpaired", "not": "not tighter than unpaired"},
        {"TIGHTER": TIGHTER},
        _DECLARED,
        "f10z.paired per arm and branch point",
        specs=(SPEC,),
    )
)


def arm_of(row) -> str:
    """A run's arm: ``TRUNK`` or ``<arm>@<branch point>`` (from its grid values)."""
    if off(row["branch_at"]) or int(row["branch_at"]) == 0:
        return "TRUNK"
    if not off(row["grad_clip"]):
        name = "CAP10"
    elif not off(row["grad_skip"]):
        name = "SKIP10"
    elif not off(row["norm_of"]):
        name = "GSPO_NORM"
    else:
        name = "GSPO"
    return f"{name}@{int(row['branch_at'])}"


def branch_verdict(diff: pd.Series, id: str = ""):
    """``f10z.branch`` on per-seed branch − trunk differences (declared Student-t; pending below two seeds):
    statement ``id``."""
    return signed(BRANCH, diff, lambda x: declared_t_interval(x, DIFFERENCE), "does the branch end above its trunk?",
                  id, DIFFERENCE)  # fmt: skip


def spreads(m: pd.DataFrame, arm: str, column: str = "late_acc") -> tuple[float, float]:
    """(paired, unpaired): the standard deviation over seeds of branch − trunk, and sqrt(var(branch) + var(trunk))
    over the same seeds."""
    wide = m.pivot_table(index="seed", columns="arm_id", values=column, aggfunc="first")
    if arm not in wide or "TRUNK" not in wide:
        return math.nan, math.nan
    pair = wide[[arm, "TRUNK"]].dropna()
    return float((pair[arm] - pair["TRUNK"]).std()), float(math.sqrt(pair[arm].var() + pair["TRUNK"].var()))


def paired_verdict(paired: float, unpaired: float, id: str = "f10z.paired"):
    """``f10z.paired`` on the two spreads (pending when either is undefined): statement ``id`` about the paired
    spread against the declared share of the unpaired one, "tighter" below it."""
    if not (math.isfinite(paired) and math.isfinite(unpaired)):
        return PAIRED.verdict(PENDING)
    limit = TIGHTER * unpaired
    number = Band(paired, limit, math.inf, "sd paired", f"{num(limit)} ({TIGHTER:g} × sd unpaired)")
    return PAIRED.state(id, "does pairing by seed tighten the difference's spread?", number,
                        reads={"below": "tighter", "inside": "not"})  # fmt: skip


def reproduced(table: pd.DataFrame, m: pd.DataFrame) -> str:
    """How many trunks equal the stored run of their config (``f10t_two_by_two_ten``'s arm A, same seed) on late
    accuracy, final evaluation and reward AUC: "k of n"."""
    stored = table[(table["source"] == SPECS["ten"]) & (table["arm_id"] == "A") & (table["model"] == "MoE")]
    trunks = m[m["arm_id"] == "TRUNK"]
    cols = ["late_acc", "eval_final", "reward_auc"]
    both = trunks.merge(stored, on="seed", suffixes=("", "_stored"))
    same = sum(all(r[c] == r[f"{c}_stored"] for c in cols) for _, r in both.iterrows())
    return f"{same} of {len(trunks)}"


def section(table: pd.DataFrame) -> dict:
    """Per arm and branch point: branch − trunk, ``f10z.branch`` with its robustness, the two spreads with
    ``f10z.paired``, collapsed k/n; the trunks' reproduction."""
    m = table[table["source"] == SPEC]
    rows, verdicts = [], []
    for point in POINTS:
        for arm in ARMS:
            name = f"{arm}@{point}"
            if not (m["arm_id"] == name).any():
                continue
            diff = paired_diff(m, name, "TRUNK", "late_acc")
            verdict = branch_verdict(diff, f"f10z.branch.{name}")
            measure = lambda runs, column, n=name: paired_diff(runs, n, "TRUNK", column)  # noqa: E731
            flips = [] if verdict.outcome == PENDING else paired_flips(measure, branch_verdict, m, verdict.outcome)
            paired, unpaired = spreads(m, name)
            tight = paired_verdict(paired, unpaired, f"f10z.paired.{name}")
            g = m[m["arm_id"] == name]
            sure = robustness(flips)
            rows.append([arm, point, diff_cell(diff), verdict.short, sure, num(paired), num(unpaired), tight.short,
                         f"{int(g['collapsed'].sum())}/{len(g)}"])  # fmt: skip
            verdicts.append({"arm": arm, "point": point, "verdict": verdict, "paired": tight})
    trunks = m[m["arm_id"] == "TRUNK"]
    header = ["arm", "branch point", "branch − trunk, late held-out acc. (seeds 60-64)", "f10z.branch", "robustness",
              "sd paired", "sd unpaired", "f10z.paired", "collapsed"]  # fmt: skip
    return {
        "progress": progress(spec(SPEC)),
        "rows": rows,
        "verdicts": verdicts,
        "header": header,
        "trunk_collapsed": f"{int(trunks['collapsed'].sum())}/{len(trunks)}",
        "reproduced": reproduced(table, m),
    }
