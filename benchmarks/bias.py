"""Benchmark (offline), bias of a short window: does the adaptive rule read low against the
fixed 10 + 100 protocol, and is it the stopping rule or the window? On each fixed cell's 100
iterations (the ``fixed`` run of ``cost``, or ``--bias-data DIR`` with fixed/samples.csv):

- ``window_pct``: median of the first n iterations vs the whole run (n: that cell's adaptive n);
- ``replay_pct``: the adaptive rule (``measure.run`` with its settings) replayed on the
  sequence in its order;
- ``shuffled_pct``: the same rule on the same iterations shuffled (no drift: isolates the
  stopping rule; mean of ``SHUFFLES``);
- ``rho``: Spearman correlation of latency with iteration (drift inside the process).

A stopping-rule bias shows in ``shuffled_pct``; a window bias (drift within the process) in
``window_pct``/``replay_pct`` but not in ``shuffled_pct``."""

from __future__ import annotations

import numpy as np
import pandas as pd

from numa_effects.plan.grid import fill_keys

from .common import FIXED, KEYS, Context, pipeline, show

NAME = "bias"
SHUFFLES = 100
MIN_ITERATIONS = 20  # clean iterations a fixed cell needs to be analysed


def replay(x: np.ndarray, settings: dict) -> np.ndarray:
    """The adaptive rule on a recorded sequence (fake clock; time caps lifted, the sequence
    cycled so the rule never runs out; ``max_iterations`` still ends it)."""
    import itertools

    from numa_effects.measure import timing as measure

    seq = itertools.cycle(x)
    now = [0.0]

    def step():
        now[0] += float(next(seq))

    s = {**settings, "max_seconds_per_cell": 1e9, "protocol": "adaptive"}
    return np.asarray(measure.run(step, s, clock=lambda: now[0]).latencies_s)


def analyse(fixed: pd.DataFrame, settings: dict, adaptive_n: dict | None = None, seed=0):
    from scipy.stats import spearmanr

    rng = np.random.default_rng(seed)
    rows = []
    for key, g in fill_keys(fixed).groupby(KEYS):
        x = g.sort_values("iteration")["latency_ms"].to_numpy() / 1000.0
        if x.size < MIN_ITERATIONS:  # e.g. most iterations excluded as contaminated
            continue
        whole = np.median(x)
        y = replay(x, settings)
        n = (adaptive_n or {}).get(key, len(y))
        sh = [np.median(replay(rng.permutation(x), settings)) for _ in range(SHUFFLES)]
        rho, p = spearmanr(np.arange(x.size), x)
        rows.append(
            {
                **dict(zip(KEYS, key, strict=True)),
                "n_fixed": x.size,
                "n_replay": y.size,
                "window_pct": (np.median(x[:n]) / whole - 1) * 100,
                "replay_pct": (np.median(y) / whole - 1) * 100,
                "shuffled_pct": (np.mean(sh) / whole - 1) * 100,
                "rho": rho,
                "rho_p": p,
            }
        )
    cols = ["n_fixed", "n_replay", "window_pct", "replay_pct", "shuffled_pct", "rho", "rho_p"]
    return pd.DataFrame(rows, columns=[*KEYS, *cols])


def summary(df: pd.DataFrame) -> str:
    return (
        f"replayed rule vs whole fixed run: mean {df['replay_pct'].mean():+.2f} %, "
        f"{int((df['replay_pct'] < 0).sum())}/{len(df)} lower; on shuffled iterations "
        f"(stopping rule alone): mean {df['shuffled_pct'].mean():+.2f} %; drift inside the "
        f"process (Spearman p < 0.01): {int((df['rho_p'] < 0.01).sum())}/{len(df)} cells"
    )


def run(ctx: Context):
    import yaml

    from .common import ROOT

    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    if ctx.bias_data is not None:
        fixed = pd.read_csv(ctx.bias_data / "fixed" / "samples.csv")
    else:
        run_ = ctx.runs.get("fixed") or pipeline(ctx, "fixed", FIXED, target="tables/cells.csv")
        fixed = run_.samples()
    if "excluded" in fixed.columns:
        fixed = fixed[~fixed["excluded"].astype(bool)]
    if "replicate" in fixed.columns:  # one process per cell: the first replicate
        fixed = fixed[fixed["replicate"] == 1]
    out = []
    for label, settings in (
        ("old defaults (no minimum window)", {"target_rel_ci": 0.02, "warmup": 2}),
        ("current config", cfg),
    ):
        df = analyse(fixed, settings)
        df.insert(0, "settings", label)
        show(f"bias: {label}", df)
        print(summary(df))
        out.append(df)
    return pd.concat(out, ignore_index=True)
