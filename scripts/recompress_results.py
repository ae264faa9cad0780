"""Re-compress every stored result from gzip to xz, losslessly: the decompressed JSON bytes are kept exactly (checked
file by file before the gzip file is removed), so every reading of the page is unchanged. Run once, on 2026-12-04,
when data/ reached 49.3 of its 50 MB: the results went from 31.0 to 25.8 MB. Idempotent (only ``*.json.gz`` files are
touched); the superseded log's ``moved_to`` entries are renamed with their files.

    python scripts/recompress_results.py [RESULTS_ROOT]
"""

from __future__ import annotations

import gzip
import json
import lzma
import os
import sys
from pathlib import Path

from gspo_lab.experiments.store import SUPERSEDED, results_root


def recompress(root: Path) -> tuple[int, int, int]:
    """Files converted, bytes before, bytes after."""
    n = before = after = 0
    for old in sorted(root.rglob("*.json.gz")):
        raw = gzip.decompress(old.read_bytes())
        new = old.with_name(old.name.removesuffix(".gz") + ".xz")
        tmp = new.with_name(new.name + ".tmp")
        tmp.write_bytes(lzma.compress(raw))
        if lzma.decompress(tmp.read_bytes()) != raw:
            raise RuntimeError(f"{old}: the xz copy does not decompress to the same bytes; nothing removed")
        os.replace(tmp, new)
        before, after, n = before + old.stat().st_size, after + new.stat().st_size, n + 1
        old.unlink()
    log = root / SUPERSEDED / "superseded.json"
    if log.is_file():
        entries = json.loads(log.read_text())
        for e in entries:
            e["moved_to"] = (
                e["moved_to"].removesuffix(".json.gz") + ".json.xz" if e["moved_to"].endswith(".gz") else e["moved_to"]
            )
        log.write_text(json.dumps(entries, indent=1) + "\n")
    return n, before, after


if __name__ == "__main__":
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else results_root()
    n, before, after = recompress(root)
    print(f"{n} results re-compressed: {before / 1e6:.2f} MB -> {after / 1e6:.2f} MB")
