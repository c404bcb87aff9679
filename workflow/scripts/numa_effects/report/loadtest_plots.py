"""The deploy answer under load (``numa-effects loadtest``, ``tables/loadtest.csv``): p50 and p99
latency against the offered Poisson rate of LoadGen's Server runs, for the recommendation and
its strongest baseline, with the latency bound, the highest rate found within it and each
configuration's Offline images/s."""

from __future__ import annotations

import pandas as pd

from numa_effects.report import drawing, style

ROLE_COLOURS = {"recommended": "C0", "baseline": "C3"}


def figure(table: pd.DataFrame, model: str, objective: str):
    """The figure of one (model, objective) of ``table``."""
    d = table[(table["model"] == model) & (table["objective"] == objective)]
    fig, ax = drawing.new_figure()
    notes = []
    for role, g in d.groupby("role", sort=False):
        colour = ROLE_COLOURS.get(role, "C7")
        server = g[g["scenario"] == "server"].sort_values("target_qps")
        label = f"{role} {g['configuration'].iloc[0]} ({g['layout'].iloc[0]})"
        x = server["target_qps"].to_numpy(dtype=float)
        ax.plot(x, server["p99_ms"], "o-", color=colour, label=f"{label}: p99")
        ax.plot(x, server["p50_ms"], "o--", color=colour, alpha=0.6, label=f"{label}: p50")
        found = server[server["found"].astype(bool)]
        if len(found):
            q, p99 = found.iloc[0][["target_qps", "p99_ms"]]
            ax.plot([q], [p99], "*", ms=16, color=colour, zorder=5)
            at = {"xytext": (6, -12), "textcoords": "offset points", "fontsize": 8, "color": colour}
            ax.annotate(f"{q:.3g}/s", (q, p99), **at)
        else:
            notes.append(f"{role}: no offered rate met the bound")
        for off in g[g["scenario"] == "offline"].itertuples():
            ax.axvline(off.achieved, color=colour, ls=":", lw=1.2)
            notes.append(f"{role}: Offline {off.achieved:.3g} images/s (dotted), {off.valid}")
    bound = d["bound_ms"].dropna()
    if len(bound):
        ax.axhline(bound.iloc[0], color="0.3", lw=1, label=f"bound {bound.iloc[0]:.3g} ms")
    ax.set_yscale("log")
    ax.set_xlabel("offered rate (Poisson queries/s, one image each)")
    ax.set_ylabel("latency (ms)")
    drawing.titles(ax, f"{model}, {objective} under load", "MLPerf LoadGen, Server scenario")
    ax.legend(fontsize=8, loc="best")
    drawing.footnote(ax, [*notes, "star: the highest rate whose p99 meets the bound"])
    return fig


def draw(table, model: str, png: str, svg: str | None = None, objective="throughput") -> None:
    """The figure of ``model`` and ``objective`` in ``table``, as ``png`` (and ``svg``)."""
    from numa_effects.report import plots

    style.apply()
    plots.save(figure(table, model, objective), png, svg)


def main(argv=None) -> int:
    """``python -m numa_effects.report.loadtest_plots RESULTS``: the figure of each (model,
    objective) of ``RESULTS/tables/loadtest.csv`` beside LoadGen's logs (``make loadtest``)."""
    import sys
    from pathlib import Path

    results = Path((sys.argv[1:] if argv is None else argv)[0])
    table = pd.read_csv(results / "tables" / "loadtest.csv")
    for (model, objective), _ in table.groupby(["model", "objective"], sort=False):
        name = f"latency-throughput-{model}-{str(objective).replace(' ', '-')}.png"
        draw(table, model, str(results / "loadtest" / name), objective=objective)
        print(results / "loadtest" / name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
