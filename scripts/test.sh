#!/usr/bin/env bash
# The test command: set up .venv (see scripts/env.sh) with the test extra, then run the whole suite.
#   bash scripts/test.sh [pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh test
set -euo pipefail
echo "[test] $(python --version), torch $(python -c 'import torch; print(torch.__version__)')"
python -m pytest "$@"
