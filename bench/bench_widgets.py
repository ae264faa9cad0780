"""Slider redraw time: what one widget callback costs, measured on the interactive tier's data; prints its figures.

    python bench/bench_widgets.py [--repeats N]

A callback = the panel's plain-function twin (analysis + plot) + rendering the Figure to PNG, which is what the
inline backend does when the Output widget displays it (the browser's own paint is not included). Data: the
interactive defaults of notebooks 01 (trace of moe-sort, 5 probe lengths, K = 3), 02 (same trace) and 03 (6
rollouts per objective). 1 torch thread. Target: <= 300 ms per redraw.
"""

from __future__ import annotations

import argparse
import io
import statistics
import time

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402

from gspo_lab.analysis import offpolicy_trace  # noqa: E402
from gspo_lab.clipping import clip_runs  # noqa: E402
from gspo_lab.config import TrainConfig  # noqa: E402
from gspo_lab.widgets import clip_view, grad_view, ratio_view, variance_view  # noqa: E402


def _time(view, args_list, repeats: int) -> list[float]:
    times = []
    for i in range(repeats):
        args = args_list[i % len(args_list)]
        t0 = time.perf_counter()
        fig, _text = view(*args)
        fig.savefig(io.BytesIO(), format="png", dpi=fig.dpi)
        plt.close(fig)
        times.append((time.perf_counter() - t0) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    torch.set_num_threads(1)
    cfg = TrainConfig(checkpoint="moe-sort", objective="grpo", length=12, lr=3e-5)
    trace = offpolicy_trace(cfg, 3, probe_lengths=(4, 8, 12, 16, 20))
    runs = clip_runs(
        TrainConfig(checkpoint="moe-sort", length=12, rollouts=6, lr=3e-5), ("grpo", "gspo"), progress=False
    )
    slider_moves = {
        "01 ratio_view (L, k)": (ratio_view, [(trace, L, k) for L in (20, 16, 12) for k in (3, 2, 1)]),
        "01 variance_view (L, k)": (variance_view, [(trace, L, k) for L in (20, 16, 12) for k in (3, 2, 1)]),
        "02 grad_view (L, k)": (grad_view, [(trace, L, k) for L in (20, 16, 12) for k in (3, 2, 1)]),
        "03 clip_view GSPO (ε)": (clip_view, [(runs["gspo"], "gspo", e, e * 4 / 3) for e in (1e-4, 3e-4, 1e-3)]),
        "03 clip_view GRPO (ε)": (clip_view, [(runs["grpo"], "grpo", e, e * 1.35) for e in (0.05, 0.2, 0.4)]),
    }
    _time(ratio_view, [(trace, 20, 3)], 2)  # warm matplotlib's caches
    print(f"slider redraw (view + PNG render), {args.repeats} moves each, 1 thread; target <= 300 ms")
    print(f"{'panel':28s} {'median ms':>10s} {'max ms':>8s}")
    for name, (view, arg_list) in slider_moves.items():
        t = _time(view, arg_list, args.repeats)
        print(f"{name:28s} {statistics.median(t):10.1f} {max(t):8.1f}")


if __name__ == "__main__":
    main()
