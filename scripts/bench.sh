#!/usr/bin/env bash
# The benchmark: set up .venv (see scripts/env.sh) with the bench extra (TRL, the peer), then time one RL step of
# gspo_lab beside TRL's GRPOTrainer in one run and print the ratios.
#   bash scripts/bench.sh [bench/bench_step.py args, e.g. --quick]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh bench
set -euo pipefail
exec python bench/bench_step.py "$@"
