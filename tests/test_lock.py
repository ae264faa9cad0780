"""The lock files (requirements/*.lock.txt) agree with pyproject.toml: resolved from today's dependency tables (the
stamp), every requirement pinned inside its range, one version per package across the two locks, every pin hashed,
torch the CPU build. A dependency changed without `bash scripts/lock.sh` fails here."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

ROOT = Path(__file__).resolve().parents[1]
LOCKS = {"main": ROOT / "requirements" / "main.lock.txt", "all": ROOT / "requirements" / "all.lock.txt"}
PIN = re.compile(r"^([A-Za-z0-9_.\-]+)==([^\s\\]+)")


def _stamp() -> str:
    spec = importlib.util.spec_from_file_location("lock_stamp", ROOT / "scripts" / "lock_stamp.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.stamp()


def pins(path: Path) -> dict[str, tuple[Version, list[str]]]:
    """{canonical name: (version, hashes)} of a pip-compile lock with hashes."""
    out, current = {}, None
    for line in path.read_text().splitlines():
        match = PIN.match(line)
        if match:
            current = canonicalize_name(match.group(1))
            out[current] = (Version(match.group(2)), [])
        elif current and "--hash=sha256:" in line:
            out[current][1].append(line.split("--hash=sha256:")[1].split()[0])
        elif line and not line.startswith((" ", "#")):
            current = None
    return out


def _requirements(extras: tuple[str, ...]) -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = [Requirement(r) for r in project["dependencies"]]
    reqs += [Requirement(r) for e in extras for r in project["optional-dependencies"][e]]
    return [r for r in reqs if r.marker is None or r.marker.evaluate({"python_version": "3.11"})]


@pytest.mark.parametrize("name", sorted(LOCKS))
def test_lock_was_resolved_from_todays_pyproject(name):
    first = LOCKS[name].read_text().splitlines()[0]
    assert first == f"# {_stamp()}", f"{LOCKS[name].name} is stale: run `bash scripts/lock.sh`"


@pytest.mark.parametrize("name, extras", [("main", ()), ("all", ("test", "bench", "cluster"))])
def test_every_requirement_is_pinned_inside_its_range_and_hashed(name, extras):
    locked = pins(LOCKS[name])
    for req in _requirements(extras):
        key = canonicalize_name(req.name)
        assert key in locked, f"{req.name} is not in {LOCKS[name].name}: run `bash scripts/lock.sh`"
        version, hashes = locked[key]
        assert req.specifier.contains(version, prereleases=True), f"{req} but {LOCKS[name].name} pins {version}"
    assert all(hashes for _, hashes in locked.values()), "every pin carries its hashes (pip --require-hashes)"


def test_one_version_per_package_and_the_cpu_torch():
    main, full = pins(LOCKS["main"]), pins(LOCKS["all"])
    assert set(main) <= set(full)
    assert {k: v for k, (v, _) in main.items()} == {k: full[k][0] for k in main}
    assert str(main["torch"][0]) == "2.13.0+cpu" and len(main["torch"][1]) == 1  # the CPU wheel alone
    assert "trl" in full and "trl" not in main and "playwright" not in main
