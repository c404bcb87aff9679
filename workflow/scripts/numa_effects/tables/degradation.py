"""``degradation.csv`` (each placement against its baseline, ``placement.baseline_of``) and
``opt_speedup.csv`` (each optimization against eager; ``speed_speedup`` at the run's reference
speed, ``tables.speed.ratio``), each with a 95 % CI of the ratio of both cells; its
``ci_method`` (``paired``, ``two-level``, ``within-process bootstrap``, ``identical binding``)
is explained in docs/performance.md, "Comparisons inside a run".

A cell measured as another (``same_binding_as``) is compared through that cell, and a pair
measured once enters the pools of the paired intervals once. ``latency_statistic`` is the median
where both cells have one, else the mean (PackRat's). Cells pair only within one ``source``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from numa_effects import stats
from numa_effects.plan import binding as binding_mod
from numa_effects.plan import grid
from numa_effects.plan import placement as placement_mod
from numa_effects.plan.grid import KEYS
from numa_effects.plan.optimizations import EAGER
from numa_effects.tables.cells import SAME


def eager_baseline(opt: str) -> str | None:
    """The baseline of an optimization in opt_speedup.csv: eager (None: it is eager)."""
    return None if opt == EAGER else EAGER


# The comparisons whose two cells run side by side in every round (plan.grid.job_order), by the
# axis each varies -> the baseline of a value (None: it is one). The degradation and opt-speedup
# tables pair their cells by it, and the two-stage checkpoint keeps whole rounds only for the
# comparisons its first stage shows to pay for it (tables.stages.pairing).
PAIRED: dict[str, Callable] = {"placement": placement_mod.baseline_of, "opt": eager_baseline}

# The columns every comparison table shares (``compared``), in their order.
LATENCIES = ("latency_statistic", "latency_baseline_ms", "latency_compared_ms")
THROUGHPUTS = ("throughput_baseline_ips", "throughput_compared_ips")
SPEEDUPS = stats.with_ci("speedup")
TAIL = ("significant", "ci_method", "adjacent_correlation", "contended", "noisy")

DEGRADATION_COLUMNS = [
    *KEYS,  # model, opt, placement, threads, batch_size, allocator
    "baseline",
    *LATENCIES,
    *stats.with_ci("latency_degradation", "_pct"),
    *THROUGHPUTS,
    *stats.with_ci("throughput_degradation", "_pct"),
    *TAIL,
]

OPT_SPEEDUP_COLUMNS = [
    *("model", "placement", "threads", "batch_size", "allocator", "baseline", "opt"),
    *LATENCIES,
    *SPEEDUPS,
    *(f"speed_{c}" for c in SPEEDUPS),
    *THROUGHPUTS,
    *TAIL,
]


def _clean(samples: pd.DataFrame | None, *needed: str) -> pd.DataFrame | None:
    """samples.csv's clean iterations with the keys filled; None without them or ``needed``."""
    if samples is None or samples.empty or any(c not in samples.columns for c in needed):
        return None
    if "excluded" in samples.columns:
        samples = samples[~samples["excluded"].map(stats.as_bool).eq(True)]
    return grid.fill_keys(samples)


def _sample_index(samples: pd.DataFrame | None) -> dict[tuple, np.ndarray]:
    clean = _clean(samples)
    if clean is None:
        return {}
    return {
        _typed(dict(zip(KEYS, key, strict=True))): group["latency_ms"].to_numpy(dtype=float)
        for key, group in clean.groupby(list(KEYS), sort=False)
    }


def _replicate_medians(samples: pd.DataFrame | None) -> dict[tuple, dict[int, float]]:
    """{cell key: {replicate (its round): median of its clean iterations}} from samples.csv
    (what ``stats.combine_replicates`` combines); {} without a ``replicate`` column."""
    clean = _clean(samples, "replicate")
    if clean is None:
        return {}
    out: dict[tuple, dict[int, float]] = {}
    for key, group in clean.groupby([*KEYS, "replicate"], sort=False):
        cell = _typed(dict(zip(KEYS, key[:-1], strict=True)))
        out.setdefault(cell, {})[int(key[-1])] = float(np.median(group["latency_ms"]))
    return out


def paired_choice(pairs: list[tuple[dict, dict]]) -> tuple[bool, tuple, float]:
    """Whether the comparisons ``pairs`` ((baseline, compared) replicate medians by round, one
    thread count's) get the paired interval (``stats.prefer_paired``), the pooled variance of
    their per-round log ratios, and the adjacent processes' correlation."""
    ds = [stats.paired_log_ratios(b, c) for b, c in pairs]
    paired_pool = stats.pooled_paired_var(ds)
    cells = {id(m): list(m.values()) for pair in pairs for m in pair}
    cells_pool = stats.pooled_replicate_var(list(cells.values()))
    rounds = [sorted(set(b) & set(c)) for b, c in pairs]
    rho = stats.adjacent_correlation(
        [
            (np.asarray([b[r] for r in rs]), np.asarray([c[r] for r in rs]))
            for (b, c), rs in zip(pairs, rounds, strict=True)
        ]
    )
    return stats.prefer_paired(paired_pool, cells_pool), paired_pool, rho


def _typed(vals: dict) -> tuple:
    """A cell's key values as the sample index holds them (integers typed)."""
    return tuple(
        int(vals[k]) if a.type is int else vals[k] for k, a in zip(KEYS, grid.AXES, strict=True)
    )


def _key(row: pd.Series, suffix: str, vary: tuple) -> tuple:
    """The key of the cell that measured one side (``suffix`` ``""`` or ``"_b"``) of a pair."""
    vals = {k: row[k] for k in KEYS if k not in vary}
    vals.update({v: row[f"{v}{suffix}"] for v in vary})
    measured_as = row.get(f"{SAME}{suffix}")
    if isinstance(measured_as, str) and measured_as:
        vals["placement"] = measured_as
    return _typed(vals)


# the columns of cells.csv a pair reads, in their order, with their values where absent
PAIR_DEFAULTS = (
    ("latency_median_ms", np.nan),
    ("latency_mean_ms", np.nan),
    ("ci_method", None),
    ("latency_ci_low_ms", np.nan),
    ("latency_ci_high_ms", np.nan),
    ("ci_df", np.nan),
    ("contended", False),
    ("noisy", False),
    (SAME, None),
)


def pair_table(
    cells: pd.DataFrame,
    samples: pd.DataFrame | None,
    vary: str | tuple[str, ...],
    baseline_of: Callable,
    paired: bool = False,
) -> pd.DataFrame:
    """Baseline/compared pairs differing only in ``vary`` (one key or several: then
    ``baseline_of`` maps tuples), with the statistic, both values and the CI of compared / baseline;
    ``baseline`` holds the baseline's value (``/``-joined for several keys)."""
    vary = (vary,) if isinstance(vary, str) else tuple(vary)
    ratios = stats.with_ci("ratio")
    columns = [*KEYS, "baseline", *LATENCIES, *ratios, *TAIL[1:], SAME, f"{SAME}_b"]
    if cells is None or cells.empty:
        return pd.DataFrame(columns=columns)
    merged = merged_pairs(pair_frame(cells), vary, baseline_of)
    index = _sample_index(samples)
    # Adjacent pairs (``paired``: a placement and its baseline run side by side in every round,
    # plan.grid.job_order): the per-round ratios cancel what the two processes share, where the
    # run shows that they share it (``paired_choice``, per thread count).
    reps = _replicate_medians(samples) if paired else {}
    choice = pair_choices(merged, reps, vary)
    rows = [pair_row(r, vary, index, reps, choice) for _, r in merged.iterrows()]
    out = pd.DataFrame(rows, columns=columns)
    return out.sort_values(list(KEYS), kind="stable").reset_index(drop=True)


def pair_frame(cells: pd.DataFrame) -> pd.DataFrame:
    """The measured cells with the columns a pair needs (``PAIR_DEFAULTS`` where absent)."""
    df = grid.fill_keys(cells)
    if "status" in df.columns:
        df = df[df["status"].fillna("ok") == "ok"]
    df = df.assign(**{col: v for col, v in PAIR_DEFAULTS if col not in df.columns})
    keep = [*KEYS, *(["source"] if "source" in df.columns else []), *dict(PAIR_DEFAULTS)]
    return df[keep].astype({"threads": int, "batch_size": int})


def merged_pairs(df: pd.DataFrame, vary: tuple[str, ...], baseline_of: Callable) -> pd.DataFrame:
    """Each cell beside its own baseline's cell (``_b`` columns)."""
    group = [k for k in KEYS if k not in vary]
    if "source" in df.columns:
        group.append("source")
    values = (
        df[vary[0]]
        if len(vary) == 1
        else pd.Series(list(zip(*(df[v] for v in vary), strict=True)), index=df.index)
    )
    wanted = values.map(baseline_of)
    comp = df[wanted.notna()].assign(_base=wanted[wanted.notna()])
    base = df.assign(_base=values)
    return comp.merge(base, on=[*group, "_base"], suffixes=("", "_b"), how="inner")


def pair_choices(merged: pd.DataFrame, reps: dict, vary: tuple[str, ...]) -> dict:
    """threads -> ``paired_choice`` over the pairs with common rounds at that thread count; each
    pair of measurements once (a cell reported under two names is one measurement)."""
    by_threads: dict[int, dict] = {}
    for _, r in merged.iterrows():
        kb, kc = _key(r, "_b", vary), _key(r, "", vary)
        b, c = reps.get(kb), reps.get(kc)
        if kb != kc and b and c and set(b) & set(c):
            by_threads.setdefault(int(r["threads"]), {})[(kb, kc)] = (b, c)
    return {t: paired_choice(list(pairs.values())) for t, pairs in by_threads.items()}


def pair_interval(r: pd.Series, stat: str, vary, index: dict, reps: dict, choice: dict):
    """(low, high, method, adjacent correlation) of the ratio of one pair: paired where the
    run shows the two processes share their noise and both ran the same rounds, else
    ``stats.ratio_ci_method``'s (two-level, a within-process bootstrap, or none)."""
    kb, kc = _key(r, "_b", vary), _key(r, "", vary)
    use, pool, rho = choice.get(int(r["threads"]), (False, None, np.nan))
    if kb == kc:  # one measurement under two names
        return np.nan, np.nan, binding_mod.IDENTICAL, rho
    sb, sc = index.get(kb), index.get(kc)
    samples = sb is not None and sc is not None and len(sb) > 1 and len(sc) > 1
    method = stats.ratio_ci_method(stat, r["ci_method_b"], r["ci_method"], rounds=samples)
    b_reps, c_reps = reps.get(kb), reps.get(kc)
    # the same rounds in both cells: then the paired centre is the table's ratio (the
    # cells' medians are the geometric means of the same replicates' medians)
    same_rounds = bool(b_reps) and bool(c_reps) and set(b_reps) == set(c_reps)
    if method == stats.TWO_LEVEL and use and same_rounds:
        ci = stats.paired_ratio_ci(stats.paired_log_ratios(b_reps, c_reps), pool)
        return ci["ci_low"], ci["ci_high"], ci["ci_method"], rho
    if method == stats.TWO_LEVEL:
        lo, hi = stats.two_level_ratio_ci(
            (r["latency_ci_low_ms_b"], r["latency_ci_high_ms_b"], r["ci_df_b"]),
            (r["latency_ci_low_ms"], r["latency_ci_high_ms"], r["ci_df"]),
        )
    elif method == stats.BOOTSTRAP:
        lo, hi = stats.bootstrap_ratio(sb, sc, stat)
    else:
        lo, hi = np.nan, np.nan
    return lo, hi, method, rho


def pair_row(r: pd.Series, vary, index: dict, reps: dict, choice: dict) -> dict:
    """One pair's row of ``pair_table``."""
    stat = stats.latency_statistic((r["latency_median_ms"], r["latency_median_ms_b"]), every=True)
    col = stats.latency_column(stat)
    lc, lb = float(r[col]), float(r[f"{col}_b"])
    lo, hi, method, rho = pair_interval(r, stat, vary, index, reps, choice)
    return {
        **{k: r[k] for k in KEYS},
        "baseline": r["_base"] if len(vary) == 1 else "/".join(map(str, r["_base"])),
        "latency_baseline_ms": lb,
        "latency_compared_ms": lc,
        "ratio": lc / lb if lb > 0 else np.nan,
        "ratio_ci_low": lo,
        "ratio_ci_high": hi,
        "latency_statistic": stat,
        "ci_method": method,
        "adjacent_correlation": rho,
        "contended": _either(r["contended"], r["contended_b"]),
        "noisy": _either(r["noisy"], r["noisy_b"]),
        SAME: r[SAME],
        f"{SAME}_b": r[f"{SAME}_b"],
    }


def _either(a, b) -> bool:
    return stats.as_bool(a) is True or stats.as_bool(b) is True


def significant(p: pd.DataFrame) -> pd.Series:
    """Whether each pair's ratio CI excludes 1; None without a CI; False for one measurement
    under two names (``ci_method`` ``identical binding``)."""
    lo, hi = p["ratio_ci_low"], p["ratio_ci_high"]
    has = lo.notna() & hi.notna()
    sig = (lo > 1.0) | (hi < 1.0)
    same = p["ci_method"].eq(binding_mod.IDENTICAL)
    return pd.Series(
        [False if i else bool(s) if h else None for s, h, i in zip(sig, has, same, strict=True)],
        index=p.index,
        dtype=object,
    )


def compared(p: pd.DataFrame) -> dict:
    """The columns the comparison tables take from their ``pair_table`` (each keeps those of its
    own columns)."""
    bs = p["batch_size"].astype(float)
    return {
        **{k: p[k] for k in KEYS},
        "baseline": p["baseline"],
        **{c: p[c] for c in LATENCIES},
        "speedup": 1.0 / p["ratio"],
        "speedup_ci_low": 1.0 / p["ratio_ci_high"],
        "speedup_ci_high": 1.0 / p["ratio_ci_low"],
        "throughput_baseline_ips": bs * 1000.0 / p["latency_baseline_ms"],
        "throughput_compared_ips": bs * 1000.0 / p["latency_compared_ms"],
        "significant": significant(p),
        "ci_method": p["ci_method"],
        "adjacent_correlation": p["adjacent_correlation"],
        "contended": p["contended"].astype(bool),
        "noisy": p["noisy"].astype(bool),
    }


def degradation_table(cells: pd.DataFrame, samples: pd.DataFrame | None = None) -> pd.DataFrame:
    """Placement vs its baseline (see the module docstring); works on cells.csv alone."""
    p = pair_table(cells, samples, "placement", PAIRED["placement"], paired=True)
    out = compared(p)
    for b in stats.BOUNDS:
        out[f"latency_degradation{b}_pct"] = (p[f"ratio{b}"] - 1.0) * 100.0
        out[f"throughput_degradation{b}_pct"] = (1.0 - 1.0 / p[f"ratio{b}"]) * 100.0
    return pd.DataFrame(out, columns=DEGRADATION_COLUMNS)


def _speed_speedups(p: pd.DataFrame, samples: pd.DataFrame | None) -> dict:
    """The speedup of each pair at the run's reference speed (``speed.ratio``: each cell along
    its series' slope on the canary; NaN where the replicates timed no canary)."""
    from numa_effects.tables import speed

    reps = speed.replicates(samples) if samples is not None else pd.DataFrame()
    fits = speed.fit(reps) if not reps.empty else {}
    cols = {f"speed_{c}": [] for c in SPEEDUPS}
    for _, r in p.iterrows():
        # the cells that measured them (``same_binding_as``)
        compared = dict(zip(KEYS, _key(r, "", ()), strict=True))
        eager = {**dict(zip(KEYS, _key(r, "_b", ()), strict=True)), "opt": EAGER}
        got = speed.ratio(reps, fits, compared, eager) if fits else None
        for c, v in zip(cols, ("ratio", "ci_high", "ci_low"), strict=True):
            cols[c].append(1.0 / got[v] if got else np.nan)
    return {c: pd.Series(v, index=p.index, dtype=float) for c, v in cols.items()}


def opt_speedup_table(cells: pd.DataFrame, samples: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every optimization vs eager (``none``); see the module docstring."""
    p = pair_table(cells, samples, "opt", PAIRED["opt"], paired=True)
    out = pd.DataFrame({**compared(p), **_speed_speedups(p, samples)}, columns=OPT_SPEEDUP_COLUMNS)
    return out.sort_values(list(KEYS)).reset_index(drop=True)
