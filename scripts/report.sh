#!/usr/bin/env bash
# The main job: set up .venv (see scripts/env.sh), run every notebook at the full tier through papermill on the
# gspo-lab kernel, then build the book, runs/<timestamp>/book/ (a static site: every executed notebook as a page, the
# claims dashboard, the findings page; built offline by gspo_lab/nb/book.py) and print its index.html.
#   bash scripts/report.sh [--out DIR] [--notebooks NAME ...] [--cell-timeout S] [--tier smoke]
# Exit status 1 when a notebook failed or a claim did not hold; the book is built either way.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh ""  # "" = no extras (a bare `source` would hand it this script's arguments)
set -euo pipefail
python -m gspo_lab.nb.run --tier full "$@"
