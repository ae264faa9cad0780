"""The stored results hold every per-rollout series a reading uses, and only those (gspo_lab/experiments/thinning.py,
scripts/thin_results.py): every series the sources name is declared in summary.READ_SERIES; every stored result
holds each read series of every metric its run logged; none holds another; thinning loses nothing it keeps, a
branch's stitched rows included."""

from __future__ import annotations

import functools
import re
from pathlib import Path

from gspo_lab.experiments.store import load_result, read_stored, spec_folders, stored_files, write_result
from gspo_lab.experiments.summary import READ_SERIES, is_read
from gspo_lab.experiments.thinning import THINNED, kept_view, thin_stored
from gspo_lab.precursors import with_derived

ROOT = Path(__file__).resolve().parents[1]
#: a per-rollout series name as the sources write it; an f-string's {group} reads as fnmatch's *
_NAME = re.compile(r"\b[a-z]+/[a-z_0-9{}]+:(?:mean|max)\b")
#: names the sources mention that no reading of a stored result uses
_NOT_READ = {"policy/entropy:max": "tests/test_experiments.py asserts that a new result leaves it out"}


def _sources() -> list[Path]:
    globs = ("gspo_lab/**/*.py", "gspo_lab/**/*.md", "gspo_record/**/*.py", "gspo_record/**/*.md", "notebooks/*.py",
             "notebooks/*.ipynb", "tests/*.py", "bench/**/*.py", "scripts/*", "docs/*.md", "README.md",
             "data/*/*.toml")  # fmt: skip
    return [p for g in globs for p in ROOT.glob(g) if p.is_file() and p != Path(__file__).resolve()]


def _named() -> dict[str, Path]:
    """Every per-rollout series name the sources write (an f-string's groups as *), with a file that names it; the
    declaration itself (summary.READ_SERIES) left out."""
    out = {}
    for path in _sources():
        text = re.sub(r"\nREAD_SERIES = \(.*?\n\)\n", "\n", path.read_text(errors="replace"), flags=re.S)
        for name in _NAME.findall(text):
            out.setdefault(re.sub(r"\{[^}]*\}", "*", name), path.relative_to(ROOT))
    return out


@functools.cache
def _stored() -> list[tuple[str, dict]]:
    """Every stored training result, as its file holds it."""
    out = []
    for path in (p for folder in spec_folders() for p in stored_files(folder)):
        raw = read_stored(path)
        if "per_rollout" in raw:
            out.append((f"{path.parent.name}/{path.name}", raw))
    return out


def test_every_series_the_sources_read_is_declared():
    named = _named()
    derived = set(with_derived({"ratio/tok_log_std:mean": []})) - {"ratio/tok_log_std:mean"}  # computed, not stored
    assert {"reward/mean:mean", "grad/norm_*:max", "adam/peak_*:max", "ratio/tok_ess:mean"} <= set(named), "the scan"
    undeclared = {n: str(p) for n, p in named.items() if not is_read(n) and n not in derived and n not in _NOT_READ}
    assert not undeclared, (
        f"series read but not in summary.READ_SERIES (add them, or a stored result loses them): {undeclared}"
    )
    unused = [p for p in READ_SERIES if p != "rollout" and p not in named]
    assert not unused, f"summary.READ_SERIES declares series no source names: {unused}"


def test_every_stored_result_holds_the_read_series_of_what_its_run_logged():
    """A metric was logged when its result holds one of its series or lists one as thinned; every read series of it
    must be held (new results keep every mean and the read maxima; older ones kept every maximum)."""
    assert len(_stored()) > 1000
    missing = {}
    for name, raw in _stored():
        held = set(raw["per_rollout"])
        metrics = {k.rpartition(":")[0] for k in held | set(raw.get(THINNED, [])) if ":" in k}
        lost = [f"{m}:{s}" for m in metrics for s in ("mean", "max") if is_read(f"{m}:{s}") and f"{m}:{s}" not in held]
        if lost or "rollout" not in held:
            missing[name] = lost or ["rollout"]
    assert not missing, (
        f"stored results lack a read series (restore it from git history): {dict(list(missing.items())[:5])}"
    )


def test_no_stored_result_holds_an_unread_series():
    extra = {name: k for name, raw in _stored() for k in raw["per_rollout"] if not is_read(k)}
    assert not extra, (
        f"{len(extra)} stored results hold unread series, e.g. {next(iter(extra.items()))}: "
        "run python scripts/thin_results.py"
    )


def test_thinning_a_branch_and_its_trunk_loses_nothing_read(tmp_path, monkeypatch):
    monkeypatch.setenv("GSPO_LAB_RESULTS", str(tmp_path))
    rows = {"rollout": [0, 1, 2], "reward/mean:mean": [0.5, 0.6, 0.7], "grad/norm_attn:max": [1.0, None, 3.0],
            "kl/k1:mean": [0.1, 0.2, 0.3], "kl/k1:max": [0.2, 0.3, 0.4]}  # fmt: skip
    trunk = {
        "spec": "s",
        "key": "t",
        "per_rollout": rows,
        "eval": {"rollout": [0, 3], "eval/accuracy_sampled": [0.4, 0.5]},
    }
    branch = {**trunk, "key": "b", "per_rollout": {k: v[:2] + [9.0] for k, v in rows.items() if k != "rollout"}}
    branch["per_rollout"]["rollout"] = [0, 1, 2]
    write_result(tmp_path / "s" / "t.json.xz", trunk)
    write_result(tmp_path / "s" / "b.json.xz", branch, tmp_path / "s" / "t.json.xz")
    assert read_stored(tmp_path / "s" / "b.json.xz")["shared"]["per_rollout"]["kl/k1:mean"] == 2  # shares the rows
    for path in (tmp_path / "s" / "b.json.xz", tmp_path / "s" / "t.json.xz"):
        assert thin_stored(path) and not thin_stored(path)  # idempotent
    for whole, path in ((trunk, "s/t.json.xz"), (branch, "s/b.json.xz")):
        loaded = load_result(tmp_path / path)
        assert kept_view(loaded) == kept_view(whole) and loaded[THINNED] == ["kl/k1:max", "kl/k1:mean"]
        assert set(loaded["per_rollout"]) == {"rollout", "reward/mean:mean", "grad/norm_attn:max"}
    assert "kl/k1:mean" not in read_stored(tmp_path / "s" / "b.json.xz")["shared"]["per_rollout"]
