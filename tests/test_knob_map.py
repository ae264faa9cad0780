"""The README's table mapping our knobs to TRL's and verl's names: every gspo_lab name is a TrainConfig field and
every TRL name is a field of TRL's own GRPOConfig (or, for GMPO's row, of the experimental GMPOConfig, a subclass) —
verl is not installed here; its column is not checked."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from trl import GRPOConfig

from gspo_lab.config import TrainConfig

README = Path(__file__).resolve().parents[1] / "README.md"


def _table() -> list[tuple[str, str, str]]:
    text = README.read_text()
    start = text.index("| gspo_lab `TrainConfig` | TRL `GRPOConfig` | verl |")
    rows = []
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        rows.append(tuple(cell.strip() for cell in line.strip("|").split("|")))
    return rows


def _names(cell: str) -> set[str]:
    """The identifiers in backticks, without `="value"` parts."""
    return {re.split(r"[=.]", code)[0] for code in re.findall(r"`([^`]+)`", cell)}


def test_knob_map_names_real_fields():
    rows = _table()
    assert len(rows) >= 12
    ours = {f.name for f in dataclasses.fields(TrainConfig)}
    from trl.experimental.gmpo import GMPOConfig

    trl = {f.name for f in dataclasses.fields(GRPOConfig)} | {f.name for f in dataclasses.fields(GMPOConfig)}
    for our_cell, trl_cell, _ in rows:
        assert _names(our_cell) and _names(our_cell) <= ours, our_cell
        assert _names(trl_cell) and _names(trl_cell) <= trl, trl_cell
    for knob in (
        "minibatches",
        "epochs",
        "eps_low",
        "eps_high",
        "beta",
        "group_size",
        "sampler_correction",
        "opsm_threshold",
    ):
        assert any(knob in _names(r[0]) for r in rows), knob
    from gspo_lab.objectives import OBJECTIVES

    mapped = {re.search(r'objective="(\w+)"', r[0]).group(1) for r in rows if 'objective="' in r[0]}
    assert set(OBJECTIVES) - {"gspo_token", "gspo_token_mean"} <= mapped, "every objective has its row"
