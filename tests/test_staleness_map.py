"""The recipe page's staleness map (issue 38, item 2): the kit's row names a real TrainConfig field, TRL's row
matches the locked TRL's asynchronous GRPO config, every row names the version it was read at."""

from __future__ import annotations

import dataclasses
import os
import re

from gspo_lab.config import TrainConfig
from gspo_record.staleness_map import COLUMNS, ROWS, staleness_map


def _row(system: str) -> dict:
    return dict(zip(COLUMNS, next(r for r in ROWS if r[0].startswith(system)), strict=True))


def test_every_row_is_complete_and_names_where_it_was_read():
    assert all(len(r) == len(COLUMNS) and all(cell.strip() for cell in r) for r in ROWS)
    for r in ROWS[1:]:
        assert re.search(r"commit [0-9a-f]{7}|TRL \d+\.\d+", r[-1]), r[0]
    assert staleness_map().count("\n") == len(ROWS) + 1


def test_the_kits_knob_is_a_trainconfig_field_off_by_default():
    row = _row("gspo_lab")
    name, default = re.match(r"`(\w+)` \((\d+)\)", row["knob (default)"]).groups()
    fields = {f.name: f for f in dataclasses.fields(TrainConfig)}
    assert fields[name].default == int(default) == 0


def test_trls_row_is_the_locked_trls_async_grpo_config():
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    import trl
    from trl.experimental.async_grpo import AsyncGRPOConfig

    fields = {f.name: f for f in dataclasses.fields(AsyncGRPOConfig)}
    row = _row("TRL")
    assert f"TRL {trl.__version__.rsplit('.', 1)[0]} (the lock" in row["read at"]
    assert row["knob (default)"] == f"`max_staleness` ({fields['max_staleness'].default})"
    assert f"`weight_sync_steps` ({fields['weight_sync_steps'].default})" in row["unit"]
    assert f"ε {fields['epsilon'].default:g}" in row["correction paired with it (defaults)"]
    assert not any(name.startswith("vllm_importance_sampling") for name in fields)  # no weight to the sampler
