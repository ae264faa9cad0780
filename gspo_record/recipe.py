"""The recipe page's context: its measured numbers (each read from a section's context, never typed) and the
registry's clip defaults with their sources."""

from __future__ import annotations

from gspo_lab.paths import repo_root
from gspo_record.fmt import by, num

__all__ = ["recipe", "knob_map"]

#: the objectives whose clip defaults the recipe's table lists, in its order
CLIP_TABLE = ("gspo", "grpo", "grpo_dual_clip", "luspo", "gmpo", "cispo", "cispo_clip", "cispo_mask", "sapo", "vespo")


def recipe(ctx: dict) -> dict:
    """The recipe page's measured numbers and the registry's clip defaults with their sources."""
    from gspo_lab.objectives import OBJECTIVES

    clips = []
    for name in CLIP_TABLE:
        spec = OBJECTIVES[name]
        band = "none (no ε)" if spec.clip is None else f"{num(spec.clip.low)} / {num(spec.clip.high)}"
        source = spec.clip.source if spec.clip is not None else spec.reference
        clips.append([f"`{name}`", band, spec.trust_region, f"`{spec.trl}`" if spec.trl else "—", source])
    f11c = ctx["f11c"]["verdicts"]
    return {
        "clips": clips,
        "capped": by(ctx["f2"]["verdicts"], "clip")["1"],
        "capped_late": ctx["f2late"]["capped"],  # GSPO − GRPO under a cap of 1 where it ended the collapse, per model
        "relative": [row for row in ctx["f10"]["shrink_cmp"] if "recent median" in row[1]],
        "relative_fresh": ctx["f10"]["fresh_cost"],
        "relative_seeds": ctx["f10"]["fresh_seeds"],
        "corrections": {"groups": _by_label(f11c), "of": len(f11c)},
        "f11c": f11c,
    }


def _by_label(verdicts: list[dict]) -> list[dict]:
    """Finding 11c's arms grouped by their statement's words, the largest group first: [{"label", "n", "text"}],
    ``text`` "no difference shown for 18", or for a group of one its arm, words, number and what makes it fragile
    ("MoE GSPO sequence_mask: helps, 0.0141 [8.47e-04, 0.0273], 4 of 5 seeds > 0, fragile: …")."""
    from gspo_record.prose import fragile_note

    groups: dict[str, list[dict]] = {}
    for v in verdicts:
        groups.setdefault(v["verdict"].label, []).append(v)
    out = []
    for label, arms in sorted(groups.items(), key=lambda g: -len(g[1])):
        one = arms[0]
        s = one["verdict"]
        text = (f"{label} for {len(arms)}" if len(arms) > 1 else
                f"{one['model']} {one['objective'].upper()} {one['arm']}: {label}, {s.number.brief}"
                f"{fragile_note(s, ', fragile')}")  # fmt: skip
        out.append({"label": label, "n": len(arms), "text": text})
    return out


def knob_map() -> str:
    """The README's table of gspo_lab's knobs with TRL's and verl's names (one source: the README, which
    ``tests/test_knob_map.py`` checks against TrainConfig and TRL's GRPOConfig), for the recipe page."""
    text = (repo_root() / "README.md").read_text()
    start = text.index("| gspo_lab `TrainConfig` | TRL `GRPOConfig` | verl |")
    lines = []
    for line in text[start:].splitlines():
        if not line.startswith("|"):
            break
        lines.append(line)
    return "\n".join(lines)
