"""Tasks: rewards on hand-written completions (malformed ones included), sampler determinism, shipped splits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from gspo_lab.tasks import AddTask, SortTask, get_task, load_split, make_splits
from gspo_lab.tokenizer import ALPHABET, build_tokenizer, load_tokenizer

DATA = Path(__file__).resolve().parents[1] / "data"


def test_sort_problem_and_rewards():
    task = SortTask()
    p = task.make([3, 1, 4, 1, 5], 5)
    assert (p.prompt, p.answer, p.target) == ("S:31415>", "11345", "11345")
    assert task.reward(p, "11345") == 1.0
    for wrong in ("11354", "1134", "113455", "", "1|11345", "S:11345", "11 345"):
        assert task.reward(p, wrong) == 0.0, wrong
    assert task.token_credit(p, "11354") == [1, 1, 1, 0, 0]
    assert task.partial_reward(p, "11354") == pytest.approx(3 / 5)
    assert task.partial_reward(p, "113") == pytest.approx(3 / 5)  # missing characters cost credit
    assert task.partial_reward(p, "1134500") == pytest.approx(5 / 7)  # so do extra ones
    assert task.partial_reward(p, "") == 0.0 and task.partial_reward(p, "11345") == 1.0


def test_add_with_scratchpad():
    task = AddTask(scratchpad=True)
    p = task.make([9, 5, 0, 7], 2)  # 95 + 07
    assert p.prompt == "A:95+07="
    assert p.answer == "102"
    assert p.target == "5+7+0=12;9+0+1=10|102"
    assert task.reward(p, p.target) == 1.0
    # the verifier checks the final answer only (the text after the last "|"), as the paper's verifiers do
    assert task.reward(p, "102") == 1.0  # the answer alone: the scratchpad is not required
    assert task.reward(p, "5+7+0=13;9+0+1=10|102") == 1.0  # a wrong step, the right answer
    assert task.reward(p, "5+7+0=12;9+0+1=10|103") == 0.0
    assert task.reward(p, "5+7+0=12;9+0+1=10|102|1") == 0.0  # the last "|" decides
    assert task.reward(p, "5+7+0=12;9+0+1=10|0102") == 0.0 and task.reward(p, "") == 0.0
    assert task.partial_reward(p, "5+7+0=12;9+0+1=10|103") == pytest.approx(20 / 21)


def test_add_without_scratchpad():
    task = AddTask(scratchpad=False)
    p = task.make([0, 0, 0, 0], 2)
    assert (p.prompt, p.target) == ("A:00+00=", "0")
    assert task.reward(p, "0") == 1.0 and task.reward(p, "00") == 0.0


def test_sampler_is_seeded_and_uses_its_generator():
    task = get_task("sort")
    a = task.sample(4, 6, torch.Generator().manual_seed(7))
    torch.manual_seed(123)  # the global RNG must not matter
    b = task.sample(4, 6, torch.Generator().manual_seed(7))
    assert a == b and all(len(p.answer) == 6 for p in a)
    with pytest.raises(ValueError, match="length must be >= 1"):
        task.sample(1, 0, torch.Generator())
    with pytest.raises(ValueError, match="task must be one of"):
        get_task("reverse")


@pytest.mark.parametrize("name", ["sort", "add", "add_format"])
def test_shipped_splits_are_the_generator_output_and_disjoint(name):
    task = get_task(name)
    shipped = json.loads((DATA / "tasks" / f"{task.split_name}.json").read_text())
    assert shipped == make_splits(task)
    for length in task.lengths:
        train, ev = set(shipped["train"][str(length)]), set(shipped["eval"][str(length)])
        assert len(train) == 512 and len(ev) == 128 and not train & ev
    problems = load_split(task, "eval", task.lengths[0], DATA)
    assert all(task.reward(p, p.target) == 1.0 for p in problems)
    with pytest.raises(ValueError, match="length must be one of"):
        load_split(task, "eval", 99, DATA)


def test_tokenizer_round_trip(tmp_path):
    tok = build_tokenizer()
    text = "A:95+07=5+7+0=12;9+0+1=10|102"
    ids = tok(text, add_special_tokens=False).input_ids
    assert len(ids) == len(text) and tok.decode(ids) == text
    assert set(ALPHABET) >= set(text)
    tok.save_pretrained(tmp_path)
    again = load_tokenizer(tmp_path)
    assert again(text, add_special_tokens=False).input_ids == ids
    assert (again.pad_token_id, again.bos_token_id, again.eos_token_id) == (0, 1, 2)
    assert len(again) == 4 + len(ALPHABET)


def test_add_format_rewards_the_answer_only_with_the_scratchpad_form():
    """add_format (issue 37 part B): the final answer counts only inside L well-formed columns, so a correct
    completion has exactly the target's length; the columns' arithmetic is not checked (form, not content)."""
    task, plain = get_task("add_format"), get_task("add")
    for L in (2, 4, 7):
        p = load_split(task, "eval", L, DATA)[0]
        assert p == load_split(plain, "eval", L, DATA)[0]  # the same problems as add
        assert task.reward(p, p.target) == 1.0 and len(p.target) in (10 * L, 10 * L + 1)
        bare = "|" + p.answer
        assert plain.reward(p, bare) == 1.0 and task.reward(p, bare) == 0.0  # add takes it; add_format does not
        columns, answer = p.target.split("|")
        dropped = columns.split(";", 1)[1] + "|" + answer  # one column short
        doubled = columns + ";" + columns.split(";")[0] + "|" + answer  # one column too many
        assert task.reward(p, dropped) == 0.0 and task.reward(p, doubled) == 0.0
        bad_carry = p.target.replace("=", "+0=", 1)  # a malformed column
        assert task.reward(p, bad_carry) == 0.0
        wrong_digit = ("8" if p.target[0] == "9" else "9") + p.target[1:]  # well-formed, wrong arithmetic
        assert task.reward(p, wrong_digit) == 1.0
        wrong_answer = columns + "|" + str(int(p.answer) + 1)
        assert task.reward(p, wrong_answer) == 0.0
