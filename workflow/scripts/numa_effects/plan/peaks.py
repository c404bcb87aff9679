"""When the peak is measured: each (placement, threads, dtype) peak is ``WINDOWS`` short jobs
spread over the run's cells, so that a few seconds of host noise cannot decide the denominator
of efficiency (one window once put a peak 23 % low: tests/fixtures/peak_windows). Window 1 runs
before the first cell, the last after the first stage, the others evenly between, each at a
boundary between comparison groups of the job order, so that a window never separates the
processes a comparison pairs; the rules run them in that order by priority. Pure.
"""

from __future__ import annotations

from numa_effects.plan import grid as grid_mod

WINDOWS = 3


def boundaries(order, first_stage: int) -> list[int]:
    """The positions of the first stage's part of ``order`` (``[(CellKey, replicate)]``) a
    window may run before: its start, its end, and every change of round or comparison group."""
    firsts = [job for job in order if int(job[1]) <= int(first_stage)]
    n = len(firsts)

    def group(job):
        return (grid_mod.comparison_group(job[0]), int(job[1]))

    inner = [i for i in range(1, n) if group(firsts[i - 1]) != group(firsts[i])]
    return [0, *inner, n] if n else [0]


def slots(order, first_stage: int, windows: int = WINDOWS) -> list[int]:
    """For window 1 .. ``windows``, the position in ``order`` before which it runs: evenly
    spread over the first stage, each at the nearest ``boundaries`` position."""
    places = boundaries(order, first_stage)
    end = places[-1]
    if windows <= 1:
        return [0][:windows]
    targets = [w * end / (windows - 1) for w in range(windows)]
    return [min(places, key=lambda p, t=t: (abs(p - t), p)) for t in targets]


def cell_priority(index: int, n: int) -> int:
    """The priority of the cell job at ``index`` of an order of ``n`` jobs."""
    return 2 * (n - int(index))


def priorities(order, first_stage: int, windows: int = WINDOWS) -> list[int]:
    """For window 1 .. ``windows``, its priority: between the cells before and after its slot."""
    n = len(order)
    return [cell_priority(p, n) + 1 for p in slots(order, first_stage, windows)]
