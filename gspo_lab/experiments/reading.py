"""How the stored results are read, swapped in for a referee's robustness checks (issue 22, item 2).

A *reading* is one of:

* the page's own: every stored training seed, the late held-out accuracy as ``late_acc``;
* ``without seed S``: every spec's cells of seed S left out (:func:`gspo_lab.experiments.spec.cells` skips them), the
  pooled cold starts excepted (:data:`NOT_REPLICATES`: endpoint v2's shared reference, not a replicate);
* the declared secondary endpoint: ``late_acc`` replaced by the training-reward AUC (the mean training reward per
  rollout, :func:`gspo_lab.experiments.summary.endpoints`);
* the final evaluation alone: ``late_acc`` replaced by the last held-out sampled accuracy.

Only ``late_acc`` moves under an endpoint reading: collapse flags, clip fractions and the other measurements keep
their definitions, so a verdict that does not read ``late_acc`` cannot move under one. :func:`track` records which
training seeds a block of code read, so a robustness pass leaves out only the seeds a section used.

Within :func:`memo` (the page build: :func:`gspo_lab.experiments.store.cached`), a function wrapped in
:func:`remember` computes its value once per arguments *and reading* (left-out seed, endpoint, whatever its ``also``
adds): a later call gets a copy, with the seeds the first call read noted again (so :func:`track` sees them).
"""

from __future__ import annotations

import copy
import functools
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = [
    "ENDPOINTS",
    "NOT_REPLICATES",
    "reading",
    "replicate",
    "left_out",
    "endpoint",
    "late_value",
    "collapsed_value",
    "track",
    "note_seeds",
    "inner",
    "in_inner",
    "memo",
    "memo_store",
    "remember",
]

#: the endpoint readings: name -> what the page calls it
ENDPOINTS = {
    "late": "late held-out accuracy",
    "auc": "training-reward AUC",
    "final": "final evaluation alone",
}

_STATE: dict = {"drop_seed": None, "endpoint": "late", "seen": None, "inner": 0}


@contextmanager
def reading(*, drop_seed: int | None = None, endpoint: str = "late") -> Iterator[None]:
    """Within the block, stored results are read with training seed ``drop_seed`` left out and ``late_acc`` read as
    ``endpoint`` (a key of :data:`ENDPOINTS`)."""
    if endpoint not in ENDPOINTS:
        raise ValueError(f"endpoint must be one of {sorted(ENDPOINTS)}, got {endpoint!r}")
    if drop_seed is not None and (isinstance(drop_seed, bool) or not isinstance(drop_seed, int)):
        raise ValueError(f"drop_seed must be an int seed or None, got {drop_seed!r}")
    before = dict(_STATE)
    _STATE.update(drop_seed=drop_seed, endpoint=endpoint)
    try:
        yield
    finally:
        _STATE.update(drop_seed=before["drop_seed"], endpoint=before["endpoint"])


#: probes whose seeds are not replicates of a verdict's measurement: the pooled cold starts are endpoint v2's
#: reference, shared by every training run, so no seed of theirs is left out
NOT_REPLICATES = ("cold_start",)


def replicate(probe: str | None) -> bool:
    """Whether a spec's seeds (a training spec: ``probe`` None; else its probe's name) are replicates a robustness
    reading may leave out."""
    return probe not in NOT_REPLICATES


def left_out() -> int | None:
    """The training seed the current reading leaves out, or None."""
    return _STATE["drop_seed"]


def endpoint() -> str:
    """The current reading's endpoint (a key of :data:`ENDPOINTS`)."""
    return _STATE["endpoint"]


def late_value(late: float, auc: float, final: float) -> float:
    """What ``late_acc`` holds under the current reading, given a run's late accuracy, reward AUC and final
    evaluation (NaN stays NaN)."""
    value = {"late": late, "auc": auc, "final": final}[_STATE["endpoint"]]
    return value if value is not None else math.nan


def collapsed_value(two: bool, last: bool) -> bool:
    """Endpoint v2's collapse flag under the current reading: the last two evaluations below threshold (``two``),
    or, under the final-evaluation reading, the last one alone (``last``)."""
    return last if _STATE["endpoint"] == "final" else two


@contextmanager
def inner() -> Iterator[None]:
    """Within the block, verdicts are a section's own re-readings of a verdict (each seed left out, …): the
    page-wide robustness pass (:mod:`gspo_record.robust`) neither counts nor marks them."""
    _STATE["inner"] += 1
    try:
        yield
    finally:
        _STATE["inner"] -= 1


def in_inner() -> bool:
    """True within :func:`inner`."""
    return _STATE["inner"] > 0


@contextmanager
def track() -> Iterator[set[int]]:
    """Collect, into the yielded set, every training seed read within the block (:func:`note_seeds`)."""
    before = _STATE["seen"]
    seen: set[int] = set()
    _STATE["seen"] = seen
    try:
        yield seen
    finally:
        _STATE["seen"] = before
        if before is not None:
            before.update(seen)


def note_seeds(seeds) -> None:
    """Record training seeds as read (a no-op outside :func:`track`)."""
    if _STATE["seen"] is not None:
        _STATE["seen"].update(int(s) for s in seeds)


_MEMO: dict | None = None


@contextmanager
def memo() -> Iterator[None]:
    """Within the block, :func:`remember`'s functions keep their values (nested blocks share the outer one's)."""
    global _MEMO
    before = _MEMO
    _MEMO = {} if before is None else before
    try:
        yield
    finally:
        _MEMO = before


def memo_store() -> dict | None:
    """The build's memo within :func:`memo` (for readers that keep their own keys in it, e.g. a spec's cells), else
    None."""
    return _MEMO


def remember(also: Callable[[], object] = lambda: None, *, per_reading: bool = True) -> Callable:
    """Decorator: within :func:`memo`, the function's value per (its arguments by ``repr``, the reading's left-out
    seed and endpoint, ``also()``); each call returns a copy (a DataFrame's ``copy()``, else a deep copy) and notes the
    seeds the first call read. Outside :func:`memo` it computes every time. For functions of the stored results and
    the reading alone: no verdicts, no other state. ``per_reading=False``: one value for every reading, for a function
    no reading can change (one stored run's own series, read by its path)."""

    def wrap(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def remembered(*args, **kw):
            if _MEMO is None:
                return fn(*args, **kw)
            if any(hasattr(a, "shape") for a in (*args, *kw.values())):  # a table's repr elides rows: no key
                raise TypeError(f"{fn.__qualname__}: remember() keys on repr, so it takes no tables or arrays")
            now = (_STATE["drop_seed"], _STATE["endpoint"]) if per_reading else ()
            key = (fn.__module__, fn.__qualname__, repr(args), repr(sorted(kw.items())), *now, also())
            if key not in _MEMO:
                with track() as seen:
                    value = fn(*args, **kw)
                _MEMO[key] = (value, frozenset(seen))
            value, seen = _MEMO[key]
            note_seeds(seen)
            return value.copy() if hasattr(value, "to_numpy") else copy.deepcopy(value)

        return remembered

    return wrap
