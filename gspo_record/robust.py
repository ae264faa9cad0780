"""A robustness column for every verdict of the findings page (issue 22, item 2): which of a referee's first checks
change it.

Each section of the page (:data:`gspo_record.page.SECTIONS`) is read once as the page reads it, recording the
training seeds it reads (:func:`gspo_lab.experiments.reading.track`), then again under each *robustness reading*
(:mod:`gspo_lab.experiments.reading`):

* each of those seeds left out in turn (every training spec's cells of that seed);
* the declared secondary endpoint: ``late_acc`` read as the training-reward AUC;
* the final evaluation alone: ``late_acc`` read as the last evaluation's accuracy, endpoint v2's collapse flag as the
  last evaluation alone below its threshold.

The i-th verdict a section reads in one pass is its i-th in another (the passes read the same rules in the same
order; a reading under which a section reads other rules, or fails, is reported as *not re-read* for that section).
A verdict is **fragile** (:attr:`gspo_record.rules.Verdict.fragile`) when any reading changes its outcome,
*robust* otherwise. A section's own re-readings of a verdict (e.g. finding 10's declared leave-one-out loop, within
:func:`gspo_lab.experiments.reading.inner`) are not verdicts of the page and are neither counted nor marked; a
pending verdict has nothing to re-read.

Collapse counts sit on declared thresholds (≥ 4 of 5 collapses, ≤ 1 of 5 is stable, scaled to n), so a count at
its threshold reads otherwise with one of its seeds left out: it is fragile by this column's definition, and the
page says so.
"""

from __future__ import annotations

import multiprocessing
import os
from collections import Counter, defaultdict

import gspo_lab.experiments.reading as reading
from gspo_record.reread import SECONDS, SEEN, verdicts
from gspo_record.rules import PENDING

__all__ = ["readings", "robustness", "marks", "check_pairing", "summary"]


def readings(seeds: list[int]) -> list[tuple[str, dict]]:
    """The robustness readings of a section that read ``seeds``: (what the page calls it, reading's arguments)."""
    out = [(f"without seed {s}", {"drop_seed": int(s)}) for s in sorted(seeds)]
    return out + [(reading.ENDPOINTS[e], {"endpoint": e}) for e in ("auc", "final")]


def _read(name: str, section, **kw) -> tuple[list | None, str]:
    """One section's verdicts under one reading, or (None, why) when it fails."""
    with reading.reading(**kw):
        try:
            log, _ = verdicts({name: section})
        except Exception as error:  # noqa: BLE001 - reported on the page as "not re-read", never hidden
            return None, f"{type(error).__name__}: {str(error)[:80]}"
    return log.get(name, []), ""


#: what the worker processes read (set before they fork; :func:`_read_all`)
_TASKS: list = []


def workers() -> int:
    """Processes for the re-readings: ``GSPO_RECORD_WORKERS`` if set, else one per core this process may use (at
    most 2: each holds the build's memo). 1 reads them in this process."""
    if os.environ.get("GSPO_RECORD_WORKERS"):
        return max(1, int(os.environ["GSPO_RECORD_WORKERS"]))
    return min(2, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def _read_task(i: int) -> tuple[list | None, str, float]:
    name, section, kw = _TASKS[i]
    before = SECONDS[name]
    other, why = _read(name, section, **kw)
    return other, why, SECONDS[name] - before


def _read_all(sections: dict, todo: list) -> list[tuple[list | None, str]]:
    """Every (section, reading) of ``todo`` read, in order. The readings are independent (each sets its own reading
    and reads stored data through the build's memo), so with :func:`workers` > 1 they are shared among forked
    processes, which inherit the memo the page's own reading filled; their seconds are added to the build's timing
    (:data:`gspo_record.reread.SECONDS`). Without fork (or with one worker) they are read here, one after another."""
    global _TASKS
    _TASKS = [(name, sections[name], kw) for name, _, kw in todo]
    forked = workers() > 1 and len(_TASKS) > 1 and "fork" in multiprocessing.get_all_start_methods()
    try:
        if forked:
            with multiprocessing.get_context("fork").Pool(workers()) as pool:
                done = pool.map(_read_task, range(len(_TASKS)), chunksize=1)
        else:
            done = [_read_task(i) for i in range(len(_TASKS))]
    finally:
        _TASKS = []
    if forked:  # the children's seconds (read in this process, _read_task's verdicts() already added them)
        for (name, *_), (_, _, seconds) in zip(todo, done, strict=True):
            SECONDS[name] += seconds
    return [(other, why) for other, why, _ in done]


def robustness(sections: dict) -> dict:
    """Every section's verdicts (``base``: ``{section: [(rule, outcome, where), ...]}``) and seeds read (``seeds``),
    the readings under which each verdict changes (``flips``: ``{section: {i: [reading: new label, ...]}}``), the
    readings each section could not be re-read under (``unread``: ``{section: [reading: why]}``) and how many
    readings each section was put through (``tried``)."""
    base, seeds = {}, {}
    for name, section in sections.items():
        with reading.track() as seen:
            log, _ = verdicts({name: section})
        base[name], seeds[name] = log.get(name, []), sorted(seen)
    flips: dict[str, dict[int, list[str]]] = defaultdict(dict)
    unread: dict[str, list[str]] = defaultdict(list)
    tried = {}
    live = {name: [i for i, (_, outcome, _) in enumerate(base[name]) if outcome != PENDING] for name in sections}
    todo = [(name, what, kw) for name in sections if live[name] for what, kw in readings(seeds[name])]
    results = iter(_read_all(sections, todo))
    for name in sections:
        tried[name] = sum(task[0] == name for task in todo)
        for what, _kw in (task[1:] for task in todo if task[0] == name):
            other, why = next(results)
            if other is not None and [r for r, *_ in other] != [r for r, *_ in base[name]]:
                other, why = None, "it reads other rules"
            if other is None:
                unread[name].append(f"{what}: {why}")
                continue
            for i in live[name]:
                rule, outcome, _ = base[name][i]
                if other[i][1] != outcome:
                    new = SEEN[rule].outcomes.get(other[i][1], other[i][1])
                    flips[name].setdefault(i, []).append(f"{what}: {new}")
    return {"base": base, "seeds": seeds, "flips": dict(flips), "unread": dict(unread), "tried": tried}


def check_pairing(result: dict, rows: list[dict]) -> None:
    """RuntimeError unless the page's pass (``rows``: :func:`gspo_record.reread.pair`'s per section and rule
    counts) read every section's rules as often as the robustness pass did: the marks go by position."""
    base = Counter((name, rule) for name, log in result["base"].items() for rule, *_ in log)
    page = Counter({(r["section"], r["rule"]): r["read"] for r in rows})
    if base != page:
        differ = sorted(k for k in base | page if base[k] != page[k])
        raise RuntimeError(f"the page's pass read other verdicts than the robustness pass: {differ[:3]}")


def marks(result: dict) -> dict:
    """``{section: {i: flips}}`` for :func:`gspo_record.reread.verdicts`."""
    return result["flips"]


def summary(result: dict, limit: int = 4) -> dict:
    """The page's robustness column: per rule, verdicts read and fragile; every fragile verdict (section, rule,
    where, verdict, the readings that change it, at most ``limit`` shown with how many more); the sections not
    re-read under some reading; totals."""
    per_rule: dict[str, list[int]] = {}
    fragile = []
    for name, log in result["base"].items():
        for i, (rule, outcome, where) in enumerate(log):
            if outcome == PENDING:
                continue
            counts = per_rule.setdefault(rule, [0, 0])
            counts[0] += 1
            if i in result["flips"].get(name, {}):
                counts[1] += 1
                changes = result["flips"][name][i]
                more = f"; and {len(changes) - limit} more" if len(changes) > limit else ""
                shown = "; ".join(changes[:limit]) + more
                fragile.append([name, f"`{rule}`", where or f"reading {i + 1}", SEEN[rule].outcomes[outcome], shown])
    rules = [[f"`{r}`", n, k] for r, (n, k) in sorted(per_rule.items())]
    unread = [[name, "; ".join(v)] for name, v in result["unread"].items()]
    return {
        "rules": rules,
        "fragile": fragile,
        "unread": unread,
        "read": sum(n for _, n, _ in rules),
        "fragile_count": len(fragile),
        "passes": sum(result["tried"].values()),
    }
