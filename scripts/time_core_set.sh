#!/usr/bin/env bash
# Time a regeneration of the core set from empty result and run folders, and compare it with the stored results.
# Writes data/results/core_timing.json (the findings page reports it). About 75-90 min on 2 cores; keep the machine
# otherwise idle while it runs, or the figure is an upper bound.
#   bash scripts/time_core_set.sh [WORKERS]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh ""  # the project's .venv (created if missing)
set -euo pipefail
workers="${1:-2}"
scratch=$(mktemp -d)
GSPO_LAB_RESULTS="$scratch/results" GSPO_LAB_RUNS="$scratch/runs" gspo-lab sweep --core --workers "$workers"
python - "$scratch/results" <<'PY'
import json, sys
from pathlib import Path
from gspo_lab.experiments.store import compare_results
fresh = Path(sys.argv[1])
record = json.loads((fresh / "core_timing.json").read_text())
record["compared_with_stored"] = compare_results(fresh)
out = Path("data/results/core_timing.json")
out.write_text(json.dumps(record, indent=1) + "\n")
print(f"wrote {out}: {record['cells_run']} cells in {record['wall_s'] / 60:.1f} min;",
      f"{record['compared_with_stored']['identical']} of {record['compared_with_stored']['compared']} summaries identical")
PY
rm -rf "$scratch"
