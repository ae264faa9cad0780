"""Provenance: did each stored cell run at a commit that already held its spec (and when each verdict rule came in)?

    python -m gspo_record provenance          # write data/results/provenance.json (with the rules), print the totals
    python -m gspo_record provenance --check  # exit 1 if the committed table differs from a regeneration

A spec claims its definitions, seeds and rules were committed before its runs. Each result records the commit it
ran at (``git_commit``, :func:`gspo_lab.experiments.runner.git_commit`); a cell is *after its spec* when the commit
that first added ``data/specs/<name>.toml`` is an ancestor of (or is) that commit, *before its spec* when the
recorded commit exists but does not hold the spec yet, and at an *unknown commit* when the repository has no such
commit (or none was recorded). :func:`build_table` counts them per spec, with the superseded results and, for
verdict rules given as marker strings, the commit that first added each marker. The table depends only on git
history and the stored files (no date of "now", no HEAD), so a committed copy is compared byte-for-byte with a
regeneration (:func:`check`). Without git history (a shallow clone, an unpacked archive) :func:`check` checks what
the stored cells alone determine and nothing git-derived.
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import subprocess
from pathlib import Path

from gspo_lab.experiments.store import SUPERSEDED, load_result, results_root, stored_files
from gspo_lab.paths import data_dir, repo_root

__all__ = ["git_available", "spec_first_commit", "classify", "rule_introduced", "build_table", "write", "check",
           "summary_lines", "main", "CLASSES"]  # fmt: skip

#: the three provenance classes of a cell
CLASSES = ("after_spec", "before_spec", "unknown_commit")
_HEX = re.compile(r"[0-9a-f]{4,40}")


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess:
    """Run git in ``repo``; the completed process. RuntimeError when git cannot run at all."""
    try:
        return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        raise RuntimeError(f"git unavailable in {repo}: {e}") from e


def git_available(repo: Path | None = None) -> bool:
    """Whether ``repo`` (default the repository root) is the top of a git work tree with its full history: False for
    a shallow clone, an unpacked archive (also one unpacked inside another repository) or a missing git."""
    repo = Path(repo or repo_root()).resolve()
    try:
        top = _git(repo, "rev-parse", "--show-toplevel")
        shallow = _git(repo, "rev-parse", "--is-shallow-repository")
    except RuntimeError:
        return False
    if top.returncode or shallow.returncode or Path(top.stdout.strip()).resolve() != repo:
        return False
    return shallow.stdout.strip() == "false"


def _logged_commit(repo: Path | None, *args: str, oldest: str) -> dict | None:
    """``{"commit", "date"}`` of the first (``oldest="first"``) or last line of ``git log args``; None without git
    history (then it would be wrong: a shallow clone's oldest commit is only the oldest it holds) or no such line."""
    repo = Path(repo or repo_root())
    if not git_available(repo):
        return None
    out = _git(repo, "log", "--format=%H%x09%cI", *args)
    lines = out.stdout.splitlines() if out.returncode == 0 else []
    if not lines:
        return None
    commit, date = lines[0 if oldest == "first" else -1].split("\t")
    return {"commit": commit, "date": date}


def spec_first_commit(name: str, repo: Path | None = None) -> dict | None:
    """The commit that first added ``data/specs/<name>.toml``: ``{"commit": full hash, "date": ISO committer date}``;
    None when git or its history is unavailable, or the spec was never committed."""
    return _logged_commit(repo, "--diff-filter=A", "--", f"data/specs/{name}.toml", oldest="last")  # newest first


def rule_introduced(marker: str, repo: Path | None = None) -> dict | None:
    """The first commit of the history whose diff adds ``marker`` (``git log -S``): ``{"commit", "date"}``; None
    without git history or when no commit adds it."""
    if not marker:
        raise ValueError("a rule's marker must be a non-empty string")
    return _logged_commit(repo, f"-S{marker}", "--reverse", oldest="first")


@functools.cache
def _commit_exists(repo: str, commit: str) -> bool:
    if not _HEX.fullmatch(commit):
        return False
    return _git(Path(repo), "cat-file", "-e", f"{commit}^{{commit}}").returncode == 0


@functools.cache
def _is_ancestor(repo: str, ancestor: str, commit: str) -> bool:
    out = _git(Path(repo), "merge-base", "--is-ancestor", ancestor, commit)
    if out.returncode not in (0, 1):
        raise RuntimeError(f"git merge-base --is-ancestor {ancestor} {commit} failed: {out.stderr.strip()}")
    return out.returncode == 0


def classify(cell_commit: str | None, spec_commit: str | None, repo: Path | None = None) -> str:
    """One of :data:`CLASSES` for a cell's recorded commit (a ``+dirty`` suffix stripped) against its spec's first
    commit: ``after_spec`` (the spec's commit is an ancestor of, or is, the cell's), ``before_spec`` (the cell's
    commit exists but does not hold the spec; also every existing commit when the spec was never committed),
    ``unknown_commit`` (no such commit in the repository, or ``unknown``). Git answers are cached."""
    repo_key = str(Path(repo or repo_root()).resolve())
    commit = str(cell_commit or "unknown").removesuffix("+dirty").strip().lower()
    if not _commit_exists(repo_key, commit):
        return "unknown_commit"
    if spec_commit is None:
        return "before_spec"
    return "after_spec" if _is_ancestor(repo_key, spec_commit, commit) else "before_spec"


def _spec_names() -> list[str]:
    return sorted(p.stem for p in (data_dir() / "specs").glob("*.toml"))


def _cell_commits(name: str, root: Path) -> list[str]:
    """The recorded commit of every stored result of spec ``name`` (sorted by file name)."""
    return [str(load_result(p).get("git_commit") or "unknown") for p in stored_files(root / name)]


def _short(commit: str) -> str:
    return commit.removesuffix("+dirty")[:7]


def _superseded(root: Path) -> list[dict]:
    log = root / SUPERSEDED / "superseded.json"
    return json.loads(log.read_text()) if log.is_file() else []


def build_table(rule_markers: dict[str, tuple[str, tuple[str, ...]]] | None = None) -> dict:
    """The provenance table: per spec (sorted by name) its first commit and date, the count of stored cells, of
    those after / before their spec and at unknown commits, of dirty ones (and of dirty ones among those before:
    run from a working tree whose spec was written but not yet committed), and the distinct short hashes of the
    before and unknown ones; the superseded results' log; for each rule (``{name: (marker, specs)}``, sorted by
    name) the commit that introduced its marker and how many of its specs' stored cells ran at a commit that already
    held it (``cells_after_rule``) or not (``cells_before_rule``). Deterministic for a given history and store.
    RuntimeError without git history."""
    if not git_available():
        raise RuntimeError("the provenance table needs the repository's full git history (not a shallow clone)")
    root = results_root()
    specs = []
    for name in _spec_names():
        first = spec_first_commit(name)
        commits = _cell_commits(name, root)
        row = {
            "spec": name,
            "spec_commit": first and first["commit"],
            "spec_date": first and first["date"],
            "cells": len(commits),
            **dict.fromkeys(CLASSES, 0),
            "dirty": 0,
            "before_spec_dirty": 0,
        }
        before, unknown = set(), set()
        for commit in commits:
            kind = classify(commit, row["spec_commit"])
            row[kind] += 1
            row["dirty"] += commit.endswith("+dirty")
            if kind == "before_spec":
                before.add(_short(commit))
                row["before_spec_dirty"] += commit.endswith("+dirty")
            elif kind == "unknown_commit":
                unknown.add(_short(commit))
        row["commits_before_spec"], row["unknown_commits"] = sorted(before), sorted(unknown)
        specs.append(row)
    rules = []
    for rule, (marker, rule_specs) in sorted((rule_markers or {}).items()):
        found = rule_introduced(marker)
        commits = [c for name in rule_specs for c in _cell_commits(name, root)]
        kinds = [classify(c, found and found["commit"]) for c in commits]
        rules.append(
            {
                "rule": rule,
                "marker": marker,
                "commit": found and found["commit"][:7],
                "date": found and found["date"],
                "specs": list(rule_specs),
                "cells_after_rule": kinds.count("after_spec"),
                "cells_before_rule": kinds.count("before_spec"),
                "cells_unknown_commit": kinds.count("unknown_commit"),
            }
        )
    return {"specs": specs, "superseded": _superseded(root), "rules": rules}


def _dumps(table: dict) -> str:
    return json.dumps(table, indent=1, sort_keys=True) + "\n"


def write(path: Path | None = None, rule_markers: dict[str, tuple[str, tuple[str, ...]]] | None = None) -> Path:
    """Write :func:`build_table` to ``path`` (default ``data/results/provenance.json``); the path."""
    path = Path(path or results_root() / "provenance.json")
    path.write_text(_dumps(build_table(rule_markers)))
    return path


def _against_store(committed: dict) -> list[str]:
    """What needs no git: the committed table's specs are those of data/specs/, its superseded log is the store's."""
    rows, names = {r["spec"] for r in committed.get("specs", [])}, set(_spec_names())
    out = [f"{name}: in the committed table, no longer a spec" for name in sorted(rows - names)]
    out += [f"{name}: a spec missing from the committed table" for name in sorted(names - rows)]
    if committed.get("superseded", []) != _superseded(results_root()):
        out.append("superseded: the committed log differs from superseded/superseded.json")
    return out


def _compare(committed: dict, fresh: dict, rules: bool) -> list[str]:
    """Field by field, the committed table against a regeneration (the rules only with ``rules``)."""
    out = _against_store(committed)
    old, new = ({r["spec"]: r for r in t.get("specs", [])} for t in (committed, fresh))
    for name in sorted(set(old) & set(new)):
        for field in sorted(set(old[name]) | set(new[name])):
            if old[name].get(field) != new[name].get(field):
                out.append(f"{name}: {field} is {old[name].get(field)!r}, recomputed {new[name].get(field)!r}")
    if rules and committed.get("rules", []) != fresh["rules"]:
        out.append(f"rules: committed {committed.get('rules', [])!r}, recomputed {fresh['rules']!r}")
    return out


def _check_stored(committed: dict) -> list[str]:
    """What the stored cells alone determine: per spec the counts, the dirty ones, the short hashes listed."""
    out, names = _against_store(committed), set(_spec_names())
    for row in (r for r in committed.get("specs", []) if r["spec"] in names):
        name, commits = row["spec"], _cell_commits(row["spec"], results_root())
        if row.get("cells") != len(commits):
            out.append(f"{name}: cells is {row.get('cells')!r}, {len(commits)} stored")
        if sum(row.get(k, 0) for k in CLASSES) != row.get("cells"):
            out.append(f"{name}: after_spec + before_spec + unknown_commit != cells ({row.get('cells')!r})")
        if row.get("dirty") != (dirty := sum(c.endswith("+dirty") for c in commits)):
            out.append(f"{name}: dirty is {row.get('dirty')!r}, {dirty} stored")
        recorded = {_short(c) for c in commits}
        for field in ("commits_before_spec", "unknown_commits"):
            if missing := sorted(set(row.get(field, [])) - recorded):
                out.append(f"{name}: {field} lists {missing}, recorded by none of its stored cells")
    return out


def check(path: Path | None = None, rule_markers: dict[str, tuple[str, tuple[str, ...]]] | None = None) -> list[str]:
    """The differences between the committed table at ``path`` (default ``data/results/provenance.json``) and what
    can be recomputed here: the whole table with git history (its rules only when ``rule_markers`` are given),
    only what the stored cells determine without it. Empty when they agree."""
    path = Path(path or results_root() / "provenance.json")
    if not path.is_file():
        return [f"{path}: no provenance table (write one with python -m gspo_record provenance)"]
    committed = json.loads(path.read_text())
    if not git_available():
        return _check_stored(committed)
    fresh = build_table(rule_markers)
    if rule_markers is None:  # the rules are not recomputed: keep the committed ones for the byte comparison
        fresh["rules"] = committed.get("rules", [])
    out = _compare(committed, fresh, rules=rule_markers is not None)
    if not out and path.read_text() != _dumps(fresh):
        out.append(f"{path}: same content, not in the canonical layout (rewrite it)")
    return out


def summary_lines(table: dict) -> list[str]:
    """One line per spec with cells before its spec or at unknown commits, then the totals."""
    lines, total = [], dict.fromkeys(("cells", *CLASSES), 0)
    for row in table["specs"]:
        for k in total:
            total[k] += row[k]
        if row["before_spec"] or row["unknown_commit"]:
            lines.append(
                f"{row['spec']}: {row['before_spec']}/{row['cells']} before the spec's first commit "
                f"{(row['spec_commit'] or 'none')[:7]} {row['commits_before_spec']}, "
                f"{row['unknown_commit']} at unknown commits {row['unknown_commits']}"
            )
    lines.append(
        f"{total['cells']} cells: {total['after_spec']} after their spec, {total['before_spec']} before, "
        f"{total['unknown_commit']} at unknown commits"
    )
    return lines


def main(argv: list[str] | None = None, rule_markers: dict[str, tuple[str, tuple[str, ...]]] | None = None) -> int:
    """Write the provenance table and print its summary, or (``--check``) compare it with a regeneration.
    ``python -m gspo_record provenance`` calls this with the findings' rules (:func:`gspo_record.page.rule_markers`)."""
    parser = argparse.ArgumentParser(prog="python -m gspo_record provenance", description=main.__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the committed table differs from a rebuild")
    parser.add_argument("--path", type=Path, default=None, help="the table (default data/results/provenance.json)")
    args = parser.parse_args(argv)
    if args.check:
        problems = check(args.path, rule_markers)
        print("\n".join(problems) if problems else "provenance table up to date")
        return 1 if problems else 0
    if not git_available():
        print("the provenance table needs the repository's full git history (not a shallow clone or an archive)")
        return 2
    path = write(args.path, rule_markers)
    print("\n".join(summary_lines(json.loads(path.read_text()))))
    print(f"wrote {path}")
    return 0
