"""Benchmark, noise: the grid measured quiet (the ``adaptive`` run), then again while the
benchmark runs a background load on the cells' CPUs (``load.DutyCycleLoad``: one busy loop per
CPU at 25 % duty cycle, 100 ms period, bounded to ``MAX_LOAD_S`` and stopped when the run
ends). Per cell: the loaded median vs the quiet run's CI.

Goals: loaded medians within +-3 % of quiet on >= 90 % of cells, and every cell whose loaded
median is outside the quiet CI flagged contended or noisy (``explained``)."""

from __future__ import annotations

from .common import Context, pipeline, show
from .judge import against_ci, noise_verdict, share
from .load import DutyCycleLoad, cell_cpus

NAME = "noise"
GOAL_PCT = 3.0
GOAL_SHARE = 0.90
DUTY, PERIOD = 0.25, 0.100
MAX_LOAD_S = 3 * 3600


def run(ctx: Context):
    quiet = pipeline(ctx, "adaptive", {})
    cpus = cell_cpus(quiet.cells())
    with DutyCycleLoad(cpus, DUTY, PERIOD, MAX_LOAD_S) as load:
        print(f"[bench] noise: load on CPUs {cpus} (pids {load.pids})", flush=True)
        loaded = pipeline(ctx, "loaded", {}, target="tables/cells.csv")
    df = noise_verdict(against_ci(quiet.cells(), loaded.cells(), ("_quiet", "_loaded")), GOAL_PCT)
    show(f"noise: loaded ({DUTY:.0%} duty, {PERIOD * 1000:.0f} ms period on {cpus}) vs quiet", df)
    print(
        f"within +-{GOAL_PCT} %: {int(df['within_goal'].sum())}/{len(df)} = "
        f"{share(df['within_goal']):.0%} (goal >= {GOAL_SHARE:.0%}); outside the quiet CI and "
        f"not flagged: {int((~df['explained']).sum())} (goal 0; outside the interval two quiet "
        f"runs agree within and not flagged: {int((~df['explained_beyond_chance']).sum())}); "
        f"flagged contended or noisy: {int(df['flagged'].sum())}"
    )
    return df
