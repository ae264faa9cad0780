"""Thin the stored results: each keeps only the per-rollout series some reading uses (gspo_lab/experiments/
thinning.py; the kept set is summary.READ_SERIES) and lists the names it dropped in its "thinned". Lossless for
everything read: every result, loaded as the readings load it (a branch's stitched to its trunk's rows), is checked to
be the same before and after on everything but the dropped series. Idempotent (a thinned result holds nothing more to
drop). First run on 2026-12-05, when data/ held 49.0 of its 50 MB: 1,167 of 1,310 results thinned (the others are
probe cells), data/results 31.3 -> 12.7 MB, data/ 49.0 -> 30.4 MB. Run it again after a sweep (tests/test_store.py
fails until then). The superseded results are left as they were moved.

    python scripts/thin_results.py [SPEC ...]     # default: every spec folder
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from gspo_lab.experiments.store import load_result, results_root, spec_folders, stored_files
from gspo_lab.experiments.thinning import kept_view, thin_stored
from gspo_lab.paths import data_dir


def _views(paths: list[Path]) -> dict[Path, str]:
    """Per stored result, a digest of what the readings see of it (thinning.kept_view)."""
    out = {}
    for path in paths:
        text = json.dumps(kept_view(load_result(path)), sort_keys=True)
        out[path] = hashlib.sha256(text.encode()).hexdigest()
    return out


def _mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6


def main(names: list[str]) -> None:
    paths = [p for folder in spec_folders(names) for p in stored_files(folder)]
    data_before, results_before = _mb(data_dir()), _mb(results_root())
    before = _views(paths)  # every result, also those left as they are: a branch reads its trunk's rows
    thinned = sum(thin_stored(p) for p in paths)
    changed = [str(p) for p, digest in _views(paths).items() if digest != before[p]]
    if changed:
        raise SystemExit(f"not lossless for {len(changed)} results (restore them from git): {changed[:5]}")
    print(
        f"{thinned} of {len(paths)} results thinned, every read series the same: "
        f"data/results {results_before:.2f} MB -> {_mb(results_root()):.2f} MB, "
        f"data/ {data_before:.2f} MB -> {_mb(data_dir()):.2f} MB"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
