"""How the report's figures look: colours (the registries' ``color``, else a spare one chosen
by name so a line has the same colour in every figure), labels, the marks of cells that are not
a clean measured value, number formats and the colour-scale limit.

matplotlib is imported only by the functions that need it, so importing this module stays cheap.
"""

from __future__ import annotations

import zlib

import numpy as np

from numa_effects.plan import placement as placement_mod
from numa_effects.plan.allocators import ALLOCATORS
from numa_effects.plan.optimizations import OPTIMIZATIONS

# Spare colours: seaborn's "colorblind" pink, yellow and grey, then its "dark" palette (hex, so
# line plots need not import seaborn: its import, scipy.stats included, doubles the start-up
# time of every figure job).
_SPARE = [
    *("#fbafe4", "#ece133", "#949494", "#001c7f", "#b1400d", "#12711c", "#8c0800", "#591e71"),
    *("#592f0d", "#a23582", "#3c3c3c", "#b8850a", "#006374"),
]

# How a cell that is not a measured value is drawn (line plots: along the x axis, below it).
# ``same binding``: a comparison of one measurement with itself (``plan.binding``), no difference
SAME_BINDING = "same binding"
# status -> (marker along the x axis, heatmap text, legend text)
_STATUSES = {
    "failed": ("X", "failed", "failed (no value)"),
    "skipped": ("s", "skipped", "skipped (no value)"),
    "contended": (
        "D",
        "contended (no clean iteration)",
        "contended (no clean iteration): no value",
    ),
    "missing": ("$?$", "missing", "missing (no value)"),
    SAME_BINDING: (
        "$=$",
        "same binding (measured once)",
        "the baseline's binding: measured once, no difference",
    ),
}
STATUS_MARKERS, STATUS_TEXT, STATUS_LEGEND = (
    {s: v[i] for s, v in _STATUSES.items()} for i in range(3)
)
HOLLOW_STATUSES = ("skipped", "contended")  # drawn unfilled
STATUS_STEP_PT = 9.0  # line plots: markers at one x stacked this far apart below the x axis
NOT_SIGNIFICANT = "not significant (the CI of the difference includes 0)"
NOT_SIGNIFICANT_HATCH = "////"

# A cell whose timing was disturbed (cells.csv ``contended`` or ``noisy``): never drawn like a
# clean one. Line plots ring the point; heatmaps cross-hatch the cell.
DISTURBED = "disturbed"  # the key in the set of marks a drawing returns
DISTURBED_TEXT = "contended or noisy (timing disturbed)"
DISTURBED_COLOR = "#b00020"
DISTURBED_MARK = {
    "marker": "o",
    "markersize": 12,
    "markerfacecolor": "none",
    "markeredgecolor": DISTURBED_COLOR,
    "markeredgewidth": 1.6,
    "linestyle": "none",
}
DISTURBED_HATCH = "xx"

DPI = 110
LOG_Y_RATIO = 30.0  # a y range wider than this factor is drawn on a log scale


def apply() -> None:
    """The figures' matplotlib style (Agg backend, whitegrid, reproducible SVG ids)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.style.use("seaborn-v0_8-whitegrid")  # = seaborn.set_theme(style="whitegrid")
    plt.rcParams.update({"svg.hashsalt": "numa-effects", "figure.max_open_warning": 0})


def _cmap(name: str):
    import matplotlib

    return matplotlib.colormaps[name]


def _spare(name: str):
    """A spare colour chosen by the name (a CRC, not a sum of characters: the members of a
    family such as ``n0m1`` and ``n1m0`` are permutations of each other)."""
    return _SPARE[zlib.crc32(name.encode()) % len(_SPARE)]


def opt_color(opt: str):
    return getattr(OPTIMIZATIONS.get(opt), "color", None) or _spare(opt)


def opt_label(opt: str) -> str:
    return getattr(OPTIMIZATIONS.get(opt), "legend", opt)


# An allocator's line style (registry order): an optimization keeps its colour, the allocator
# changes the dash, so (opt, allocator) lines are read both ways.
ALLOCATOR_DASHES = ("-", "--", ":", "-.")
NON_NATIVE = "non-native"  # the mark of a dtype this CPU does not compute natively


def allocator_linestyle(name: str) -> str:
    known = list(ALLOCATORS)
    i = known.index(name) if name in known else len(known) + zlib.crc32(name.encode())
    return ALLOCATOR_DASHES[i % len(ALLOCATOR_DASHES)]


def allocator_label(name: str) -> str:
    return getattr(ALLOCATORS.get(name), "legend", name)


def _placement_entry(label: str):
    """(registry index, entry, field values) of a placement label; index = len when unknown."""
    name = placement_mod.parse_label(str(label))[0]
    try:
        entry, fields = placement_mod.lookup(name)
    except ValueError:
        return len(placement_mod.PLACEMENTS), None, {}
    return list(placement_mod.PLACEMENTS).index(entry.name), entry, fields


def placement_color(placement: str):
    """Its family's colour (SMT labels share it), else a spare one."""
    _, entry, _ = _placement_entry(placement)
    return getattr(entry, "color", None) or _spare(placement_mod.parse_label(str(placement))[0])


def batch_color(bs: int, all_bs: list[int]):
    """By rank among the run's batch sizes: the same in every figure of a run."""
    ranks = sorted(set(all_bs))
    return _cmap("viridis")(0.9 * ranks.index(bs) / max(1, len(ranks) - 1))


def thread_color(t: int, all_t: list[int]):
    return _cmap("plasma")(0.78 * (t - min(all_t)) / max(1, max(all_t) - min(all_t)))


def opt_order(opt: str):
    known = list(OPTIMIZATIONS)
    return (known.index(opt) if opt in known else len(known), opt)


def placement_order(p: str):
    """Registry order, then a family's members by their fields, then the label."""
    index, _, fields = _placement_entry(p)
    return (index, tuple(fields.values()), p)


def fmt(v: float) -> str:
    return f"{v:.0f}" if abs(v) >= 100 else f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"


def pct1(v: float) -> str:
    """One decimal, without a "-0.0"."""
    return f"{v:.1f}" if round(v, 1) != 0 else "0.0"


def color_limit(values: np.ndarray) -> tuple[float, str]:
    """Half-range of the diverging scale and the colour bar's ``extend``: the largest |value|,
    or with 20 or more values the 95th percentile of |value| when the maximum is over twice it
    (so a few outliers do not wash out every other cell)."""
    a = np.abs(values[~np.isnan(values)])
    if a.size == 0:
        return 1.0, "neither"
    top = float(a.max())
    if a.size >= 20:
        p95 = float(np.percentile(a, 95))
        if top > 2 * p95 > 0:
            return p95, "both"
    return max(top, 0.1), "neither"


def status_legend(marks: set[str]) -> list:
    """Legend entries of the marks a line plot drew (``draw_lines``)."""
    from matplotlib.lines import Line2D

    handles = [
        Line2D(
            [],
            [],
            marker=STATUS_MARKERS[s],
            linestyle="none",
            color="0.25",
            markerfacecolor="none" if s in HOLLOW_STATUSES else "0.25",
            markersize=8,
            label=STATUS_LEGEND[s],
        )
        for s in ("failed", "skipped", "contended", "missing")
        if s in marks
    ]
    if DISTURBED in marks:
        handles.append(Line2D([], [], label=DISTURBED_TEXT, **DISTURBED_MARK))
    return handles
