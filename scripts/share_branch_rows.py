"""Rewrite stored branch results so that each holds only the rows after its branch point (gspo_lab/experiments/
store.py, module docstring): the rows before it are its trunk's, stored once. Lossless: every rewritten result loads
to the same JSON as before (checked here per file, and by write_result itself); a result whose trunk is not stored is
left whole. Run once for results written before branches shared their rows (f10z_branch); new ones are written so.

    python scripts/share_branch_rows.py [SPEC ...]     # default: every spec folder
"""

from __future__ import annotations

import json
import sys

from gspo_lab.config import TrainConfig
from gspo_lab.experiments.spec import cell_key
from gspo_lab.experiments.store import SUFFIX, load_result, spec_folders, stored_files, write_result


def main(names: list[str]) -> None:
    before = after = 0
    for folder in spec_folders(names):
        for path in stored_files(folder):
            result = load_result(path)
            cfg = result.get("config") or {}
            if not cfg.get("branch_at") or path.name.endswith(".json.gz"):
                continue
            size = path.stat().st_size
            base = folder / f"{cell_key(TrainConfig(**cfg).trunk_config())}{SUFFIX}"
            write_result(path, result, base)
            if json.dumps(load_result(path), sort_keys=True) != json.dumps(result, sort_keys=True):
                raise SystemExit(f"{path}: not lossless")
            before, after = before + size, after + path.stat().st_size
    print(f"branch results: {before / 1e6:.3f} MB -> {after / 1e6:.3f} MB")


if __name__ == "__main__":
    main(sys.argv[1:])
