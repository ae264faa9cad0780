#!/usr/bin/env bash
# The benchmark: set up .venv (see scripts/env.sh) with the bench extra (TRL, the peer), then
#   1. one RL step in five columns, in one run, round-robin lockstep: the kit at its new default (the fast paths,
#      with_paths(cfg, "fast"), what `gspo-lab train` runs), at its compiled paths (with_paths(cfg, "compiled"), warm),
#      at its reference paths (TrainConfig's defaults, what every stored cell ran), TRL's GRPOTrainer at its default and with its own torch_compile=True;
#      medians, the ratios side by side, and the targets (bench/bench_step.py; its arguments are this script's,
#      e.g. --quick);
#   2. cells per hour on the two cells issue 25 names (f2r_collapse_moe's first cell, an MoE GRPO run, and
#      f10_direction_norm's GRPO-direction-at-GSPO's-norm cell), this tree against the commit before issue 25's
#      levers, side by side, with the identity of their rows (bench/bench_cell.py; skip with BENCH_CELLS=0, set the
#      rollouts per run with BENCH_CELL_ROLLOUTS, default 20, or "full");
#   3. the fast paths as gspo_lab/fast_paths.py defines them against the reference paths, this working tree's code on
#      both sides (--ref tree):
#      a. f2r_collapse_moe's first cell as stored (π_old recomputed): the new side on the fast paths uncompiled, what
#         `gspo-lab train` runs on it (group_stats=false, fused_adam=true; old_forward stays on);
#      b. a new spec's cell: the same two cells with old_logp=sampler on both sides (--both), the new side on the fast
#         paths compiled as a fast spec's sweep worker runs them (old_forward=false, compile_update=true too), warm
#         (--warm: the compile paid before the timing);
#      c. f2r_collapse_moe's first cell as stored (π_old recomputed), the new side on the compiled paths (issue 52: the
#         trainer's forwards, π_old's included, and the sampler's decode compiled), warm, as a compiled spec's sweep
#         worker runs it;
#   4. where an update's time goes by kind of work (matmul, attention, optimizer, the rest), the ceiling that puts on
#      the FLOP/s target, and torch.compile's warm ratio on the same update (bench/roofline.py --compile; skip with
#      BENCH_ROOFLINE=0).
#   bash scripts/bench.sh [bench/bench_step.py args]   (with --quick: the cell lines 2 rollouts × 1 round, the
#                                                     roofline 3 updates: a check that every piece runs)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh bench
set -euo pipefail
python bench/bench_step.py "$@"
quick=0
for a in "$@"; do if [ "$a" = "--quick" ]; then quick=1; fi; done
if [ "${BENCH_CELLS:-1}" != "0" ]; then
  n=(--rollouts "${BENCH_CELL_ROLLOUTS:-20}")
  if [ "$quick" = 1 ]; then n=(--rollouts "${BENCH_CELL_ROLLOUTS:-2}" --rounds 1); fi
  python bench/bench_cell.py --spec f2r_collapse_moe --cell 0 "${n[@]}"
  python bench/bench_cell.py --spec f10_direction_norm --cell 10 "${n[@]}"
  python bench/bench_cell.py --spec f2r_collapse_moe --cell 0 --ref tree --paths fast "${n[@]}"
  new_spec=(--ref tree --both old_logp=sampler --paths fast --compile --warm "${n[@]}")
  python bench/bench_cell.py --spec f2r_collapse_moe --cell 0 "${new_spec[@]}"
  python bench/bench_cell.py --spec f10_direction_norm --cell 10 "${new_spec[@]}"
  python bench/bench_cell.py --spec f2r_collapse_moe --cell 0 --ref tree --paths compiled --warm "${n[@]}"
fi
if [ "${BENCH_ROOFLINE:-1}" != "0" ]; then
  r=()
  if [ "$quick" = 1 ]; then r=(--repeats 3); fi
  python bench/roofline.py --compile "${r[@]}"
fi
