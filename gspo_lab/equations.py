"""The GSPO paper's equation numbers, in one table that the library, the notebooks and the book cite from.

Numbers follow arXiv 2507.18071 v2 (2025-07-28), the paper's own numbering. A citation elsewhere is checked against
this table by ``tests/test_equations.py``: each gradient equation must be attributed to its owner (:data:`OWNERS`),
the recurrence a reader found on three pages.

    >>> eq("gspo_gradient")
    'Eq. 10'
"""

from __future__ import annotations

__all__ = ["EQUATIONS", "eq", "OWNERS"]

#: name -> (citation, what it is)
EQUATIONS: dict[str, tuple[str, str]] = {
    "grpo_objective": ("Eq. 2", "GRPO's objective: a clipped token-ratio term per token, token mean per response"),
    "token_ratio": ("Eq. 3", "GRPO's token ratio w_{i,t} = π_θ(y_{i,t} | x, y_{i,<t}) / π_old(y_{i,t} | x, y_{i,<t})"),
    "gspo_objective": ("Eq. 5", "GSPO's objective: one clipped sequence-ratio term per response"),
    "group_advantage": ("Eq. 6", "the group advantage Â_i = (r_i − mean_j r_j) / std_j r_j"),
    "sequence_ratio": ("Eq. 7", "GSPO's sequence ratio s_i = (π_θ(y_i | x) / π_old(y_i | x))^{1/|y_i|}"),
    "gspo_gradient": ("Eq. 10", "GSPO's gradient: s_i Â_i times the mean of ∇ log π over the response's tokens"),
    "grpo_gradient": ("Eqs. 11-12", "GRPO's gradient: Â_i times the mean of w_{i,t} ∇ log π over the tokens"),
    "gspo_token": ("Eqs. 13-14", "GSPO-token: its objective and its token ratio s_{i,t}"),
}

#: the gradient equations a citation must attribute to the right algorithm: number -> algorithm
OWNERS: dict[int, str] = {10: "GSPO", 11: "GRPO", 12: "GRPO"}


def eq(name: str) -> str:
    """The citation of equation ``name`` ("Eq. 7", "Eqs. 11-12"); a KeyError names the known ones."""
    try:
        return EQUATIONS[name][0]
    except KeyError:
        raise KeyError(f"no equation {name!r}; known: {', '.join(EQUATIONS)}") from None
