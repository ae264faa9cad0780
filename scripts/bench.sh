#!/usr/bin/env bash
# The benchmark: set up .venv (see scripts/env.sh) with the bench extra (TRL, the peer), then
#   1. one RL step of gspo_lab beside TRL's GRPOTrainer in one run, with the ratios and the targets
#      (bench/bench_step.py; its arguments are this script's, e.g. --quick);
#   2. cells per hour on the two cells issue 25 names (f2r_collapse_moe's first cell, an MoE GRPO run, and
#      f10_direction_norm's GRPO-direction-at-GSPO's-norm cell), this tree against the commit before issue 25's
#      levers, side by side, with the identity of their rows (bench/bench_cell.py; skip with BENCH_CELLS=0, set the
#      rollouts per run with BENCH_CELL_ROLLOUTS, default 20, or "full");
#   3. the opt-in fast paths on the same two cells: π_old from the sampler with its forward skipped
#      (old_logp=sampler, old_forward=false), no per-group gradient statistics (group_stats=false) and AdamW's fused
#      kernel (fused_adam=true), against the stored config, both on this tree's code (--ref HEAD); then with the
#      update's forward compiled too (compile_update=true), warm, as a sweep worker's later cells run;
#   4. where an update's time goes by kind of work (matmul, attention, optimizer, the rest), the ceiling that puts on
#      the FLOP/s target, and torch.compile's warm ratio on the same update (bench/roofline.py --compile; skip with
#      BENCH_ROOFLINE=0).
#   bash scripts/bench.sh [bench/bench_step.py args]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh bench
set -euo pipefail
python bench/bench_step.py "$@"
if [ "${BENCH_CELLS:-1}" != "0" ]; then
  python bench/bench_cell.py --spec f2r_collapse_moe --cell 0 --rollouts "${BENCH_CELL_ROLLOUTS:-20}"
  python bench/bench_cell.py --spec f10_direction_norm --cell 10 --rollouts "${BENCH_CELL_ROLLOUTS:-20}"
  fast=(--ref HEAD --set old_logp=sampler --set old_forward=false --set group_stats=false --set fused_adam=true
        --rollouts "${BENCH_CELL_ROLLOUTS:-20}")
  python bench/bench_cell.py --spec f2r_collapse_moe --cell 0 "${fast[@]}"
  python bench/bench_cell.py --spec f10_direction_norm --cell 10 "${fast[@]}"
  # and with the update compiled, as a sweep worker's later cells see it (--warm: the compile paid before the timing)
  python bench/bench_cell.py --spec f2r_collapse_moe --cell 0 "${fast[@]}" --set compile_update=true --warm
  python bench/bench_cell.py --spec f10_direction_norm --cell 10 "${fast[@]}" --set compile_update=true --warm
fi
if [ "${BENCH_ROOFLINE:-1}" != "0" ]; then
  python bench/roofline.py --compile
fi
