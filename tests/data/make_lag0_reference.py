import hashlib, json, subprocess
from dataclasses import replace
import torch
from gspo_lab.config import SMOKE
from gspo_lab.step import init_state
from gspo_lab.train import train

CFGS = {
    "recompute": replace(SMOKE, checkpoint="sweep-sort", rollouts=3, eval_every=1, eval_prompts=8),
    "sampler_token_truncate": replace(SMOKE, checkpoint="sweep-sort", rollouts=3, objective="grpo",
                                      sampler_correction="token_truncate", opsm_threshold=0.5),
    "behaviour": replace(SMOKE, checkpoint="sweep-sort", rollouts=3, objective="cispo", old_logp="sampler"),
}
out = {"made_at": subprocess.check_output(["git", "rev-parse", "HEAD"], text=True).strip(),
       "torch": torch.__version__, "runs": {}}
for name, cfg in CFGS.items():
    state = init_state(cfg)
    table = train(cfg, progress=False, model=state.model, tokenizer=state.tokenizer)
    h = hashlib.sha256()
    for k, v in state.model.state_dict().items():
        h.update(k.encode()); h.update(v.numpy().tobytes())
    cols = [c for c in table.columns if not c.startswith("time/")]
    ev = table.attrs["eval"]
    out["runs"][name] = {"config": {k: getattr(cfg, k) for k in ("rollouts","objective","old_logp","sampler_correction","opsm_threshold","eval_every","eval_prompts")},
                         "weights_sha256": h.hexdigest(),
                         "history": {c: [None if v != v else float(v) for v in table[c]] for c in cols},
                         "eval": {c: [float(v) for v in ev[c]] for c in ev.columns if not c.startswith("time/")}}
json.dump(out, open("tests/data/lag0_reference.json", "w"), indent=0, sort_keys=True)
print({k: v["weights_sha256"][:12] for k, v in out["runs"].items()})
