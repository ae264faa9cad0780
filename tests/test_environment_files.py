"""environment.yml mirrors pyproject.toml (conda channels are unreachable here, so it is checked, not solved)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

ROOT = Path(__file__).resolve().parents[1]
# PyPI name -> conda-forge name, where they differ
CONDA_NAME = {"torch": "pytorch-cpu", "matplotlib": "matplotlib-base"}
SPEC = re.compile(r"^([A-Za-z0-9_.\-]+)\s*(.*)$")


def _split(req: str) -> tuple[str, str]:
    name, spec = SPEC.match(req.split("#")[0].strip()).groups()
    return name.lower(), spec.replace(" ", "")


def test_environment_yml_matches_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert env["channels"][0] == "conda-forge"
    conda = {}
    pip_section = None
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            pip_section = dep["pip"]
            continue
        name, spec = _split(dep)
        conda[name] = spec
    assert conda.pop("python") == "=3.11"
    assert "pip" in conda and conda.pop("pip") == ""
    assert pip_section == ["-e ."], "the package itself is installed by pip, editable"
    # environment.yml pins python=3.11: a requirement only for older Pythons (a `python_version < '3.11'` marker)
    # is not in it
    deps = [d for d in project["dependencies"] if "python_version < '3.11'" not in d]
    wanted = {CONDA_NAME.get(n, n): s for n, s in map(_split, deps)}
    assert conda == wanted


def test_ci_runs_exactly_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "bash scripts/test.sh" in readme and "bash scripts/test.sh" in ci


def test_test_extra_pins_trl_to_a_minor_version():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["test"]
    trl = [r for r in extras if r.startswith("trl")]
    assert trl and re.fullmatch(r"trl>=(\d+)\.(\d+),<\1\.\d+", trl[0].replace(" ", ""))
