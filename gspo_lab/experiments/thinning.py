"""Thinning the stored results: each keeps only the per-rollout series some reading uses.

The kept set is declared once, :data:`gspo_lab.experiments.summary.READ_SERIES`. :func:`thin_stored` drops every other
per-rollout series from one stored file, as the file holds it (not stitched): for a branch's result (store module
docstring) it drops the series' shared counts too, and since a branch and its trunk drop the same names, the stitched
result keeps every value of every kept series. The names dropped go into the result's ``"thinned"`` list: the series
its run logged that the file no longer holds (their values stay in git history, in the commit before the thinning),
so a reading can tell "never logged" from "thinned away" (tests/test_store.py). Everything else in the file (config,
summary, evaluations, probe tables) is left as it was.

New results are written with every mean (:func:`~gspo_lab.experiments.summary.stored_rows`), so a new reading of a new
run finds its series; ``scripts/thin_results.py`` thins them once the readings are declared.
"""

from __future__ import annotations

from pathlib import Path

from gspo_lab.experiments.store import SUFFIX, read_stored, write_result
from gspo_lab.experiments.summary import is_read

__all__ = ["THINNED", "thin_stored", "kept_view"]

#: a thinned result's list of the per-rollout series it dropped
THINNED = "thinned"


def thin_stored(path: str | Path) -> bool:
    """Drop from the stored result at ``path`` every per-rollout series no reading uses (with its shared count) and
    add their names to its ``"thinned"`` list; rewritten as :func:`~gspo_lab.experiments.store.write_result` writes.
    False, and the file left untouched, when it holds no such series (a probe's result, or one thinned before)."""
    if not str(path).endswith(SUFFIX):
        raise ValueError(f"path: thinning rewrites a {SUFFIX} result (recompress a .json.gz first), got {path}")
    raw = read_stored(path)
    dropped = [k for k in raw.get("per_rollout", {}) if not is_read(k)]
    if not dropped:
        return False
    raw["per_rollout"] = {k: v for k, v in raw["per_rollout"].items() if is_read(k)}
    if "shared" in raw:
        raw["shared"]["per_rollout"] = {k: n for k, n in raw["shared"]["per_rollout"].items() if is_read(k)}
    raw[THINNED] = sorted({*raw.get(THINNED, []), *dropped})
    write_result(Path(path), raw)
    return True


def kept_view(result: dict) -> dict:
    """A loaded (stitched) result as every reading sees it: its per-rollout series restricted to the read ones, without
    its ``"thinned"`` list. Thinning is lossless when this view is the same before and after."""
    out = {k: v for k, v in result.items() if k != THINNED}
    if "per_rollout" in out:
        out["per_rollout"] = {k: v for k, v in out["per_rollout"].items() if is_read(k)}
    return out
