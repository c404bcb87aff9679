"""The deploy job's design in blocks and slices (docs/deploy.md, "How the answer is found").

A block starts one set of processes for every configuration and keeps them warm, then measures
them in short slices that visit the configurations cycle by cycle in ABBA order (forward, then
backward), so a linear drift of the host cancels exactly over each pair of cycles, and warm-up
and compilation are paid once per process. The blocks are the replicates: each starts new
processes, so the blocks' paired log ratios carry the between-process variance that a CI over
the slices alone misses (``benchmarks/slices.py`` simulates the design, the one-process-per-round
design before it and that naive slice CI against known truth).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def order(configs: Sequence[str], cycles: int) -> list[str]:
    """One block's slices: every configuration once per cycle, every other cycle reversed."""
    if cycles < 1:
        raise ValueError(f"a block needs at least one cycle, not {cycles}")
    out: list[str] = []
    for k in range(cycles):
        out += list(configs) if k % 2 == 0 else list(reversed(configs))
    return out


def block_value(slice_medians: Sequence[float]) -> float:
    """A configuration's value in one block: the geometric mean of its slices' medians (a
    slice's median keeps an outlying step out; the mean over the slices is what the ABBA order
    balances)."""
    y = np.log(np.asarray(slice_medians, dtype=float))
    if y.size == 0 or not np.all(np.isfinite(y)):
        return math.nan
    return math.exp(float(y.mean()))


def cycles_for(seconds: float, slice_s: Sequence[float]) -> int:
    """The even number of cycles (at least 2) whose slices fit in ``seconds``: one cycle costs
    the sum of the configurations' slice times."""
    per_cycle = float(sum(slice_s))
    if per_cycle <= 0:
        raise ValueError("slices must take time")
    return max(2, 2 * int(seconds / per_cycle / 2))
