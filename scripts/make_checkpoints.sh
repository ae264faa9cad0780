#!/usr/bin/env bash
# Rebuild the shipped cold-start checkpoints in data/checkpoints/ (each records its own command and accuracy
# in sft.json). Not part of the tests: ~1-3 minutes per checkpoint on one CPU thread.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh ""
for preset in sweep moe dense; do
  gspo-lab sft --preset "$preset" --task sort --seed 0 --out "data/checkpoints/$preset-sort"
done
gspo-lab sft --preset sweep --task add --seed 0 --out data/checkpoints/sweep-add
for preset in sweep-deep sweep-e32 sweep-k4; do  # finding 3's one-factor variants of sweep
  gspo-lab sft --preset "$preset" --task sort --seed 0 --out "data/checkpoints/$preset-sort"
done
