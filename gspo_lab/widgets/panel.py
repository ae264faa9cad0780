"""The base of every panel (:class:`Panel`: an Output for the figure, an HTML readout) and the shared slider helper.

Redraw order: the plot first, the text readout last — "the readout changed" implies "the plot changed" (a browser
test waits on the text). Every widget gets a stable CSS class (``gspo-…``) for those tests.
Fault injection for the browser tests: ``GSPO_LAB_FAULT=widget-callback`` makes every callback raise.
"""

from __future__ import annotations

import math
import os

import ipywidgets as W
import matplotlib.pyplot as plt
from IPython.display import display

__all__ = ["Panel", "check_fault", "eps_slider"]


def check_fault() -> None:
    if os.environ.get("GSPO_LAB_FAULT") == "widget-callback":
        raise RuntimeError("fault injected by GSPO_LAB_FAULT=widget-callback")


def eps_slider(default: float, exponent_range: tuple[float, float], description: str, step: float = 0.05):
    """A log slider whose grid passes through ``default`` exactly: the slider snaps to its grid when it renders,
    and a grid from ``min`` alone would move the paper's 3e-4 to 10^-3.5 = 3.16e-4."""
    lo, hi = exponent_range
    centre = math.log10(default)
    below, above = math.floor((centre - lo) / step + 1e-9), math.floor((hi - centre) / step + 1e-9)
    return W.FloatLogSlider(
        value=default,
        base=10,
        min=centre - below * step,
        max=centre + above * step,
        step=step,
        description=description,
        readout_format=".3g",
        layout=W.Layout(width="460px"),
    )


class Panel:
    """An Output for the figure and an HTML readout, redrawn by :meth:`show`."""

    def __init__(self, name: str):
        self.out = W.Output()
        self.out.add_class(f"gspo-{name}-plot")
        self.readout = W.HTML()
        self.readout.add_class(f"gspo-{name}-readout")

    @staticmethod
    def moved(change) -> bool:
        """Whether a slider change is a move: the browser echoes a float back at render with a last-digit
        rounding difference (Math.pow vs Python's 10**x), which must not redraw the panel."""
        old, new = change.get("old"), change.get("new")
        if isinstance(old, float) and isinstance(new, float):
            return not math.isclose(old, new, rel_tol=1e-9, abs_tol=0.0)
        return old != new

    def show(self, view, *args) -> str:
        check_fault()
        fig, text = view(*args)
        with self.out:
            self.out.clear_output(wait=True)
            display(fig)
        plt.close(fig)
        self.readout.value = text  # last: the text changing implies the plot changed
        return text
