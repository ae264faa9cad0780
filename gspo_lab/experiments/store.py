"""The result store: one immutable compressed JSON per finished cell, ``data/results/<spec>/<key>.json.xz``.

A result holds the config, the seed, per-rollout aggregates of every logged metric (mean and max, so a spike
shows), the held-out evaluations, the summary (:mod:`gspo_lab.experiments.summary`), the command, the git commit,
the machine and the wall time. :func:`merge` gathers a spec's results into one table (a row per cell: its grid
values, seed and summary). ``GSPO_LAB_RESULTS`` points the store elsewhere (a scratch re-run of the core set).
A result that had to be re-run (its recorded commit is unknown to the repository) is moved, not deleted, to
``data/results/superseded/<spec>/`` with a record of why (:func:`supersede`).

A branch's result (a cell with ``branch_at``, :mod:`gspo_lab.train`) shares the rows before its branch point with its
trunk's stored result: they are the same numbers, so the file holds only the rows after them and ``"shared": {"base":
"<spec>/<key>", "per_rollout": {series: n}, "eval": {series: n}}`` (per series, the leading values equal to the
trunk's), and :func:`load_result` puts the trunk's first values back (lossless: :func:`write_result` checks the round
trip, else writes the whole result).

Results are xz-compressed (:data:`SUFFIX`): 17 % smaller than gzip on the stored set, so data/ stays within its 50 MB.
:func:`load_result` still reads a ``.json.gz`` (results written before the switch, e.g. in a scratch folder); the
stored ones were re-compressed losslessly by ``scripts/recompress_results.py`` (the same JSON bytes).

A stored result keeps only the per-rollout series some reading uses: :mod:`gspo_lab.experiments.thinning` drops the
others from the stored files (``scripts/thin_results.py``) and records their names in the result's ``"thinned"``.
"""

from __future__ import annotations

import gzip
import json
import lzma
import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

import gspo_lab.experiments.reading as reading
from gspo_lab.experiments.spec import Cell, Spec, cell_key, cells
from gspo_lab.paths import data_dir

__all__ = [
    "results_root",
    "results_dir",
    "result_path",
    "load_result",
    "cached",
    "write_result",
    "merge",
    "finished",
    "compare_results",
    "supersede",
    "SUPERSEDED",
    "SUFFIX",
    "stored_files",
    "spec_folders",
    "read_stored",
    "base_of",
]

#: where superseded results go (under the results root), with superseded.json recording why
SUPERSEDED = "superseded"
#: a stored result's file suffix (xz: see the module docstring); ``.json.gz`` is still read
SUFFIX = ".json.xz"
_READABLE = (SUFFIX, ".json.gz")


def results_root() -> Path:
    """``data/results`` (or ``$GSPO_LAB_RESULTS``)."""
    return Path(os.environ.get("GSPO_LAB_RESULTS", data_dir() / "results"))


def results_dir(spec_name: str) -> Path:
    """The folder of one spec's results."""
    return results_root() / spec_name


def result_path(cell: Cell) -> Path:
    return results_dir(cell.spec) / f"{cell.key}{SUFFIX}"


def stored_files(folder: str | Path, pattern: str = "*") -> list[Path]:
    """The stored results in ``folder`` matching ``pattern`` (without suffix; e.g. ``"*/*"``), sorted; either
    compression."""
    return sorted(p for suffix in _READABLE for p in Path(folder).glob(pattern + suffix))


def spec_folders(names: list[str] | tuple[str, ...] = ()) -> list[Path]:
    """The named spec folders of the results root (default: every one; the superseded results are left out)."""
    if names:
        return [results_dir(n) for n in names]
    return [p for p in sorted(results_root().iterdir()) if p.is_dir() and p.name != SUPERSEDED]


def _open(path: str | Path):
    if not str(path).endswith(_READABLE):
        raise ValueError(f"path: a stored result ends in {' or '.join(_READABLE)}, got {str(path)!r}")
    return (lzma.open if str(path).endswith(".xz") else gzip.open)(path, "rt")


_CACHE: dict | None = None


def load_result(path: str | Path) -> dict:
    """A stored result (a branch's with its trunk's first rows put back, module docstring). Within :func:`cached` the
    parsed result is kept (by path, size and modification time) and the same object is returned again: callers read
    results and never change them."""
    if _CACHE is None:
        return _read(path)
    st = os.stat(path)
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key not in _CACHE:
        _CACHE[key] = _read(path)
    return _CACHE[key]


_SERIES = ("per_rollout", "eval")


def read_stored(path: str | Path) -> dict:
    """A stored result's JSON as the file holds it (a branch's without its trunk's rows: :func:`load_result` puts
    them back)."""
    with _open(path) as f:
        return json.load(f)


def _read(path: str | Path) -> dict:
    return _stitch(read_stored(path), path)


def _stitch(result: dict, path: str | Path) -> dict:
    """``result`` with the first values it shares with its base put back (the result itself when it shares none)."""
    if (shared := result.get("shared")) is None:
        return result
    spec_name, key = shared["base"].split("/")
    found = stored_files(results_dir(spec_name), key)
    if not found:
        raise FileNotFoundError(f"{path} shares its first rows with {shared['base']}, which is not stored")
    base = load_result(found[0])
    out = {k: v for k, v in result.items() if k != "shared"}
    for series in _SERIES:
        n = shared[series]  # per series, how many leading values are the base's
        out[series] = {k: (base[series][k][: n[k]] if k in n else []) + v for k, v in result[series].items()}
    return out


def base_of(cell: Cell) -> Path | None:
    """The stored result a branch cell shares its first rows with (its trunk's, same spec); None for other cells."""
    if not cell.cfg.branch_at:
        return None
    return results_dir(cell.spec) / f"{cell_key(cell.cfg.trunk_config())}{SUFFIX}"


def _same_rows(a: dict, b: dict) -> dict[str, int]:
    """Per series of ``a`` that ``b`` also holds, how many leading values they share (only those sharing some)."""
    out = {}
    for k in (k for k in a if k in b):
        n = 0
        while n < min(len(a[k]), len(b[k])) and json.dumps(a[k][n]) == json.dumps(b[k][n]):
            n += 1
        if n:
            out[k] = n
    return out


@contextmanager
def cached() -> Iterator[None]:
    """Within the block, :func:`load_result` parses each stored file once, :func:`~gspo_lab.experiments.spec.cells`
    builds each spec's cells once (in :func:`~gspo_lab.experiments.reading.memo`) and the readers wrapped in
    :func:`~gspo_lab.experiments.reading.remember` compute once per reading (:func:`finished`, the cold starts): the
    findings page reads them many times, once per robustness reading. Leaving the block forgets them all."""
    global _CACHE
    before = _CACHE
    _CACHE = {} if before is None else before
    try:
        with reading.memo():
            yield
    finally:
        _CACHE = before


def write_result(path: Path, obj: dict, base: Path | None = None) -> None:
    """Write ``obj`` as compressed JSON, atomically (a temporary file renamed into place). With a stored ``base``
    (:func:`base_of`), the rows ``obj`` shares with it are left out (module docstring) when the round trip is exact."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    thin = obj
    if base is not None and Path(base).is_file():
        stored = _read(base)
        counts = {s: _same_rows(obj.get(s, {}), stored.get(s, {})) for s in _SERIES}
        if counts["per_rollout"]:
            thin = {**obj, **{s: {k: v[counts[s].get(k, 0) :] for k, v in obj[s].items()} for s in _SERIES}}
            thin["shared"] = {"base": f"{Path(base).parent.name}/{Path(base).name.split('.')[0]}", **counts}
            if json.dumps(_stitch(thin, path), sort_keys=True) != json.dumps(obj, sort_keys=True):
                thin = obj  # not a lossless round trip: the whole result
    with lzma.open(tmp, "wt") as f:
        json.dump(thin, f, separators=(",", ":"))
    os.replace(tmp, path)


def merge(spec: Spec, *, write: bool = True) -> pd.DataFrame:
    """One row per finished cell of ``spec`` (current code version): grid values, seed, summary. With ``write``,
    also saved as ``data/results/<name>.csv``."""
    keys = {c.key for c in cells(spec, "all")}  # a reading's left-out seed is left out here
    rows = [row for row in _rows(spec) if row["key"] in keys]
    table = pd.DataFrame(rows)
    if rows:
        columns = [name for key in spec.grid for name in key.split(",") if name != "seed"]
        table = table.sort_values(columns + ["seed"], key=lambda c: c.astype(str)).reset_index(drop=True)
    if rows and write:
        out = results_dir(spec.name).with_suffix(".csv")
        table.to_csv(out.with_name(out.name + ".tmp"), index=False)
        os.replace(out.with_name(out.name + ".tmp"), out)
    return table


@reading.remember(per_reading=False)
def _rows(spec: Spec) -> list[dict]:
    """A row per stored result of ``spec`` whose key is a cell of it (another code version, or a cell no longer in
    the spec, is kept on disk and left out), in file order: grid values, seed, seed set, key, summary, wall time."""
    with reading.reading():  # every seed: merge leaves out the reading's
        keys = {c.key for c in cells(spec, "all")}
    results = (load_result(path) for path in stored_files(results_dir(spec.name)))
    return [{**r["point"], "seed": r["seed"], "seed_set": "search" if r["seed"] in spec.search_seeds else "confirm",
             "key": r["key"], **r["summary"], "wall_s": r["wall_s"]} for r in results if r["key"] in keys]  # fmt: skip


@reading.remember()
def finished(spec: Spec, seeds: str = "all") -> pd.DataFrame:
    """The merged table of a spec, restricted to a seed set."""
    table = merge(spec, write=False)
    if not table.empty and seeds != "all":
        table = table[table["seed_set"] == seeds].reset_index(drop=True)
    if not table.empty and reading.replicate(spec.probe):
        reading.note_seeds(table["seed"])
    return table


def compare_results(fresh: str | Path, stored: str | Path | None = None) -> dict:
    """Compare every result under ``fresh`` (``<spec>/<key>.json.xz``, e.g. a re-run of the core set into a scratch
    folder) with the stored result of the same key (default ``data/results``): how many summaries are identical, how
    many agree on collapse, the largest absolute difference of a numeric summary field, the keys that differ."""
    stored = Path(stored) if stored is not None else data_dir() / "results"
    out = {"compared": 0, "identical": 0, "same_collapse": 0, "missing": 0, "max_abs_diff": 0.0, "differing": []}
    for path in stored_files(fresh, "*/*"):
        key = path.name.split(".")[0]
        other = next(iter(stored_files(stored / path.parent.name, key)), stored / path.parent.name / path.name)
        if not other.exists():
            out["missing"] += 1
            continue
        a, b = load_result(path)["summary"], load_result(other)["summary"]
        out["compared"] += 1
        out["identical"] += a == b
        out["same_collapse"] += a.get("collapsed") == b.get("collapsed")
        for k in set(a) & set(b):
            x, y = a[k], b[k]
            if isinstance(x, float | int) and isinstance(y, float | int) and not isinstance(x, bool):
                if math.isfinite(x) and math.isfinite(y):
                    out["max_abs_diff"] = max(out["max_abs_diff"], abs(x - y))
        if a != b:
            out["differing"].append(f"{path.parent.name}/{key}")
    return out


def supersede(path: Path, reason: str) -> Path:
    """Move a stored result out of its spec's folder into ``superseded/<spec>/<key>.<commit>.json.xz`` and record
    ``reason`` in ``superseded/superseded.json``; the new location. Results are otherwise immutable."""
    result = load_result(path)
    for other in stored_files(Path(path).parent):  # a branch's result reads its first rows from its trunk's
        if (read_stored(other).get("shared") or {}).get("base") == f"{result['spec']}/{result['key']}":
            raise ValueError(f"path {path} holds rows that {other} shares: supersede that result first")
    commit = str(result.get("git_commit", "unknown"))[:12].replace("+", "-")
    suffix = "".join(Path(path).suffixes[-2:])  # moved as it is, in its own compression
    target = results_root() / SUPERSEDED / result["spec"] / f"{result['key']}.{commit}{suffix}"
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(path, target)
    log_path = results_root() / SUPERSEDED / "superseded.json"
    log = json.loads(log_path.read_text()) if log_path.is_file() else []
    log.append(
        {
            "spec": result["spec"],
            "key": result["key"],
            "git_commit": result.get("git_commit"),
            "moved_to": str(target.relative_to(results_root())),
            "reason": reason,
        }
    )
    log_path.write_text(json.dumps(log, indent=1) + "\n")
    return target
