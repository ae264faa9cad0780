"""Tasks with verifiable rewards and a tunable response length.

* ``sort``: ``S:31415>`` → ``11345``. Response length = L, the number of digits.
* ``add``: ``A:123+456=`` → ``579``; with ``scratchpad=True`` the response first spells every column from the
  least significant digit, ``3+6+0=09;2+5+0=07;1+4+0=05|579`` (a+b+carry_in=carry_out·sum_digit), so responses
  are ~9·L + L + 1 tokens long.
* ``add_format``: ``add``'s problems and scratchpad, rewarded only when the completion also *has the scratchpad's
  form*: L well-formed columns ``d+d+c=cd`` joined by ``;``, then ``|`` and the answer. A correct completion then
  has exactly the target's length (10·L or 10·L + 1 characters), so a length study at fixed L cannot be gamed by
  dropping the scratchpad (issue 37 part B). The columns' digits are not checked: only their form.

Rewards (all in [0, 1], the paper's verifier range):
    * :meth:`Task.reward` — exact match of the final answer, the text after the last ``|`` (what the paper's
      verifiers give: the scratchpad itself is not checked);
    * :meth:`Task.token_credit` — per completion character, 1.0 where it equals the target's character at that
      position (for per-token advantages); :meth:`Task.partial_reward` is its mean over max(len(completion),
      len(target)), so missing or extra characters cost credit.

A completion is the decoded response text up to (not including) the end-of-sequence token.
Prompts come from a seeded sampler (explicit ``torch.Generator``) and from fixed train/eval splits in
``data/tasks/`` (see :func:`make_splits`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import torch

__all__ = ["Problem", "Task", "SortTask", "AddTask", "AddFormatTask", "TASKS", "get_task", "make_splits", "load_split"]


@dataclass(frozen=True)
class Problem:
    """One query: the prompt text, the final answer, and the full target completion (for SFT and credit)."""

    prompt: str
    answer: str
    target: str


class Task:
    """Base class: subclasses define ``name``, ``lengths`` and :meth:`make`."""

    name: str = ""
    lengths: tuple[int, ...] = ()

    @property
    def split_name(self) -> str:
        """The file of ``data/tasks/`` holding this task's prompts (a task that rewards another's problems
        differently shares its splits)."""
        return self.name

    def make(self, digits: list[int], length: int) -> Problem:  # pragma: no cover - abstract
        raise NotImplementedError

    def n_digits(self, length: int) -> int:
        return length

    def sample(self, n: int, length: int, generator: torch.Generator) -> list[Problem]:
        """``n`` random problems of size ``length``, drawn with ``generator`` (never the global RNG)."""
        if length < 1:
            raise ValueError(f"length must be >= 1, got {length}")
        draws = torch.randint(0, 10, (n, self.n_digits(length)), generator=generator).tolist()
        return [self.make(d, length) for d in draws]

    answer_separator: str | None = None
    """What precedes the final answer in a completion with a scratchpad; None: the whole completion is the answer."""

    def answer_of(self, completion: str) -> str:
        """The final answer: the text after the last ``answer_separator`` (the whole completion without one)."""
        return completion if self.answer_separator is None else completion.rsplit(self.answer_separator, 1)[-1]

    def reward(self, problem: Problem, completion: str) -> float:
        """1.0 when the final answer (:meth:`answer_of`) is exactly right, else 0.0: the paper's verifiers check the
        final answer only, so a scratchpad with a wrong step but the right answer after ``|`` earns 1."""
        return float(self.answer_of(completion) == problem.answer)

    def token_credit(self, problem: Problem, completion: str) -> list[float]:
        """Per character of ``completion``: 1.0 where it matches the target at that position, else 0.0."""
        return [float(i < len(problem.target) and c == problem.target[i]) for i, c in enumerate(completion)]

    def credit_matrix(self, problems: list[Problem], completions: list[str], mask: torch.Tensor) -> torch.Tensor:
        """(B, T) float64 per-token credit of a batch: :meth:`token_credit` per character (one token each), and
        the token after the last character (<eos>) gets 1.0 when the completion has the target's length. 0 at
        padding. ``mask``: (B, T) bool response mask."""
        credit = torch.zeros(mask.shape, dtype=torch.float64)
        lengths = mask.sum(-1).tolist()
        for i, (p, c) in enumerate(zip(problems, completions, strict=True)):
            row = self.token_credit(p, c) + [float(len(c) == len(p.target))]
            n = min(len(row), int(lengths[i]))
            credit[i, :n] = torch.tensor(row[:n], dtype=torch.float64)
        return credit

    def partial_reward(self, problem: Problem, completion: str) -> float:
        """Matched characters / max(len(completion), len(target)): in [0, 1], 1 only for the exact target."""
        return sum(self.token_credit(problem, completion)) / max(len(completion), len(problem.target), 1)


class SortTask(Task):
    """Sort a string of L digits ascending."""

    name = "sort"
    lengths = tuple(range(4, 21))

    def make(self, digits: list[int], length: int) -> Problem:
        s = "".join(map(str, digits))
        answer = "".join(sorted(s))
        return Problem(prompt=f"S:{s}>", answer=answer, target=answer)


class AddTask(Task):
    """Add two L-digit numbers (leading zeros allowed); optionally with a carry scratchpad."""

    name = "add"
    lengths = tuple(range(2, 9))

    def __init__(self, scratchpad: bool = True):
        self.scratchpad = scratchpad
        self.answer_separator = "|" if scratchpad else None

    def n_digits(self, length: int) -> int:
        return 2 * length

    def make(self, digits: list[int], length: int) -> Problem:
        a, b = "".join(map(str, digits[:length])), "".join(map(str, digits[length:]))
        answer = str(int(a) + int(b))
        target = answer
        if self.scratchpad:
            steps, carry = [], 0
            for da, db in zip(reversed(a), reversed(b), strict=True):
                total = int(da) + int(db) + carry
                steps.append(f"{da}+{db}+{carry}={total // 10}{total % 10}")
                carry = total // 10
            target = ";".join(steps) + "|" + answer
        return Problem(prompt=f"A:{a}+{b}=", answer=answer, target=target)


class AddFormatTask(AddTask):
    """``add`` with the scratchpad's form enforced by the reward: 1.0 only when the completion is L well-formed
    columns (``d+d+c=cd``, joined by ``;``) then ``|`` and the right answer. Same problems, splits and targets as
    ``add``; the columns' arithmetic is not checked (a verifier of form, as production format rewards are)."""

    name = "add_format"

    def __init__(self):
        super().__init__(scratchpad=True)

    @property
    def split_name(self) -> str:
        return "add"

    @staticmethod
    def form(columns: int) -> re.Pattern:
        """The completion's required form with ``columns`` (= L) columns."""
        column = r"\d\+\d\+[01]=[01]\d"
        return re.compile(rf"(?:{column};){{{columns - 1}}}{column}\|\d+")

    def reward(self, problem: Problem, completion: str) -> float:
        """1.0 when the completion has the form (:meth:`form`, L = the target's columns) and the right answer."""
        columns = problem.target.count(";") + 1
        return float(self.form(columns).fullmatch(completion) is not None and super().reward(problem, completion))


TASKS: dict[str, Task] = {"sort": SortTask(), "add": AddTask(scratchpad=True), "add_format": AddFormatTask()}


def get_task(name: str) -> Task:
    try:
        return TASKS[name]
    except KeyError:
        raise ValueError(f"task must be one of {sorted(TASKS)}, got {name!r}") from None


#: sizes of the shipped splits, per task and length
SPLIT_SIZES = {"train": 512, "eval": 128}
SPLIT_SEED = 20250728  # the paper's v2 date: any fixed number would do


def make_splits(task: Task, seed: int = SPLIT_SEED) -> dict[str, dict[str, list[str]]]:
    """Disjoint train/eval prompt lists for every length of ``task``: {"train": {"L": [prompt, ...]}, "eval": ...}.

    Deterministic in ``seed``; the files in ``data/tasks/`` are this function's output (a test regenerates them).
    """
    out: dict[str, dict[str, list[str]]] = {split: {} for split in SPLIT_SIZES}
    for length in task.lengths:
        g = torch.Generator().manual_seed(seed * 1000 + length)
        seen: set[str] = set()
        for split, size in SPLIT_SIZES.items():
            prompts: list[str] = []
            while len(prompts) < size:
                for p in task.sample(size, length, g):
                    if p.prompt not in seen and len(prompts) < size:
                        seen.add(p.prompt)
                        prompts.append(p.prompt)
            out[split][str(length)] = prompts
    return out


def parse_prompt(task: Task, prompt: str) -> Problem:
    """Rebuild the :class:`Problem` of a stored prompt."""
    is_sort = isinstance(task, SortTask)
    body = prompt[2:-1] if is_sort else prompt[2:-1].replace("+", "")
    length = len(body) if is_sort else len(body) // 2
    return task.make([int(c) for c in body], length)


def load_split(task: Task, split: str, length: int, data_dir: str | Path | None = None) -> list[Problem]:
    """The shipped ``split`` ("train" / "eval") problems of ``task`` at ``length`` (data_dir: default ``data/``)."""
    from gspo_lab.paths import data_dir as default_data_dir

    folder = Path(data_dir) if data_dir is not None else default_data_dir()
    table = json.loads((folder / "tasks" / f"{task.split_name}.json").read_text())
    if split not in table:
        raise ValueError(f"split must be one of {sorted(table)}, got {split!r}")
    if str(length) not in table[split]:
        raise ValueError(f"length must be one of {sorted(map(int, table[split]))} for task {task.name!r}")
    return [parse_prompt(task, p) for p in table[split][str(length)]]
