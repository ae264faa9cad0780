"""Cells per hour: one stored cell's config trained for N rollouts by an older commit's code and by this tree's, side by
side on the same machine; prints the walls, the ratio and whether the two runs' rows are identical.

    python bench/bench_cell.py [--spec f2r_collapse_moe] [--cell 0] [--rollouts 20|full] [--rounds 3] [--ref REF|tree]
                               [--both FIELD=VALUE ...] [--set FIELD=VALUE ...] [--paths fast [--compile] | compiled]
                               [--warm]

``--set`` changes the new side's config only (an opt-in lever, a TrainConfig field): with ``--ref HEAD`` (or
``--ref tree``: this working tree on both sides) the two sides run the same code and differ by that setting alone,
e.g. ``--ref HEAD --set old_logp=sampler``. ``--paths fast`` puts the new side on the fast paths as
``gspo_lab.fast_paths.with_paths`` defines them (``--compile``: with the compiled update, as a fast spec's sweep
workers run it; a field given with ``--set`` or ``--both`` is kept); ``--paths compiled`` on the compiled paths (the
trainer's forwards and the sampler's decode compiled wherever they run, as a compiled spec's sweep workers run them;
pair it with ``--warm``); the old side stays on the reference paths. A compiled side's rows match to float rounding,
not bit for bit, so "identical rows" reads NO there.
``--both`` sets a field on both sides, e.g. ``--both old_logp=sampler`` for a new spec's cell (π_old from the sampler,
so that ``old_forward=False`` and the compiled update apply). Each side's resolved fields are printed.

Methodology, numbered:
    1. The old code is ``--ref`` (default :data:`BASELINE`, the last commit before issue 25's levers) checked out with
       ``git worktree`` into a temporary folder (``--ref tree``: this working tree); the new code is this working
       tree. Each run is its own process with one torch thread (``OMP_NUM_THREADS=1``), importing ``gspo_lab`` from
       its tree, training with a run folder (saved after every RL step, as a sweep cell is) through
       :func:`gspo_lab.train.train`.
    2. In each round the two runs go at the same time, one per core, as a 2-worker sweep runs its cells: a burst of
       load on the shared machine hits both. Rounds alternate which starts first. We report each run's wall time,
       the median over rounds and the median of the per-round ratio old / new (> 1: the new code is faster).
    3. cells per hour (2 workers) = 2 × 3600 / (wall of the whole cell); with ``--rollouts full`` the wall is the
       cell's own, otherwise it is scaled from N rollouts (an underestimate of any lever whose saving grows with the
       run, such as the append-only rows of gspo_lab/train.py).
    4. Identity: the two runs' metric rows (timers left out) and evaluation rows compared exactly; a lever that is
       meant to change nothing shows ``identical: yes``.
    5. Peak RSS: each run's own ``ru_maxrss``.
    6. ``--warm``: each run first trains one rollout of its config in the same process, untimed, as a sweep worker
       has before its later cells; a lever with a once-per-process cost (``compile_update``) is then timed as those
       cells see it. The two timed runs start together once both have warmed up (inductor compiles on one thread).
       Without it the timed run pays that cost (a worker's first cell).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE = "67f872b"  # main before issue 25: bash scripts/bench.sh measured 0.93x TRL there
CHILD = """
import json, os, resource, sys, time
sys.path.insert(0, sys.argv[1])
import dataclasses, torch
from gspo_lab.experiments.spec import cells, load_spec
from gspo_lab.train import train
SHOWN = ("old_logp", "group_stats", "fused_adam", "old_forward", "compile_update", "compile_sampler")  # printed
spec = load_spec(sys.argv[2]); cell = cells(spec, "all")[int(sys.argv[3])]
n = cell.cfg.rollouts if sys.argv[4] == "full" else int(sys.argv[4])
cfg = dataclasses.replace(cell.cfg, rollouts=n, **json.loads(sys.argv[7]))
paths = json.loads(sys.argv[9])
if paths:  # the new side on the fast paths (gspo_lab/fast_paths.py)
    from gspo_lab.fast_paths import with_paths
    cfg = with_paths(cfg, paths["paths"], compile=paths["compile"], keep=paths["keep"])
fields = {f: getattr(cfg, f) for f in SHOWN if hasattr(cfg, f)}
torch.set_num_threads(1)
if sys.argv[8] != "cold":  # a sweep worker's later cell: one rollout of the same config first, untimed
    train(dataclasses.replace(cfg, rollouts=1), sys.argv[5] + "-warm", progress=False)
    open(sys.argv[6] + ".ready", "w").close()  # then both sides start the timed run together
    while not os.path.exists(sys.argv[8]):
        time.sleep(0.05)
t0 = time.perf_counter()
table = train(cfg, sys.argv[5], progress=False)
wall = time.perf_counter() - t0
rows = table[[c for c in table.columns if not c.startswith("time/")]].to_dict(orient="list")
json.dump({"wall_s": wall, "rollouts": n, "fields": fields, "cell_rollouts": cell.cfg.rollouts, "key": cell.key,
           "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "rows": rows,
           "eval": table.attrs["eval"].to_dict(orient="list")}, open(sys.argv[6], "w"))
"""


def _launch(tree: Path, spec: Path, cell: int, rollouts: str, work: Path, tag: str, sets: dict | None = None,
            go: Path | None = None, paths: dict | None = None):  # fmt: skip
    """One run in its own process; with ``go`` (``--warm``) it warms up, then waits for that file to appear;
    ``paths``: ``with_paths``'s arguments for the new side (``--paths``)."""
    out = work / f"{tag}.json"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "GSPO_LAB_DATA": str(tree / "data"),
           "TORCHINDUCTOR_COMPILE_THREADS": "1"}  # fmt: skip
    args = [sys.executable, "-c", CHILD, str(tree), str(spec), str(cell), rollouts, str(work / f"{tag}-run"), str(out),
            json.dumps(sets or {}), str(go) if go else "cold", json.dumps(paths or {})]  # fmt: skip
    return subprocess.Popen(args, env=env, cwd=tree), out


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--spec", default="f2r_collapse_moe", help="a spec in data/specs/ (default: f2r_collapse_moe)")
    p.add_argument("--cell", type=int, default=0, help="index of the cell in the spec's cell list (default: 0)")
    p.add_argument("--rollouts", default="20", help="rollouts per run, or 'full' for the cell's own (default: 20)")
    p.add_argument("--rounds", type=int, default=3, help="rounds of (old, new) side by side (default: 3)")
    p.add_argument("--ref", default=BASELINE,
                   help=f"the old code's commit, or 'tree' for this working tree (default: {BASELINE})")  # fmt: skip
    p.add_argument("--json", default=None, help="also write the figures to this JSON file")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="a TrainConfig field set on the new side only (JSON, else a string); repeatable")  # fmt: skip
    p.add_argument("--both", action="append", default=[], metavar="FIELD=VALUE",
                   help="a TrainConfig field set on both sides (e.g. old_logp=sampler); repeatable")  # fmt: skip
    p.add_argument("--paths", choices=("fast", "compiled", "reference"), default="reference",
                   help="the new side's paths (gspo_lab.fast_paths.with_paths; default reference: its config as "
                        "given); the old side stays on the reference paths")  # fmt: skip
    p.add_argument("--compile", action="store_true",
                   help="with --paths fast: the compiled update where it applies, as a fast spec's sweep workers "
                        "(pair it with --warm)")  # fmt: skip
    p.add_argument("--warm", action="store_true",
                   help="time a sweep worker's later cell: each run first trains 1 rollout of its config, untimed "
                        "(what a compiled fast path costs once per worker process is then left out)")  # fmt: skip
    args = p.parse_args(argv)
    args.sets, args.both_sets = parse_sets(args.set), parse_sets(args.both)
    if args.compile and args.paths != "fast":
        raise SystemExit("--compile applies to --paths fast only")
    new_paths = None
    if args.paths in ("fast", "compiled"):
        new_paths = {"paths": args.paths, "compile": args.compile, "keep": sorted({*args.sets, *args.both_sets})}
    if args.rollouts != "full" and not (args.rollouts.isdigit() and int(args.rollouts) >= 1):
        raise SystemExit(f"--rollouts must be a positive integer or 'full', got {args.rollouts!r}")
    if args.rounds < 1:
        raise SystemExit(f"--rounds must be >= 1, got {args.rounds}")
    spec_rel = Path("data") / "specs" / f"{args.spec}.toml"
    if not (ROOT / spec_rel).is_file():
        raise SystemExit(f"--spec: no {spec_rel} in this tree")
    with tempfile.TemporaryDirectory(prefix="bench-cell-") as tmp:
        work, old_tree = Path(tmp), (ROOT if args.ref == "tree" else Path(tmp) / "old")
        if args.ref != "tree":
            subprocess.run(["git", "worktree", "add", "--detach", "-q", str(old_tree), args.ref], cwd=ROOT, check=True)
        try:
            runs = {"old": [], "new": []}
            for r in range(args.rounds):
                order = ("old", "new") if r % 2 == 0 else ("new", "old")
                procs = {}
                for tag in order:
                    tree = old_tree if tag == "old" else ROOT
                    sets = {**args.both_sets, **(args.sets if tag == "new" else {})}
                    procs[tag] = _launch(tree, tree / spec_rel, args.cell, args.rollouts, work, f"{tag}{r}", sets,
                                         work / f"go{r}" if args.warm else None,
                                         new_paths if tag == "new" else None)  # fmt: skip
                if args.warm:  # both warmed up (the compile paid): the timed runs start together
                    while not all(Path(f"{out}.ready").exists() or p.poll() is not None for p, out in procs.values()):
                        time.sleep(0.05)
                    (work / f"go{r}").touch()
                for tag, (proc, out) in procs.items():
                    if proc.wait() != 0:
                        raise SystemExit(f"the {tag} run of round {r} failed (exit {proc.returncode})")
                    runs[tag].append(json.loads(out.read_text()))
                print(f"round {r}: old {runs['old'][-1]['wall_s']:.1f} s, new {runs['new'][-1]['wall_s']:.1f} s",
                      flush=True)  # fmt: skip
        finally:
            if args.ref != "tree":
                subprocess.run(["git", "worktree", "remove", "--force", str(old_tree)], cwd=ROOT, check=False)
    return report(args, runs)


def parse_sets(items: list[str]) -> dict:
    """``--set`` values as ``{field: value}``; errors name the bad item or field."""
    import dataclasses

    from gspo_lab.config import TrainConfig

    fields, out = {f.name for f in dataclasses.fields(TrainConfig)}, {}
    for item in items:
        name, eq, value = item.partition("=")
        if not eq or name not in fields:
            raise SystemExit(f"--set wants FIELD=VALUE with FIELD a TrainConfig field, got {item!r}")
        try:
            out[name] = json.loads(value)
        except json.JSONDecodeError:
            out[name] = value
    return out


def report(args, runs: dict) -> dict:
    first = runs["new"][0]
    scale = first["cell_rollouts"] / first["rollouts"]
    fig = {"spec": args.spec, "cell": first["key"], "rollouts": first["rollouts"], "rounds": args.rounds,
           "ref": args.ref, "set": args.sets, "both": args.both_sets, "paths": args.paths, "compile": args.compile,
           "warm": args.warm, "fields": {tag: runs[tag][0]["fields"] for tag in ("old", "new")}}  # fmt: skip
    for tag in ("old", "new"):
        walls = [r["wall_s"] for r in runs[tag]]
        fig[f"{tag}_wall_s"] = [round(w, 1) for w in walls]
        fig[f"{tag}_cells_per_hour"] = round(2 * 3600 / (statistics.median(walls) * scale), 1)
        fig[f"{tag}_rss_mib"] = round(max(r["rss_mib"] for r in runs[tag]), 0)
    pairs = list(zip(runs["old"], runs["new"], strict=True))
    fig["ratio_old_over_new"] = round(statistics.median(o["wall_s"] / n["wall_s"] for o, n in pairs), 3)
    fig["identical"] = all(o["rows"] == n["rows"] and o["eval"] == n["eval"] for o, n in pairs)
    print(f"\ncell {fig['spec']}[{args.cell}] ({fig['cell']}), {fig['rollouts']} rollouts, {args.rounds} rounds"
          + (f"; both sides with {fig['both']}" if fig["both"] else "")
          + (f"; new side with {fig['set']}" if fig["set"] else "")
          + (f"; new side on the fast paths{' (compiled)' if args.compile else ''}" if args.paths == "fast" else "")
          + ("; new side on the compiled paths" if args.paths == "compiled" else "")
          + ("; warm (1 rollout first)" if args.warm else ""))  # fmt: skip
    for tag in ("old", "new"):
        code = "this tree" if tag == "new" or args.ref == "tree" else args.ref
        print(f"  {tag} side ({code}): " + ", ".join(f"{k}={v}" for k, v in fig["fields"][tag].items()))
    print(f"{'':6}{'wall s (per round)':>28}{'cells/h, 2 workers':>20}{'peak RSS MiB':>14}")
    for tag in ("old", "new"):
        walls = ", ".join(f"{w:.1f}" for w in fig[f"{tag}_wall_s"])
        print(f"{tag:6}{walls:>28}{fig[f'{tag}_cells_per_hour']:>20}{fig[f'{tag}_rss_mib']:>14.0f}")
    print(f"old / new (median of rounds): {fig['ratio_old_over_new']:.3f}x   target: >= 2x")
    print(f"identical rows and evaluations: {'yes' if fig['identical'] else 'NO'}")
    if args.json:
        Path(args.json).write_text(json.dumps(fig, indent=1) + "\n")
    return fig


if __name__ == "__main__":
    main()
