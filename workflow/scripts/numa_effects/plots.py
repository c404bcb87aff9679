"""Draw the report's figures from the tidy tables (matplotlib + seaborn, Agg backend).

Input is only ``cells.csv``, ``skipped.csv`` and ``degradation.csv``. Every figure knows the
cells it should show (the product of the threads and batch sizes that appear for its model,
per optimization x placement that appears) and marks cells that are not a measured value --
failed, skipped or missing -- along the x axis (line plots) or as a labelled grey cell
(heatmaps). They are never drawn as zero, and lines break at them instead of bridging.

Colours are fixed per optimization and per placement (``OPT_COLORS``, ``PLACEMENT_COLORS``),
so a line has the same colour in every figure of every run.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle

from .figures import BASELINE, BY_NAME, SMT_SUFFIX, baseline_of, is_baseline

KEYS = ["model", "opt", "placement", "threads", "batch_size"]

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

DPI = 110
LOG_Y_RATIO = 30.0  # a y range wider than this factor is drawn on a log scale

plt.style.use("seaborn-v0_8-whitegrid")  # = seaborn.set_theme(style="whitegrid")
plt.rcParams.update({"svg.hashsalt": "numa-effects", "figure.max_open_warning": 0})


def opt_color(opt: str):
    return OPT_COLORS.get(opt) or _SPARE[sum(map(ord, opt)) % len(_SPARE)]


def placement_color(placement: str):
    placement = str(placement).removesuffix(SMT_SUFFIX)
    return PLACEMENT_COLORS.get(placement) or _SPARE[sum(map(ord, placement)) % len(_SPARE)]


def batch_color(bs: int, all_bs: list[int]):
    """Batch sizes on a sequential scale by their rank among the run's batch sizes (the same
    in every figure of a run: each figure shows all of them)."""
    ranks = sorted(set(all_bs))
    return plt.get_cmap("viridis")(0.9 * ranks.index(bs) / max(1, len(ranks) - 1))


def thread_color(t: int, all_t: list[int]):
    return plt.get_cmap("plasma")(0.78 * (t - min(all_t)) / max(1, max(all_t) - min(all_t)))


# -- tables ---------------------------------------------------------------------------------


def read_csv(path) -> pd.DataFrame:
    """A tidy table; an empty file (a run with no cells) is an empty frame with the keys."""
    if path is None or not os.path.exists(path) or os.path.getsize(path) <= 1:
        return pd.DataFrame(columns=KEYS)
    try:
        return pd.read_csv(path)
    except pd.errors.EmptyDataError:
        return pd.DataFrame(columns=KEYS)


def _bool_or_none(v):
    if isinstance(v, bool | np.bool_):
        return bool(v)
    if isinstance(v, str) and v.strip().lower() in ("true", "false"):
        return v.strip().lower() == "true"
    if isinstance(v, int | float) and not (isinstance(v, float) and math.isnan(v)):
        return bool(v)
    return None


@dataclass
class Tables:
    cells: pd.DataFrame
    skipped: pd.DataFrame
    degradation: pd.DataFrame | None = None

    @classmethod
    def load(cls, cells, skipped=None, degradation=None) -> Tables:
        deg = read_csv(degradation) if degradation else None
        if deg is not None and "significant" in deg:
            deg["significant"] = deg["significant"].map(_bool_or_none).astype(object)
        return cls(read_csv(cells), read_csv(skipped), deg)

    @property
    def latency_stat(self) -> str:
        """``median`` when the cells have medians, else ``mean`` (PackRat imports)."""
        c = self.cells
        if "latency_median_ms" in c and c["latency_median_ms"].notna().any():
            return "median"
        return "mean"

    @property
    def latency_column(self) -> str:
        return f"latency_{self.latency_stat}_ms"

    def statuses(self) -> pd.DataFrame:
        """Keys, ``status`` (ok / failed / skipped) and ``reason`` of every known cell."""
        c = self.cells
        rows = pd.DataFrame(columns=[*KEYS, "status", "reason"])
        if not c.empty:
            status = c["status"] if "status" in c else pd.Series("ok", index=c.index)
            status = status.where(status.isin(["ok"]), "failed")
            reason = c["failure_cause"] if "failure_cause" in c else pd.Series(None, index=c.index)
            rows = pd.DataFrame({**{k: c[k] for k in KEYS}, "status": status, "reason": reason})
        s = self.skipped
        if not s.empty:
            sk = pd.DataFrame(
                {**{k: s[k] for k in KEYS}, "status": "skipped", "reason": s.get("reason")}
            )
            sk = sk[~sk.set_index(KEYS).index.isin(rows.set_index(KEYS).index)]
            rows = pd.concat([rows, sk], ignore_index=True) if not rows.empty else sk
        rows = rows.astype({"threads": int, "batch_size": int})
        return rows.reset_index(drop=True)

    def universe(self, model: str) -> pd.DataFrame:
        """Every cell a figure of ``model`` should show, with its status and values.

        The (opt, placement) pairs that appear for the model x every threads x batch size that
        appears for it; cells in no table have status ``missing``. Columns ``lat``, ``thr`` (and
        ``lat_lo``/``lat_hi``, ``thr_lo``/``thr_hi`` when the cells carry CIs); a metric of a
        cell that is not ``ok`` or has no value is NaN and its ``<metric>_status`` says why.
        """
        st = self.statuses()
        st = st[st["model"] == model]
        pairs = st[["opt", "placement"]].drop_duplicates()
        grid = pairs.merge(
            pd.DataFrame({"threads": sorted(st["threads"].unique())}), how="cross"
        ).merge(pd.DataFrame({"batch_size": sorted(st["batch_size"].unique())}), how="cross")
        grid.insert(0, "model", model)
        u = grid.merge(st, on=KEYS, how="left")
        u["status"] = u["status"].fillna("missing")
        c = self.cells
        cols = {self.latency_column: "lat", "throughput_ips": "thr"}
        for src, dst in list(cols.items()):
            lo, hi = ci_columns(src)
            if lo in c and hi in c:
                cols[lo], cols[hi] = f"{dst}_lo", f"{dst}_hi"
        have = [k for k in cols if k in c]
        vals = c[c["model"] == model][KEYS + have].rename(columns=cols) if not c.empty else None
        if vals is not None and not vals.empty:
            vals = vals.astype({"threads": int, "batch_size": int})
            u = u.merge(vals, on=KEYS, how="left")
        for metric in ("lat", "thr"):
            if metric not in u:
                u[metric] = np.nan
            ok = u["status"].eq("ok")
            u.loc[~ok, metric] = np.nan
            u[f"{metric}_status"] = np.where(
                ok & u[metric].isna(), "missing", np.where(ok, "ok", u["status"])
            )
        return u


def ci_columns(column: str) -> tuple[str, str]:
    """CI columns of a value column (config/README.md): the median's CI is ``latency_ci_low_ms``
    / ``latency_ci_high_ms``, the throughput's ``throughput_ci_low_ips`` / ``..._high_ips``."""
    if column == "latency_median_ms":
        return "latency_ci_low_ms", "latency_ci_high_ms"
    stem, unit = column.rsplit("_", 1)
    return f"{stem}_ci_low_{unit}", f"{stem}_ci_high_{unit}"


# -- drawing helpers ------------------------------------------------------------------------


def _titles(ax, title: str, subtitle: str) -> None:
    ax.set_title(title, fontsize=14, fontweight="bold", pad=22)
    ax.annotate(
        subtitle,
        xy=(0.5, 1.0),
        xycoords="axes fraction",
        xytext=(0, 6),
        textcoords="offset points",
        ha="center",
        va="bottom",
        fontsize=9,
        color="0.35",
    )


def _fmt(v: float) -> str:
    return f"{v:.0f}" if abs(v) >= 100 else f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"


def _status_legend(statuses: set[str]) -> list:
    return [
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
        if s in statuses
    ]


def _footnote(ax, notes: list[str]) -> None:
    """Notes under the x axis label (inside the saved area: figures are saved tight)."""
    if notes:
        ax.annotate(
            "\n".join(notes),
            xy=(0.0, 0.0),
            xycoords=("axes fraction", ax.xaxis.label),
            xytext=(0, -8),
            textcoords="offset points",
            ha="left",
            va="top",
            fontsize=8,
            color="0.3",
        )


def _not_value_note(df: pd.DataFrame, status_col: str) -> list[str]:
    bad = df[df[status_col] != "ok"]
    if bad.empty:
        return []
    parts = [f"{n} {s}" for s, n in bad[status_col].value_counts().sort_index().items()]
    reasons = sorted({str(r) for r in bad.get("reason", pd.Series()).dropna()})
    why = f" ({'; '.join(reasons)[:110]})" if reasons else ""
    return [f"Not measured: {', '.join(parts)}{why}; marked along the x axis, never drawn as 0."]


def _lines(
    ax,
    df: pd.DataFrame,
    hue: str,
    order: list,
    color_of,
    label_of,
    metric: str,
    *,
    x: str = "threads",
    annotate: bool = False,
    fmt=None,
    sig: str | None = None,
) -> set[str]:
    """One line per ``hue`` value over ``x``; returns the statuses drawn as markers."""
    drawn: set[str] = set()
    xs = sorted(df[x].unique())
    for i, h in enumerate(order):
        d = df[df[hue] == h].set_index(x).reindex(xs)
        color = color_of(h)
        y = d[metric].to_numpy(dtype=float)
        ax.plot(xs, y, marker="o", markersize=5, linewidth=1.8, color=color, label=label_of(h))
        if sig is not None and sig in d:
            hollow = d[sig].map(lambda s: s is False).to_numpy(dtype=bool) & ~np.isnan(y)
            if hollow.any():
                ax.plot(
                    np.asarray(xs)[hollow],
                    y[hollow],
                    linestyle="none",
                    marker="o",
                    markersize=7,
                    markerfacecolor="white",
                    markeredgecolor=color,
                    markeredgewidth=1.5,
                )
        lo, hi = f"{metric}_lo", f"{metric}_hi"
        if lo in d and hi in d and d[lo].notna().any():
            err = np.vstack([y - d[lo].to_numpy(float), d[hi].to_numpy(float) - y])
            ax.errorbar(xs, y, yerr=np.abs(err), fmt="none", ecolor=color, capsize=3, lw=1)
        if annotate:
            for j, (xv, yv) in enumerate(zip(xs, y, strict=True)):
                if not np.isnan(yv):
                    ax.annotate(
                        (fmt or _fmt)(yv),
                        (xv, yv),
                        textcoords="offset points",
                        xytext=(0, 7 if i % 2 == 0 else -13),
                        ha="center",
                        fontsize=7,
                        color=color,
                        alpha=0.9 if j % 2 == 0 else 0.75,
                    )
        st = d[f"{metric}_status"].fillna("missing")
        for xv, s in zip(xs, st, strict=True):
            if s == "ok":
                continue
            drawn.add(s)
            ax.scatter(
                [xv],
                [0.03 + 0.055 * i],
                transform=ax.get_xaxis_transform(),
                marker=STATUS_MARKERS[s],
                s=60,
                facecolors="none" if s == "skipped" else [color],
                edgecolors=[color],
                linewidths=1.5,
                clip_on=False,
                zorder=5,
            )
    return drawn


def _y_scale(ax, values: pd.Series, *, zero: bool = True) -> str:
    v = values.dropna()
    v = v[v > 0]
    if len(v) and v.max() / v.min() > LOG_Y_RATIO:
        ax.set_yscale("log")
        return " (log scale)"
    if zero:
        ax.set_ylim(bottom=0)
        ax.margins(y=0.12)
    return ""


def _threads_axis(ax, threads: list[int]) -> None:
    ax.set_xlabel("Intra-op threads")
    if len(threads) <= 24:
        ax.set_xticks(threads)
    else:
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))


def _finish(fig, ax, statuses: set[str], notes: list[str], *, extra: list | None = None) -> None:
    handles, _ = ax.get_legend_handles_labels()
    handles = handles + (extra or []) + _status_legend(statuses)
    if handles:
        ncol = 2 if len(handles) > 12 else 1
        ax.legend(
            handles=handles,
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
            ncol=ncol,
            fontsize=8,
            frameon=False,
        )
    _footnote(ax, notes)


def _new(width: float = 8.0, height: float = 4.8):
    return plt.subplots(figsize=(width, height))


def _lat_label(tables: Tables) -> str:
    return f"Latency per batch, {tables.latency_stat} (ms)"


THR_LABEL = "Throughput (images/s)"


def _threads_label(t) -> str:
    return f"{int(t)} thread" + ("s" if int(t) > 1 else "")


def _sub(model: str, *parts: str) -> str:
    return " · ".join([model, *parts])


# -- families -------------------------------------------------------------------------------


def _seq(u: pd.DataFrame) -> pd.DataFrame:
    return u[u["placement"].map(is_baseline)]


def _threads_metric_axes(ax, tables: Tables, d, metric: str) -> str:
    """x = threads, y = the metric's label, unit and scale; returns "Latency" or "Throughput"."""
    _threads_axis(ax, sorted(d["threads"].unique()))
    scale = _y_scale(ax, d[metric])
    ax.set_ylabel((_lat_label(tables) if metric == "lat" else THR_LABEL) + scale)
    return "Latency" if metric == "lat" else "Throughput"


def per_batch(tables: Tables, model: str, batch_size: int, metric: str):
    """Families 1 and 3: x = threads, one line per optimization, sequential placement."""
    u = _seq(tables.universe(model))
    d = u[u["batch_size"] == batch_size]
    opts = sorted(d["opt"].unique(), key=_opt_order)
    fig, ax = _new()
    drawn = _lines(
        ax, d, "opt", opts, opt_color, lambda o: OPT_LABELS.get(o, o), metric, annotate=True
    )
    name = _threads_metric_axes(ax, tables, d, metric)
    _titles(
        ax,
        f"Threads vs {name} (BS={batch_size})",
        _sub(model, "placement sequential", "one line per optimization"),
    )
    _finish(fig, ax, drawn, _not_value_note(d, f"{metric}_status"))
    return fig


def per_opt(tables: Tables, model: str, opt: str, metric: str):
    """Families 2 and 4: x = threads, one line per batch size."""
    u = _seq(tables.universe(model))
    d = u[u["opt"] == opt]
    bss = sorted(d["batch_size"].unique())
    fig, ax = _new()
    drawn = _lines(
        ax, d, "batch_size", bss, lambda b: batch_color(b, bss), lambda b: f"BS={b}", metric
    )
    name = _threads_metric_axes(ax, tables, d, metric)
    _titles(
        ax,
        f"Threads vs {name} (opt={opt})",
        _sub(model, OPT_LABELS.get(opt, opt), "placement sequential", "one line per batch size"),
    )
    _finish(fig, ax, drawn, _not_value_note(d, f"{metric}_status"))
    return fig


def speedup(tables: Tables, model: str, opt: str):
    """Family 5: throughput relative to the fewest threads, one line per batch size + mean."""
    u = _seq(tables.universe(model))
    d = u[u["opt"] == opt].copy()
    t0 = int(d["threads"].min())
    base = d[d["threads"] == t0].set_index("batch_size")["thr"]
    d["speedup"] = d["thr"] / d["batch_size"].map(base)
    d["speedup_status"] = np.where(
        d["thr_status"].ne("ok"), d["thr_status"], np.where(d["speedup"].isna(), "missing", "ok")
    )
    bss = sorted(d["batch_size"].unique())
    fig, ax = _new()
    drawn = _lines(
        ax, d, "batch_size", bss, lambda b: batch_color(b, bss), lambda b: f"BS={b}", "speedup"
    )
    threads = sorted(d["threads"].unique())
    mean = d.groupby("threads")["speedup"].mean()
    ax.plot(
        mean.index,
        mean.to_numpy(),
        color="black",
        linewidth=3,
        linestyle="--",
        label="mean over batch sizes",
    )
    ax.plot(
        threads,
        [t / t0 for t in threads],
        color="0.55",
        linewidth=1,
        linestyle=":",
        label="ideal (linear)",
    )
    _threads_axis(ax, threads)
    ax.set_ylim(bottom=0)
    ax.set_ylabel(f"Speedup (throughput / throughput at {_threads_label(t0)})")
    _titles(
        ax,
        f"Speedup over {_threads_label(t0).title()} (opt={opt})",
        _sub(model, OPT_LABELS.get(opt, opt), "placement sequential", "one line per batch size"),
    )
    notes = _not_value_note(d, "speedup_status")
    no_base = sorted(set(bss) - set(base.dropna().index))
    if no_base:
        notes.append(
            f"No {t0}-thread baseline for BS={', '.join(map(str, no_base))}: "
            "no speedup drawn for those batch sizes."
        )
    _finish(fig, ax, drawn, notes)
    return fig


def throughput_per_batch_size(tables: Tables, model: str, opt: str):
    """Family 6: x = batch size (log2), y = images/s, one line per thread count."""
    u = _seq(tables.universe(model))
    d = u[u["opt"] == opt]
    threads = sorted(d["threads"].unique())
    fig, ax = _new(10.0, 5.6)
    drawn = _lines(
        ax,
        d,
        "threads",
        threads,
        lambda t: thread_color(t, threads),
        lambda t: _threads_label(t),
        "thr",
        x="batch_size",
    )
    bss = sorted(d["batch_size"].unique())
    ax.set_xscale("log", base=2)
    ax.set_xticks(bss, [str(b) for b in bss])
    ax.minorticks_off()
    ax.set_xlabel("Batch size (images, log2 scale)")
    ax.set_ylabel(THR_LABEL + _y_scale(ax, d["thr"]))
    _titles(
        ax,
        f"Batch Size vs Throughput (opt={opt})",
        _sub(model, OPT_LABELS.get(opt, opt), "placement sequential", "one line per thread count"),
    )
    _finish(fig, ax, drawn, _not_value_note(d, "thr_status"))
    return fig


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


def _pair_status(a: pd.Series, b: pd.Series) -> pd.Series:
    """Status of a comparison of two cells: the worse of theirs."""
    out = pd.Series("ok", index=a.index, dtype=object)
    for s in ("missing", "skipped", "failed"):
        out = out.mask(a.eq(s) | b.eq(s), s)
    return out


def _comparison(tables: Tables, model: str, opt: str, metric: str) -> pd.DataFrame:
    """Per (placement != sequential, threads, batch size): degradation row + pair status."""
    if tables.degradation is None:
        raise ValueError("this figure needs the degradation table")
    u = tables.universe(model)
    u = u[u["opt"] == opt]
    base = u[u["placement"].map(is_baseline)][
        ["placement", "threads", "batch_size", f"{metric}_status"]
    ]
    base = base.rename(columns={"placement": "baseline_label"})
    other = u[~u["placement"].map(is_baseline)].copy()
    other["baseline_label"] = other["placement"].map(baseline_of)
    on = ["baseline_label", "threads", "batch_size"]
    d = other.merge(base, on=on, how="left", suffixes=("", "_base"))
    d["pair_status"] = _pair_status(
        d[f"{metric}_status"], d[f"{metric}_status_base"].fillna("missing")
    )
    name = "latency" if metric == "lat" else "throughput"
    g = tables.degradation
    g = g[(g["model"] == model) & (g["opt"] == opt)]
    if "baseline" in g:
        g = g[g["baseline"].fillna(BASELINE).map(is_baseline)]
    cols = {
        f"{name}_degradation_pct": "pct",
        f"{name}_degradation_ci_low_pct": "pct_lo",
        f"{name}_degradation_ci_high_pct": "pct_hi",
        "significant": "sig",
    }
    keep = [c for c in cols if c in g]
    g = g[KEYS + keep + (["latency_statistic"] if "latency_statistic" in g else [])]
    g = g.rename(columns=cols).astype({"threads": int, "batch_size": int})
    d = d.merge(g, on=KEYS, how="left")
    for c in ("pct", "pct_lo", "pct_hi"):
        if c not in d:
            d[c] = np.nan
    if "sig" not in d:
        d["sig"] = None
    d.loc[d["pair_status"] != "ok", ["pct", "pct_lo", "pct_hi"]] = np.nan
    d["pct_status"] = np.where(
        d["pair_status"].ne("ok"), d["pair_status"], np.where(d["pct"].isna(), "missing", "ok")
    )
    return d


def _deg_stat(d: pd.DataFrame, tables: Tables) -> str:
    if "latency_statistic" in d and d["latency_statistic"].notna().any():
        return "/".join(sorted(d["latency_statistic"].dropna().astype(str).unique()))
    return tables.latency_stat


def _sig_notes(d: pd.DataFrame, how: str) -> list[str]:
    ok = d[d["pct_status"] == "ok"]
    if ok.empty:
        return []
    known = ok["sig"].map(lambda s: s is not None)
    if not known.any():
        return ["No per-iteration samples: no confidence intervals, significance not assessed."]
    return [f"{how}: {NOT_SIGNIFICANT}."]


def heatmap(tables: Tables, model: str, opt: str, placement: str, metric: str):
    """Families 7 and 8: % degradation of ``placement`` vs sequential, x = threads, y = BS."""
    d = _comparison(tables, model, opt, metric)
    d = d[d["placement"] == placement]
    threads = sorted(d["threads"].unique())
    bss = sorted(d["batch_size"].unique(), reverse=True)  # largest on top, like a y axis
    val = d.pivot(index="batch_size", columns="threads", values="pct").reindex(
        index=bss, columns=threads
    )
    status = d.pivot(index="batch_size", columns="threads", values="pct_status").reindex(
        index=bss, columns=threads
    )
    sig = d.pivot(index="batch_size", columns="threads", values="sig").reindex(
        index=bss, columns=threads
    )
    vmax, extend = color_limit(val.to_numpy(float))
    width = min(18.0, 4.0 + 0.62 * len(threads))
    height = min(14.0, 2.6 + 0.45 * len(bss))
    fig, ax = plt.subplots(figsize=(max(width, 8.5), max(height, 4.5)))
    name = "latency" if metric == "lat" else "throughput"
    worse = "slower" if metric == "lat" else "fewer images/s"
    import seaborn as sns

    cmap = sns.color_palette("RdBu_r", as_cmap=True)
    sns.heatmap(
        val,
        ax=ax,
        cmap=cmap,
        center=0.0,
        vmin=-vmax,
        vmax=vmax,
        mask=val.isna(),
        linewidths=0.6,
        linecolor="white",
        cbar_kws={"label": f"% {name} degradation (+ = {worse})", "shrink": 0.9, "extend": extend},
    )
    fontsize = 9 if len(threads) <= 12 else 8 if len(threads) <= 20 else 6
    norm = matplotlib.colors.Normalize(-vmax, vmax)
    for i, bs in enumerate(bss):
        for j, t in enumerate(threads):
            s = status.loc[bs, t]
            if s != "ok":
                ax.add_patch(Rectangle((j, i), 1, 1, facecolor="0.88", edgecolor="white", lw=0.6))
                ax.text(
                    j + 0.5,
                    i + 0.5,
                    STATUS_TEXT.get(s, s),
                    ha="center",
                    va="center",
                    fontsize=fontsize - 1,
                    color="0.3",
                    style="italic",
                )
                continue
            v = float(val.loc[bs, t])
            r, g, b, _ = cmap(norm(v))
            dark = 0.299 * r + 0.587 * g + 0.114 * b < 0.5
            ax.text(
                j + 0.5,
                i + 0.5,
                pct1(v),
                ha="center",
                va="center",
                fontsize=fontsize,
                color="white" if dark else "black",
            )
            if sig.loc[bs, t] is False:
                ax.add_patch(
                    Rectangle(
                        (j, i), 1, 1, fill=False, hatch="////", edgecolor=(0, 0, 0, 0.35), lw=0
                    )
                )
    ax.set_xlabel("Intra-op threads")
    ax.set_ylabel("Batch size (images)")
    ax.tick_params(axis="y", rotation=0)
    stat = _deg_stat(d, tables)
    formula = (
        f"({placement} − sequential) / sequential × 100 of the {stat} latency"
        if metric == "lat"
        else f"(sequential − {placement}) / sequential × 100 of the throughput"
    )
    _titles(
        ax,
        f"% {name.title()} Degradation, {placement} (opt={opt})",
        _sub(model, formula),
    )
    notes = _sig_notes(d, "Hatched cells")
    if extend == "both":
        notes.append(
            f"Colour scale clipped at ±{vmax:.1f} % (95th percentile): cells beyond it have the "
            "end colour; their printed values are exact."
        )
    bad = d[d["pct_status"] != "ok"]
    if not bad.empty:
        counts = ", ".join(f"{n} {s}" for s, n in bad["pct_status"].value_counts().items())
        notes.append(
            f"Grey cells have no value ({counts}): either cell of the pair is not measured."
        )
    _footnote(ax, notes)
    return fig


def numa_per_batch(tables: Tables, model: str, opt: str, batch_size: int, metric: str):
    """Families 9 and 11: x = threads, one line per placement (sequential included)."""
    u = tables.universe(model)
    d = u[(u["opt"] == opt) & (u["batch_size"] == batch_size)]
    places = sorted(d["placement"].unique(), key=_placement_order)
    fig, ax = _new()
    drawn = _lines(ax, d, "placement", places, placement_color, str, metric, annotate=True)
    name = _threads_metric_axes(ax, tables, d, metric)
    _titles(
        ax,
        f"Threads vs {name} by Placement (BS={batch_size}, opt={opt})",
        _sub(model, OPT_LABELS.get(opt, opt), "one line per placement"),
    )
    _finish(fig, ax, drawn, _not_value_note(d, f"{metric}_status"))
    return fig


def numa_loss(tables: Tables, model: str, opt: str, batch_size: int, metric: str):
    """Families 10 and 12: x = threads, y = % degradation vs sequential, one line per placement."""
    d = _comparison(tables, model, opt, metric)
    d = d[d["batch_size"] == batch_size]
    places = sorted(d["placement"].unique(), key=_placement_order)
    fig, ax = _new()
    drawn = _lines(
        ax,
        d,
        "placement",
        places,
        placement_color,
        lambda p: f"{p} vs sequential",
        "pct",
        annotate=True,
        fmt=pct1,
        sig="sig",
    )
    ax.axhline(0.0, color="black", linewidth=1)
    ax.margins(y=0.15)
    _threads_axis(ax, sorted(d["threads"].unique()))
    name = "latency" if metric == "lat" else "throughput"
    worse = "slower" if metric == "lat" else "fewer images/s"
    ax.set_ylabel(f"% {name} degradation vs sequential\n(+ = {worse}, − = better)")
    _titles(
        ax,
        f"Threads vs % {name.title()} Loss (BS={batch_size}, opt={opt})",
        _sub(
            model,
            OPT_LABELS.get(opt, opt),
            f"{_deg_stat(d, tables)} latency" if metric == "lat" else "throughput",
            "error bars: CI where samples exist",
        ),
    )
    extra = []
    if d["sig"].map(lambda s: s is False).any():
        extra.append(
            Line2D(
                [],
                [],
                marker="o",
                linestyle="none",
                markerfacecolor="white",
                markeredgecolor="0.3",
                label="not significant",
            )
        )
    _finish(
        fig,
        ax,
        drawn,
        _sig_notes(d, "Hollow markers") + _not_value_note(d, "pct_status"),
        extra=extra,
    )
    return fig


def _opt_order(opt: str):
    known = list(OPT_COLORS)
    return (known.index(opt) if opt in known else len(known), opt)


def _placement_order(p: str):
    known, base = list(PLACEMENT_COLORS), str(p).removesuffix(SMT_SUFFIX)
    return (known.index(base) if base in known else len(known), p)


# -- entry ----------------------------------------------------------------------------------


def draw(family: str, tables: Tables, wildcards: dict):
    """The matplotlib figure of ``family`` for ``wildcards`` (model, opt, placement, batch_size)."""
    if family not in BY_NAME:
        raise ValueError(f"unknown figure family {family!r}")
    w = dict(wildcards)
    model = w["model"]
    opt = w.get("opt")
    bs = int(w["batch_size"]) if "batch_size" in w else None
    match family:
        case "latency_per_batch":
            return per_batch(tables, model, bs, "lat")
        case "throughput_per_batch":
            return per_batch(tables, model, bs, "thr")
        case "latency_per_opt":
            return per_opt(tables, model, opt, "lat")
        case "throughput_per_opt":
            return per_opt(tables, model, opt, "thr")
        case "speedup":
            return speedup(tables, model, opt)
        case "throughput_per_batch_size":
            return throughput_per_batch_size(tables, model, opt)
        case "latency_degradation_heatmap":
            return heatmap(tables, model, opt, w["placement"], "lat")
        case "throughput_degradation_heatmap":
            return heatmap(tables, model, opt, w["placement"], "thr")
        case "numa_latency_per_batch":
            return numa_per_batch(tables, model, opt, bs, "lat")
        case "numa_throughput_per_batch":
            return numa_per_batch(tables, model, opt, bs, "thr")
        case "numa_latency_loss":
            return numa_loss(tables, model, opt, bs, "lat")
        case "numa_throughput_loss":
            return numa_loss(tables, model, opt, bs, "thr")
    raise AssertionError(family)


def save(fig, png: str, svg: str | None = None) -> None:
    """PNG (and SVG) without timestamps, so re-drawing the same data gives the same files."""
    for path, kw in (
        (png, {"dpi": DPI, "metadata": {"Software": None}}),
        (svg, {"metadata": {"Date": None}}),
    ):
        if path is None:
            continue
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        tmp = f"{path}.tmp{os.path.splitext(path)[1]}"
        fig.savefig(tmp, bbox_inches="tight", pad_inches=0.15, **kw)
        os.replace(tmp, path)
    plt.close(fig)
