"""Provenance (gspo_record.provenance): the committed table agrees with the stored cells and the git history
(and, in a shallow clone, with the stored cells alone, without calling git); cells classified against a spec's first
commit in a throwaway repository; a tampered table is caught; a rule's marker found where it was introduced."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import gspo_record.provenance as provenance
from gspo_lab.experiments.store import results_root

TABLE = results_root() / "provenance.json"


def _no_git(monkeypatch):
    """As in a shallow clone or an unpacked archive: no history, and any call to git fails the test."""

    def refuse(*args, **kwargs):
        raise AssertionError(f"git called without history: {args}")

    monkeypatch.setattr(provenance, "git_available", lambda repo=None: False)
    monkeypatch.setattr(provenance, "_git", refuse)


def _git(repo: Path, *args: str) -> str:
    cmd = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false", *args]
    return subprocess.run(cmd, cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def toy_repo(tmp_path):
    """A repository of three commits: a README; then data/specs/toy.toml (declaring a threshold); then a README
    edit. Returns (repo, [hash of each commit])."""
    repo = tmp_path / "repo"
    (repo / "data" / "specs").mkdir(parents=True)
    _git(repo, "init", "-q")
    hashes = []
    for path, text in [("README", "a toy\n"), ("data/specs/toy.toml", 'name = "toy"\nthreshold = 0.37\n'),
                       ("README", "a toy, edited\n")]:  # fmt: skip
        (repo / path).write_text(text)
        _git(repo, "add", path)
        _git(repo, "commit", "-q", "-m", f"write {path}")
        hashes.append(_git(repo, "rev-parse", "HEAD"))
    return repo, hashes


def test_committed_table_agrees_with_a_regeneration():
    """With git history: every spec's and every verdict rule's row as recomputed (`provenance --check`)."""
    from gspo_record.cli import rule_markers

    assert TABLE.is_file(), "write it with python -m gspo_record provenance"
    assert provenance.check(rule_markers=rule_markers()) == []
    rules = {r["rule"] for r in json.loads(TABLE.read_text())["rules"]}
    assert rules == set(rule_markers()), "a verdict rule is missing from the provenance table"


def test_committed_table_checks_without_git_history(monkeypatch):
    assert TABLE.is_file()
    _no_git(monkeypatch)
    assert provenance.check() == []
    assert provenance.spec_first_commit("p5_precision") is None
    assert provenance.rule_introduced("COLLAPSE_FRACTION") is None
    assert provenance.main(["--check"]) == 0


def test_table_totals_add_up():
    table = json.loads(TABLE.read_text())
    assert [r["spec"] for r in table["specs"]] == sorted(r["spec"] for r in table["specs"])
    for row in table["specs"]:
        assert sum(row[k] for k in provenance.CLASSES) == row["cells"], row["spec"]
    assert provenance.summary_lines(table)[-1].endswith("at unknown commits")


def test_classify_against_the_spec_first_commit(toy_repo):
    repo, (first, second, third) = toy_repo
    assert provenance.git_available(repo)
    spec = provenance.spec_first_commit("toy", repo)
    assert spec is not None and spec["commit"] == second and spec["date"][:2] == "20"
    assert provenance.spec_first_commit("absent", repo) is None
    assert provenance.classify(first, second, repo) == "before_spec"
    assert provenance.classify(first + "+dirty", second, repo) == "before_spec"
    assert provenance.classify(second, second, repo) == "after_spec"
    assert provenance.classify(third + "+dirty", second, repo) == "after_spec"
    assert provenance.classify("318eddd844a4ae1d6075dd3e2614ef222b0ef311", second, repo) == "unknown_commit"
    assert provenance.classify("unknown", second, repo) == "unknown_commit"
    assert provenance.classify(None, second, repo) == "unknown_commit"
    assert provenance.classify(third, None, repo) == "before_spec"  # a spec never committed holds no cell


def test_rule_introduced_finds_the_commit_that_added_the_marker(toy_repo):
    repo, (_, second, _) = toy_repo
    found = provenance.rule_introduced("threshold = 0.37", repo)
    assert found is not None and found["commit"] == second
    assert provenance.rule_introduced("threshold = 0.99", repo) is None
    with pytest.raises(ValueError):
        provenance.rule_introduced("", repo)


def test_no_history_in_a_shallow_clone_or_outside_a_repository(toy_repo, tmp_path):
    repo, _ = toy_repo
    shallow = tmp_path / "shallow"
    _git(tmp_path, "clone", "-q", "--depth", "1", repo.as_uri(), str(shallow))
    assert not provenance.git_available(shallow)
    assert provenance.spec_first_commit("toy", shallow) is None  # not the one commit a shallow clone holds
    for folder in (tmp_path / "archive", repo / "archive"):  # unpacked alone, or inside another repository
        folder.mkdir(exist_ok=True)
        assert not provenance.git_available(folder)
        assert provenance.spec_first_commit("toy", folder) is None


@pytest.mark.parametrize("history", [True, False])
def test_check_catches_a_tampered_table(tmp_path, monkeypatch, history):
    table = json.loads(TABLE.read_text())
    row = max(table["specs"], key=lambda r: r["before_spec"])
    row["before_spec"] -= 1
    row["after_spec"] += 1  # the sum still matches the stored cells: only the history shows the lie
    row["cells"] += 1
    row["unknown_commits"] = ["abcdef0"]
    path = tmp_path / "provenance.json"
    path.write_text(json.dumps(table))
    if not history:
        _no_git(monkeypatch)
    problems = provenance.check(path)
    name = row["spec"]
    assert any(p.startswith(f"{name}: cells is") for p in problems), problems
    assert any(p.startswith(f"{name}: unknown_commits") for p in problems), problems
    assert any(p.startswith(f"{name}: before_spec") for p in problems) == history, problems
    assert provenance.main(["--check", "--path", str(path)]) == 1
    assert provenance.check(tmp_path / "absent.json") != []
