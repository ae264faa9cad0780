"""``gspo-lab``: the command line. Every flag of ``sft`` and ``train`` is a field of SFTConfig / TrainConfig.

    gspo-lab sft --preset moe --task sort --out data/checkpoints/moe-sort
    gspo-lab train --objective grpo --minibatches 4 --rollouts 50 --eval-every 10 --run-dir runs/grpo
    gspo-lab eval moe-sort --lengths 8 12       # held-out accuracy per length of a checkpoint or a run's policy
    gspo-lab export runs/grpo runs/grpo-policy  # a run's latest policy as a loadable transformers folder
    gspo-lab bench

Bad flags and impossible combinations exit with status 2 and a one-line error naming the flag, before any weights
load or any folder is written (the configs check every field when they are made).
"""

from __future__ import annotations

import argparse
import dataclasses
import shlex
import sys
import types
import typing
from pathlib import Path

__all__ = ["main", "build_parser", "CLI_EVAL_EVERY"]

#: ``gspo-lab train`` evaluates on held-out prompts every this many rollouts unless told otherwise (0 = off)
CLI_EVAL_EVERY = 10
#: what ``gspo-lab bench`` imports beyond the main install (the ``bench`` extra)
BENCH_MODULES = ("trl", "datasets")


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _add_dataclass_flags(parser: argparse.ArgumentParser, cls, docs: dict[str, str], skip=()) -> None:
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if f.name in skip:
            continue
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        kind = hints[f.name]
        kw: dict = {"default": default, "help": f"{docs.get(f.name, '')} (default: {default})"}
        if kind is bool:
            kw["action"] = argparse.BooleanOptionalAction
        elif typing.get_origin(kind) is tuple:
            kw.update(type=int, nargs="*")
        elif typing.get_origin(kind) in (typing.Union, types.UnionType):  # `float | None`: "none"/"off" -> None
            inner = [a for a in typing.get_args(kind) if a is not type(None)][0]
            kw["type"] = _optional(inner)
        elif kind in (int, float, str):
            kw["type"] = kind
        else:
            continue
        parser.add_argument(_flag(f.name), dest=f.name, **kw)


def _optional(kind):
    def parse(text: str):
        return None if text.lower() in ("none", "off") else kind(text)

    parse.__name__ = kind.__name__
    return parse


def _docs(cls) -> dict[str, str]:
    import ast
    import inspect

    body = ast.parse(inspect.getsource(cls)).body[0].body
    docs = {}
    for node, nxt in zip(body, body[1:], strict=False):
        if isinstance(node, ast.AnnAssign) and isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant):
            docs[node.target.id] = str(nxt.value.value)
    return docs


def build_parser() -> argparse.ArgumentParser:
    from gspo_lab.config import TrainConfig
    from gspo_lab.fast_paths import FAST_FIELDS
    from gspo_lab.sft import SFTConfig

    parser = argparse.ArgumentParser(prog="gspo-lab", description="GSPO vs GRPO lab: cold start, RL, benchmark")
    sub = parser.add_subparsers(dest="command", required=True)
    p_sft = sub.add_parser("sft", help="cold-start fine-tune a preset to partial accuracy and save a checkpoint")
    _add_dataclass_flags(p_sft, SFTConfig, _docs(SFTConfig), skip=("extra",))
    p_sft.add_argument("--out", required=True, help="checkpoint folder to write")
    p_train = sub.add_parser("train", help="run the RL loop; writes metrics and resumable state to --run-dir")
    _add_dataclass_flags(p_train, TrainConfig, _docs(TrainConfig))
    # the CLI's run evaluates on held-out prompts by default: training reward cannot tell learning from collapse
    # (TrainConfig's own default, 0, is what every stored cell's key holds)
    p_train.set_defaults(eval_every=CLI_EVAL_EVERY)
    for action in p_train._actions:
        if action.dest == "eval_every":
            action.help = action.help.replace("(default: 0)", f"(default: {CLI_EVAL_EVERY} here, TrainConfig's is 0)")
    # the fast paths by default (gspo_lab/fast_paths.py), TrainConfig's reference defaults with --paths reference;
    # a fast path's own flag, when given, wins: its default here is None, "not given"
    p_train.add_argument(
        "--paths",
        choices=("fast", "compiled", "reference"),
        default="fast",
        help="fast: the measured fast paths where they apply (gspo_lab/fast_paths.py; no compile on a one-off run); "
        "compiled: those and the trainer's forwards and the sampler's decode under torch.compile (~1 min of "
        "compiling, for a long run); reference: TrainConfig's defaults, as every stored cell ran (default: fast)",
    )
    for action in p_train._actions:
        if action.dest in FAST_FIELDS:
            action.default = None
            action.help = action.help.replace("(default: ", "(default: per --paths; TrainConfig: ")
    p_train.add_argument("--run-dir", default=None, help="output folder (default: runs/<objective>-<time>)")
    p_train.add_argument(
        "--resume", action="store_true", help="continue the run saved in --run-dir (an error if none is saved there)"
    )
    p_eval = sub.add_parser("eval", help="held-out exact-match accuracy per length of a checkpoint or a run's policy")
    p_eval.add_argument("source", help="a checkpoint (name under data/checkpoints/ or folder) or a run folder")
    p_eval.add_argument("--lengths", type=int, nargs="*", default=None, help="problem sizes (default: all)")
    p_eval.add_argument("--prompts", type=int, default=64, help="eval-split prompts per length (default: 64)")
    p_eval.add_argument("--temperature", type=float, default=None, help="sampling τ (default: the run's, or 1)")
    p_eval.add_argument("--seed", type=int, default=0, help="seeds the sampled evaluation (default: 0)")
    p_export = sub.add_parser("export", help="write a run's latest policy as a loadable transformers folder")
    p_export.add_argument("run", help="a run folder (written by gspo-lab train)")
    p_export.add_argument("out", help="the folder to write (must not exist or be empty)")
    p_sweep = sub.add_parser("sweep", help="run a grid of training runs from spec files (data/specs/), resumable")
    p_sweep.add_argument("specs", nargs="*", help="spec files (TOML), or names of specs in data/specs/")
    p_sweep.add_argument(
        "--core", action="store_true", help="the core set: every spec marked core, at its core grid points"
    )
    p_sweep.add_argument(
        "--seeds",
        default=None,
        choices=("search", "confirm", "all"),
        help="which seed set (default: all; with --core: confirm, the core set's cells)",
    )
    p_sweep.add_argument("--workers", type=int, default=None, help="worker processes (default: the CPU count)")
    p_sweep.add_argument("--merge", action="store_true", help="only merge finished cells into data/results/<name>.csv")
    p_sweep.add_argument(
        "--ray",
        nargs="?",
        const="auto",
        default=None,
        metavar="ADDRESS",
        help="run the cells as tasks on the Ray cluster at ADDRESS (HOST:PORT; default: the one on this machine); "
        "needs the cluster extra",
    )
    p_bench = sub.add_parser("bench", help="benchmark one RL step against TRL's GRPOTrainer (bench/)")
    p_bench.add_argument("args", nargs=argparse.REMAINDER, help="arguments for bench/bench_step.py")
    return parser


def _config(cls, args: argparse.Namespace):
    values = {f.name: getattr(args, f.name) for f in dataclasses.fields(cls) if hasattr(args, f.name)}
    for f in dataclasses.fields(cls):
        if f.name in values and isinstance(values[f.name], list):
            values[f.name] = tuple(values[f.name])
    return cls(**values)


def _train_config(args: argparse.Namespace):
    """``gspo-lab train``'s config: the flags, then ``--paths`` (a fast path's flag that was given is kept)."""
    from gspo_lab.config import TrainConfig
    from gspo_lab.fast_paths import FAST_FIELDS, with_paths

    given = {f for f in FAST_FIELDS if getattr(args, f) is not None}
    defaults = TrainConfig.__dataclass_fields__
    values = {f: defaults[f].default for f in FAST_FIELDS if f not in given}
    return with_paths(_config(TrainConfig, argparse.Namespace(**{**vars(args), **values})), args.paths, keep=given)


def _as_flags(message: str, parser: argparse.ArgumentParser, command: str) -> str:
    """Name config fields as the flags the user typed: ``minibatches=3 must ...`` -> ``--minibatches=3 must ...``."""
    import re

    sub = parser._subparsers._group_actions[0].choices[command]
    names = sorted((a.dest for a in sub._actions if a.option_strings and a.dest != "help"), key=len, reverse=True)
    pattern = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, names)) + r")(?![\w])")
    return pattern.sub(lambda m: _flag(m.group(1)), message)


def _policy(source: str):
    """(model, tokenizer, task name, temperature, what) of a run folder's latest policy or of a checkpoint."""
    from gspo_lab.checkpoints import checkpoint_task, load_checkpoint

    if (Path(source) / "config.json").is_file() and (Path(source) / "LATEST").is_file():
        from gspo_lab.train import load_run_policy

        model, tokenizer, cfg, done = load_run_policy(source)
        return model, tokenizer, cfg.task, cfg.temperature, f"run {source} after {done} rollouts"
    task = checkpoint_task(source)  # checks the folder before any weights load
    model, tokenizer, _ = load_checkpoint(source)
    return model, tokenizer, task, 1.0, f"checkpoint {source}"


def _eval(args: argparse.Namespace) -> None:
    import torch

    from gspo_lab.evaluate import evaluate_lengths

    if args.prompts < 1:
        raise ValueError(f"prompts must be >= 1, got {args.prompts}")
    if args.temperature is not None and not args.temperature > 0:
        raise ValueError(f"temperature must be > 0, got {args.temperature}")
    model, tokenizer, task, temperature, what = _policy(args.source)
    temperature = args.temperature or temperature
    kw = {"prompts": args.prompts}
    sampled = evaluate_lengths(
        model,
        tokenizer,
        task,
        args.lengths,
        temperature=temperature,
        generator=torch.Generator().manual_seed(args.seed),
        **kw,
    )
    greedy = evaluate_lengths(model, tokenizer, task, args.lengths, greedy=True, **kw)
    table = sampled.merge(greedy, on="length")
    print(f"{what}: task {task}, {args.prompts} eval prompts per length, sampled at τ = {temperature} and greedy")
    print(table.to_string(index=False, float_format=lambda x: f"{x:.3f}"))


def _export(args: argparse.Namespace) -> None:
    from gspo_lab.evaluate import export_policy
    from gspo_lab.train import load_run_policy

    model, tokenizer, cfg, done = load_run_policy(args.run)
    record = {"task": cfg.task, "source_run": str(args.run), "rollouts": done, "train_config": dataclasses.asdict(cfg)}
    out = export_policy(model, tokenizer, args.out, record)
    print(f"wrote {out}: the policy of {args.run} after {done} rollouts (task {cfg.task})")


def _sweep(args: argparse.Namespace, command: str) -> None:
    from gspo_lab.experiments.runner import run_core, run_sweep
    from gspo_lab.experiments.spec import core_specs, load_spec
    from gspo_lab.experiments.store import merge

    if args.workers is not None and args.workers < 1:
        raise ValueError(f"workers must be >= 1, got {args.workers}")
    if args.ray is not None and (args.core or args.merge or args.workers is not None):
        raise ValueError("--ray runs the named specs on a cluster: not with --core, --merge or --workers")
    named = [load_spec(p) for p in args.specs]
    if not named and not args.core:
        raise ValueError("specs: name at least one spec file, or pass --core")
    seeds = args.seeds or ("confirm" if args.core else "all")
    if args.core and not args.merge:  # the core set runs (and is timed) as one
        record = run_core(workers=args.workers, seeds=seeds, command=command)
        print(f"core set: {record['cells_run']} cells run, {record['cells_skipped']} already stored, "
              f"{record['wall_s'] / 60:.1f} min with {record['workers']} workers")  # fmt: skip
    todo = named + (core_specs() if args.core and args.merge else [])
    for spec in todo:  # a spec named on the command line runs whole (the core set ran above)
        if args.merge:
            table = merge(spec)
        elif args.ray is not None:
            from gspo_lab.experiments.cluster import run_sweep_ray

            table = run_sweep_ray(spec, address=args.ray, seeds=seeds, command=command)
        else:
            table = run_sweep(spec, seeds=seeds, workers=args.workers, command=command)
        print(f"{spec.name}: {len(table)} finished cells -> data/results/{spec.name}.csv")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser()
    if argv[:1] == ["bench"]:  # everything after `bench` is bench_step.py's, flags included (argparse would claim them)
        args = argparse.Namespace(command="bench", args=list(argv[1:]))
    else:
        args = parser.parse_args(argv)
    command = "gspo-lab " + shlex.join(argv)
    try:
        if args.command == "sft":
            from gspo_lab.sft import SFTConfig, run_sft

            record = run_sft(_config(SFTConfig, args), args.out, command=command)
            print(f"saved {args.out}: {record['steps']} steps, mean accuracy {record['mean_accuracy']:.3f}")
        elif args.command == "train":
            import time

            from gspo_lab.paths import runs_dir
            from gspo_lab.train import train

            cfg = _train_config(args)
            run_dir = Path(args.run_dir or runs_dir() / f"{cfg.objective}-{time.strftime('%Y%m%d-%H%M%S')}")
            table = train(cfg, run_dir, resume=args.resume)
            last = table[table["rollout"] == table["rollout"].max()].iloc[-1]
            print(f"{run_dir}: {len(table)} updates, last reward {last['reward/mean']:.3f}")
        elif args.command == "eval":
            _eval(args)
        elif args.command == "export":
            _export(args)
        elif args.command == "sweep":
            _sweep(args, command)
        elif args.command == "bench":
            import importlib.util
            import runpy

            missing = [m for m in BENCH_MODULES if importlib.util.find_spec(m) is None]
            if missing:
                parser.exit(
                    2,
                    f"gspo-lab bench: error: the benchmark compares against TRL, which the main install leaves out "
                    f"(missing: {', '.join(missing)}); install it with `bash scripts/bench.sh` "
                    f"(or `pip install -e '.[bench]'`)\n",
                )

            from gspo_lab.paths import repo_root

            sys.argv = ["bench_step.py", *args.args]
            runpy.run_path(str(repo_root() / "bench" / "bench_step.py"), run_name="__main__")
    except (ValueError, TypeError, FileNotFoundError, FileExistsError) as err:
        parser.exit(2, f"gspo-lab {args.command}: error: {_as_flags(str(err), parser, args.command)}\n")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
