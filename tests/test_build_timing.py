"""The page build says how long it took and where the time went (issue 47, item 3): the total and the slowest
sections, for ``python -m gspo_record`` and ``--check`` alike."""

from __future__ import annotations

import re

import gspo_record.cli as cli
import gspo_record.page as page
from gspo_record import reread


def test_each_section_pass_adds_its_seconds():
    reread.SECONDS.clear()
    reread.verdicts({"quick": lambda: ({}, {})})
    reread.verdicts({"quick": lambda: ({}, {})})
    assert set(reread.SECONDS) == {"quick"} and reread.SECONDS["quick"] >= 0


def test_check_and_build_print_the_total_and_the_five_slowest(monkeypatch, capsys):
    def fake(*_):
        reread.SECONDS.clear()
        reread.SECONDS.update({f"f{i}": float(i) for i in range(1, 8)})
        return []

    monkeypatch.setattr(page, "check", fake)
    assert cli.main(["--check"]) == 0
    line = capsys.readouterr().out.splitlines()[-1]
    assert re.fullmatch(r"\[build\] \d+\.\d s; slowest: f7 7\.0 s, f6 6\.0 s, f5 5\.0 s, f4 4\.0 s, f3 3\.0 s", line)
    monkeypatch.setattr(page, "build", lambda: fake() or "docs/findings.md")
    assert cli.main([]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "wrote docs/findings.md" and out[1].startswith("[build] ") and "f7 7.0 s" in out[1]
