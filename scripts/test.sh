#!/usr/bin/env bash
# The test command: set up .venv (see scripts/env.sh) with the test extra, then run the whole suite.
#   bash scripts/test.sh [pytest args]
# The suite runs on every core (pytest-xdist: GSPO_LAB_TEST_WORKERS workers, default the core count, at most 8;
# 0 runs it in this process). --dist loadfile keeps each module on one worker (its module fixtures run once);
# --no-loadscope-reorder keeps conftest.py's order, the longest modules first (LONG_MODULES_FIRST); conftest.py's
# session fixtures are computed once and shared by the workers. (Not --dist loadgroup: with pytest 9.2 it silently
# stops grouping, pytest-dev/pytest-xdist#1386.)
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
source scripts/env.sh test
set -euo pipefail
echo "[test] $(python --version), torch $(python -c 'import torch; print(torch.__version__)') (environment ready in $((SECONDS - start)) s)"
workers="${GSPO_LAB_TEST_WORKERS:-$(nproc)}"
[ "$workers" -gt 8 ] && workers=8
python -m pytest -n "$workers" --dist loadfile --no-loadscope-reorder --durations=20 "$@"
