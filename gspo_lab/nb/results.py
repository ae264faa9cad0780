"""Notebook results: claims with verdicts and headline numbers, written as JSON to a path papermill passes in.

Every notebook ends with one ``record_results(results_path, ...)`` call. The tests read the JSON back and assert the
claims; the main job's book (``gspo_lab.nb.book``) shows them. (papermill's own ``record`` is gone and scrapbook is
unmaintained since 2021.) ``results_path=None`` — the interactive default — writes nothing.

JSON layout::

    {"notebook": "03_clipping", "parameters": {...},
     "claims": [{"name": ..., "statement": ..., "value": ..., "op": ">=", "threshold": ..., "passed": true}],
     "numbers": {"gspo_clip_token_frac": 0.15, ...}}
"""

from __future__ import annotations

import json
import math
import operator
import os
from dataclasses import asdict, dataclass
from pathlib import Path

__all__ = ["Claim", "claim", "fmt", "takeaway", "record_results", "load_results", "summarize"]

_OPS = {">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt}


@dataclass(frozen=True)
class Claim:
    """A statement checked on this run's numbers: ``value op threshold``."""

    name: str
    statement: str
    value: float
    op: str
    threshold: float
    passed: bool

    def __str__(self) -> str:
        mark = "PASS" if self.passed else "FAIL"
        return f"[{mark}] {self.statement}: {self.value:.4g} {self.op} {self.threshold:.4g}"


def claim(name: str, statement: str, value: float, op: str, threshold: float) -> Claim:
    """Check ``value op threshold`` (op one of >=, <=, >, <); NaN never passes."""
    if op not in _OPS:
        raise ValueError(f"op must be one of {sorted(_OPS)}, got {op!r}")
    value, threshold = float(value), float(threshold)
    passed = bool(not math.isnan(value) and _OPS[op](value, threshold))
    return Claim(name, statement, value, op, threshold, passed)


def _clean(x):
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    if hasattr(x, "item"):  # numpy / torch scalars
        return x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


class Takeaway(str):
    """A notebook's "What to take away" as Markdown text; Jupyter renders it (``_repr_markdown_``), print shows it."""

    def _repr_markdown_(self) -> str:
        return str(self)


def takeaway(points: list[str], why: str, claims: list[Claim] = ()) -> Takeaway:
    """The notebook's take-away rendered from this run: ``points`` (f-strings over its own numbers), each held claim
    marked by its verdict, then one sentence on how the notebook answers *why is GSPO more stable?* (``why``)."""
    if not points or not why.strip():
        raise ValueError("takeaway needs at least one point and a non-empty `why`")
    held = [f"{'held' if c.passed else 'FAILED'}: {c.statement}" for c in claims]
    why = why.strip()[0].upper() + why.strip()[1:]
    lines = [f"* {p}" for p in points]
    if held:
        lines.append(f"* Claims checked on this run — {'; '.join(held)}.")
    return Takeaway("\n".join(lines) + f"\n\n**Why is GSPO more stable?** {why}\n")


def fmt(x: float) -> str:
    """A number as the book prints it: 3 significant digits (``0.00322``, ``105``, ``1.2e-07``)."""
    x = float(x)
    if not math.isfinite(x):
        return str(x)
    return f"{x:.3g}" if x == 0 or 1e-3 <= abs(x) < 1e4 else f"{x:.2e}"


def record_results(
    path: str | Path | None, notebook: str, claims: list[Claim], numbers: dict, parameters: dict | None = None
) -> dict:
    """Print the verdicts; write the results JSON atomically to ``path`` (nothing when None). Returns the dict."""
    out = {
        "notebook": notebook,
        "parameters": _clean(parameters or {}),
        "claims": [asdict(c) for c in claims],
        "numbers": _clean(numbers),
    }
    for c in claims:
        print(c)
    if path is not None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(out, indent=1))
        os.replace(tmp, path)
    return out


def load_results(path: str | Path) -> dict:
    return json.loads(Path(path).read_text())


def summarize(runs: list[dict]) -> dict:
    """Counts over ``run_all``'s records: ``notebooks``, ``notebooks_ok``, ``claims``, ``claims_passed``.

    Claims are read from each run's results JSON (``run["results"]``; a run without one counts no claims).
    """
    paths = [Path(run["results"]) for run in runs if run.get("results")]
    claims = [c for path in paths if path.is_file() for c in load_results(path).get("claims") or []]
    return {
        "notebooks": len(runs),
        "notebooks_ok": sum(bool(run.get("ok")) for run in runs),
        "claims": len(claims),
        "claims_passed": sum(bool(c.get("passed")) for c in claims),
    }
