"""Draw the report's figures (matplotlib, Agg backend): ``draw`` calls a family's draw function
(``@drawer`` in the drawing modules imported here: ``f(tables, *, metric, **wildcards)``) and
``save`` writes it reproducibly."""

from __future__ import annotations

import os

import matplotlib.pyplot as plt

# the drawing modules are imported for their ``@drawer`` registrations
from numa_effects.compare import plots as compare_plots  # noqa: F401
from numa_effects.report import (  # noqa: F401
    drawers,
    families,
    node_pair_plots,
    numa_plots,
    packing_plots,
    precision_plots,
    sequential_plots,
)
from numa_effects.report.data import Tables
from numa_effects.report.style import DPI


def draw(family: str, tables: Tables, wildcards: dict):
    """The matplotlib figure of ``family`` for ``wildcards``: its draw function with its metric."""
    fam = families.BY_NAME[family]
    w = {k: wildcards[k] for k in fam.wildcards}
    return drawers.DRAWERS[family](tables, metric=fam.metric, **w)


def save(fig, png: str, svg: str | None = None) -> None:
    """PNG (and SVG) without timestamps, so re-drawing the same data gives the same files;
    cropped to the tight box plus 0.15 in, found once for both files (``bbox_inches="tight"``
    would draw the figure once more per file)."""
    fig.set_dpi(DPI)
    bbox = fig.get_tightbbox(fig.canvas.get_renderer()).padded(0.15)
    for path, kw in (
        (png, {"dpi": DPI, "metadata": {"Software": None}}),
        (svg, {"metadata": {"Date": None}}),
    ):
        if path is None:
            continue
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        tmp = f"{path}.tmp{os.path.splitext(path)[1]}"
        fig.savefig(tmp, bbox_inches=bbox, **kw)
        os.replace(tmp, path)
    plt.close(fig)
