"""Write tests/data/lag0_reference.json: three short runs' weights (SHA-256) and logged numbers.

Run at 1b764d2, the last commit without ``TrainConfig.rollout_lag``, so tests/test_staleness.py can check that lag 0
is the synchronous loop bit for bit. Rerunning it later only records the current loop (its ``made_at`` says which
commit): do that only when the loop's numbers change on purpose (``CODE_VERSION``).

    .venv/bin/python tests/data/make_lag0_reference.py
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from dataclasses import replace
from pathlib import Path

import torch

from gspo_lab.config import SMOKE
from gspo_lab.step import init_state
from gspo_lab.train import train

KEYS = ("rollouts", "objective", "old_logp", "sampler_correction", "opsm_threshold", "eval_every", "eval_prompts")
BASE = replace(SMOKE, checkpoint="sweep-sort", rollouts=3)
CFGS = {
    "recompute": replace(BASE, eval_every=1, eval_prompts=8),
    "sampler_token_truncate": replace(BASE, objective="grpo", sampler_correction="token_truncate", opsm_threshold=0.5),
    "behaviour": replace(BASE, objective="cispo", old_logp="sampler"),
}


def _floats(values) -> list:
    return [None if v != v else float(v) for v in values]


def main() -> None:
    commit = subprocess.check_output(["git", "rev-parse", "HEAD"], text=True).strip()
    out = {"made_at": commit, "torch": torch.__version__, "runs": {}}
    for name, cfg in CFGS.items():
        state = init_state(cfg)
        table = train(cfg, progress=False, model=state.model, tokenizer=state.tokenizer)
        h = hashlib.sha256()
        for k, v in state.model.state_dict().items():
            h.update(k.encode())
            h.update(v.numpy().tobytes())
        ev = table.attrs["eval"]
        out["runs"][name] = {
            "config": {k: getattr(cfg, k) for k in KEYS},
            "weights_sha256": h.hexdigest(),
            "history": {c: _floats(table[c]) for c in table.columns if not c.startswith("time/")},
            "eval": {c: _floats(ev[c]) for c in ev.columns if not c.startswith("time/")},
        }
    path = Path(__file__).with_name("lag0_reference.json")
    path.write_text(json.dumps(out, indent=0, sort_keys=True))
    print({k: v["weights_sha256"][:12] for k, v in out["runs"].items()})


if __name__ == "__main__":
    main()
