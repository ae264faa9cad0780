"""Keep notebooks/*.py (jupytext percent, the reviewed source) and notebooks/*.ipynb paired, without outputs.

    python scripts/pair_notebooks.py          # create missing .ipynb / sync existing pairs from the newer side

A new .ipynb gets stable cell ids ``<stem>-<index>``; an existing pair is synced with ``jupytext --sync``, which
keeps the ids of cells that already exist (a plain py→ipynb conversion gives random ids). Outputs are never stored.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import jupytext

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def create(py: Path) -> None:
    nb = jupytext.read(py)
    for i, cell in enumerate(nb.cells):
        cell.id = f"{py.stem.split('_')[0]}-{i:02d}"
    jupytext.write(nb, py.with_suffix(".ipynb"))


def main() -> int:
    for py in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.py")):
        if py.with_suffix(".ipynb").exists():
            subprocess.run([sys.executable, "-m", "jupytext", "--sync", "--quiet", str(py)], check=True)
        else:
            create(py)
        print("paired", py.name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
