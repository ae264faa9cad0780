#!/usr/bin/env bash
# The main job: set up .venv (see scripts/env.sh), run every notebook at the full tier through papermill on the
# gspo-lab kernel, then write runs/<timestamp>/report.html (claims, headline numbers, figures) and print its path.
#   bash scripts/report.sh [--out DIR] [--notebooks NAME ...] [--cell-timeout S] [--tier smoke]
# Exit status 1 when a notebook failed or a claim did not hold; the report is written either way.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh ""  # "" = no extras (a bare `source` would hand it this script's arguments)
set -euo pipefail
python -m gspo_lab.nb.run --tier full "$@"
