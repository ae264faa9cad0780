"""Print the stamp a lock file carries on its first line: the SHA-256 of what it was resolved from (pyproject.toml's
dependency tables and requirements/torch.in). tests/test_lock.py recomputes it: a change there without
`bash scripts/lock.sh` fails the test."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


def stamp() -> str:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    torch_in = [line.strip() for line in (ROOT / "requirements" / "torch.in").read_text().splitlines()]
    source = {
        "dependencies": project["dependencies"],
        "optional-dependencies": project.get("optional-dependencies", {}),
        "torch.in": [line for line in torch_in if line and not line.startswith("#")],
    }
    digest = hashlib.sha256(json.dumps(source, sort_keys=True).encode()).hexdigest()
    return f"gspo-lab lock of pyproject.toml + requirements/torch.in, sha256 {digest}"


if __name__ == "__main__":
    sys.stdout.write(stamp() + "\n")
