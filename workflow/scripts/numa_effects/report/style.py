"""How the report's figures look: colours, labels, the marks of cells that are not a clean
measured value, number formats and the colour-scale limit. Shared by every drawing module.

Colours are fixed per optimization and per placement (``OPT_COLORS``, ``PLACEMENT_COLORS``), so
a line has the same colour in every figure of every run. A cell that is not a measured value --
failed, skipped or missing -- is drawn with ``STATUS_MARKERS`` along the x axis (line plots) or as
a labelled grey cell (heatmaps); a cell whose timing was disturbed (contended or noisy) is ringed
(``DISTURBED_MARK``) or cross-hatched (``DISTURBED_HATCH``) and has its legend entry; a
difference that is not significant is hollow or hatched (``NOT_SIGNIFICANT``).

matplotlib is imported only by the functions that need it (``apply``, the colour maps), so
importing this module stays cheap.
"""

from __future__ import annotations

import numpy as np

from numa_effects.report.registry import SMT_SUFFIX

# seaborn's "colorblind" and "dark" palettes (hex, so line plots need not import seaborn: its
# import, scipy.stats included, doubles the start-up time of every figure job).
_CB = [
    "#0173b2",
    "#de8f05",
    "#029e73",
    "#d55e00",
    "#cc78bc",
    "#ca9161",
    "#fbafe4",
    "#949494",
    "#ece133",
    "#56b4e9",
]
_DARK = [
    "#001c7f",
    "#b1400d",
    "#12711c",
    "#8c0800",
    "#591e71",
    "#592f0d",
    "#a23582",
    "#3c3c3c",
    "#b8850a",
    "#006374",
]
OPT_COLORS = {"none": _CB[0], "script": _CB[1], "channels_last": _CB[2], "compile": _CB[4]}
OPT_LABELS = {
    "none": "none (eager)",
    "script": "script (TorchScript)",
    "channels_last": "channels_last (eager)",
    "compile": "compile (torch.compile)",
}
PLACEMENT_COLORS = {
    "sequential": (0.2, 0.2, 0.2),
    "interleave": _CB[3],
    "remote": _CB[5],
    "mem-interleave": _CB[9],
}
_SPARE = [_CB[6], _CB[8], _CB[7], *_DARK]

# How a cell that is not a measured value is drawn (line plots: along the x axis).
STATUS_MARKERS = {"failed": "X", "skipped": "s", "missing": "$?$"}
STATUS_TEXT = {"failed": "failed", "skipped": "skipped", "missing": "missing"}
NOT_SIGNIFICANT = "not significant (the CI of the difference includes 0)"

# How a cell that is not a measured value is drawn (line plots: along the x axis).
STATUS_MARKERS = {"failed": "X", "skipped": "s", "missing": "$?$"}
STATUS_TEXT = {"failed": "failed", "skipped": "skipped", "missing": "missing"}
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


def opt_color(opt: str):
    return OPT_COLORS.get(opt) or _SPARE[sum(map(ord, opt)) % len(_SPARE)]


def placement_color(placement: str):
    placement = str(placement).removesuffix(SMT_SUFFIX)
    return PLACEMENT_COLORS.get(placement) or _SPARE[sum(map(ord, placement)) % len(_SPARE)]


def batch_color(bs: int, all_bs: list[int]):
    """Batch sizes on a sequential scale by their rank among the run's batch sizes (the same
    in every figure of a run: each figure shows all of them)."""
    ranks = sorted(set(all_bs))
    return _cmap("viridis")(0.9 * ranks.index(bs) / max(1, len(ranks) - 1))


def thread_color(t: int, all_t: list[int]):
    return _cmap("plasma")(0.78 * (t - min(all_t)) / max(1, max(all_t) - min(all_t)))


def opt_order(opt: str):
    known = list(OPT_COLORS)
    return (known.index(opt) if opt in known else len(known), opt)


def placement_order(p: str):
    known, base = list(PLACEMENT_COLORS), str(p).removesuffix(SMT_SUFFIX)
    return (known.index(base) if base in known else len(known), p)


def fmt(v: float) -> str:
    return f"{v:.0f}" if abs(v) >= 100 else f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"


def pct1(v: float) -> str:
    """One decimal, without a "-0.0"."""
    return f"{v:.1f}" if round(v, 1) != 0 else "0.0"


def color_limit(values: np.ndarray) -> tuple[float, str]:
    """Half-range of the diverging scale (centred on 0) and the colour bar's ``extend``.

    The largest |value|, unless a few outliers would wash out every other cell: with 20 or more
    values, the 95th percentile of |value| when the maximum is over twice it (cells beyond are
    drawn in the end colour; their printed values stay exact)."""
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
    """Legend entries of the marks a line plot drew: failed / skipped / missing cells along the
    x axis, and the ring of a disturbed point."""
    from matplotlib.lines import Line2D

    handles = [
        Line2D(
            [],
            [],
            marker=STATUS_MARKERS[s],
            linestyle="none",
            color="0.25",
            markerfacecolor="none" if s == "skipped" else "0.25",
            markersize=8,
            label=f"{STATUS_TEXT[s]} (no value)",
        )
        for s in ("failed", "skipped", "missing")
        if s in marks
    ]
    if DISTURBED in marks:
        handles.append(Line2D([], [], label=DISTURBED_TEXT, **DISTURBED_MARK))
    return handles
