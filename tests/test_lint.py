"""The code base stays ruff-clean (lint and format), so style is enforced by CI, not by review."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RUFF = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")


@pytest.mark.skipif(RUFF is None, reason="ruff is part of the test extra; not installed here")
@pytest.mark.parametrize("args", [["check"], ["format", "--check"]], ids=["lint", "format"])
def test_ruff(args):
    paths = [p for p in ("gspo_lab", "gspo_record", "tests", "bench") if (ROOT / p).is_dir()]
    out = subprocess.run([RUFF, *args, *paths], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
