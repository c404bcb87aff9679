"""Cell JSONs -> cells.csv and samples.csv (column convention: config/README.md).

A cell is measured by ``replicates`` processes (one JSON each); ``combine_replicates`` makes one
row per cell: the median and 95 % CI are ``stats.combine_replicates``' two-level ones, the other
latency statistics over the clean iterations of all replicates, times summed, ``contended`` and
``noisy`` true when any replicate is. A replicate with no clean iteration has no statistics and is
left out; a cell whose replicates all are is ``contended`` with no latency, and not a failure.
samples.csv keeps every timed iteration.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable

import pandas as pd

from numa_effects import stats
from numa_effects.measure import record
from numa_effects.measure.record import Record
from numa_effects.plan import allocators
from numa_effects.plan import placement as placement_mod
from numa_effects.plan.grid import DEFAULTS, KEYS
from numa_effects.plan.optimizations import OPTIMIZATIONS
from numa_effects.tables import speed

KEY_COLUMNS = list(KEYS)


def cell_row(rec: Record, path: str = "") -> dict:
    cell = rec.cell
    row = {k: cell.get(k, DEFAULTS.get(k)) for k in KEYS}
    row["replicate"] = rec.replicate
    row["image_size"] = cell.get("image_size")
    row["use_smt"] = cell.get("use_smt", False)
    row["placement_base"] = placement_mod.parse_label(str(cell["placement"]))[0]
    row["status"] = rec.status
    row.update(latency_columns(rec.stats or {}))
    row.update(throughput_columns(rec.throughput or {}))
    row.update(measurement_columns(rec.measurement))
    row.update(precision_columns(rec))
    row.update(allocator_columns(rec))
    plan = rec.plan or {}
    row["planned_cpus"] = plan.get("cpu_list")
    row["mem_policy"] = plan.get("mem_policy")
    row["planned_mems"] = plan.get("mem_list")
    bind = rec.binding
    row["cpus_allowed"] = bind.get("cpus_allowed_list")
    row["mems_allowed"] = bind.get("mems_allowed_list")
    row["mempolicy"] = rec.mempolicy
    row["torch_num_threads"] = bind.get("torch_num_threads")
    row["aslr"] = bind.get("aslr")
    row.update(verification_columns(rec.verification))
    row.update(contention_columns(rec.contention))
    row["failure_cause"] = rec.failure.cause if rec.failure else None
    row["failure_message"] = rec.failure.message if rec.failure else None
    prov = rec.provenance
    row["torch_version"] = rec.version("torch")
    row["torchvision_version"] = rec.version("torchvision")
    row["hostname"] = rec.hostname
    row["slurm_job_id"] = (prov.get("slurm") or {}).get("SLURM_JOB_ID")
    row["peak_rss_mb"] = prov["peak_rss_kb"] / 1024.0 if prov.get("peak_rss_kb") else None
    row["started_at"] = prov.get("started_at")
    row["finished_at"] = prov.get("finished_at")
    row["command_line"] = rec.command_line
    row["source"] = "measured"
    row["cell_json"] = path
    return row


def latency_columns(summary: dict) -> dict:
    """``stats.summarize``'s dict as columns: its ``<name>_s`` seconds as ``latency_<name>_ms``."""
    row = {}
    for key, value in summary.items():
        if key.endswith("_s"):
            row[f"latency_{key[:-2]}_ms"] = value * 1000.0
        else:
            row[key] = value
    return row


def throughput_columns(rates: dict) -> dict:
    """``stats.throughput``'s (or ``stats.rates``') dict as ``throughput_<key>`` columns."""
    return {f"throughput_{key}": value for key, value in rates.items()}


def measurement_columns(m: dict) -> dict:
    """The protocol, stopping rule and times of a measurement (``_s`` seconds; the whole
    measurement is ``measure_s``), and its page faults per timed step (the median)."""
    row = {k: m[k] for k in MEASUREMENT_KEYS if k in m}
    for key in TIMES:
        if key in m:
            row[key.replace("elapsed_s", "measure_s")] = m[key]
    if m.get("minor_faults"):  # the process's page faults per timed step, where recorded
        row["minor_faults_per_step"] = float(statistics.median(m["minor_faults"]))
    return row


MEASUREMENT_KEYS = (
    "protocol",
    "stop_reason",
    "target_rel_ci",
    "warmup_iterations",
    "warmup_stable",
)
TIMES = ("elapsed_s", "timed_s", "warmup_total_s", "build_s", "prepare_s", "first_call_s")


def precision_columns(rec: Record) -> dict:
    """What the cell computed in, how far its outputs are from float32 eager
    (``measure.workloads.model.inspect``) and its conversion cost; ``dtype`` and ``graph`` from the
    optimization registry where the record has none."""
    entry = OPTIMIZATIONS.get(str(rec.cell.get("opt")))
    prec = rec.summary or {}
    m = rec.measurement
    trace = prec.get("onednn") or {}
    caps = prec.get("capabilities") or {}
    num = prec.get("numerics") or {}
    agree, verdict = num.get("agreement") or {}, num.get("verdict") or {}
    prepare, first = m.get("prepare_s"), m.get("first_call_s")
    started, finished = rec.provenance.get("started_at"), rec.provenance.get("finished_at")
    cost = None  # the process's wall time: torch import, build, conversion, timing, inspection
    if started and finished and rec.status != "failed":
        cost = (pd.Timestamp(finished) - pd.Timestamp(started)).total_seconds()
    return {
        "dtype": prec.get("dtype") or (entry.dtype if entry else None),
        "graph": prec.get("graph") or (entry.graph if entry else None),
        "native": prec.get("native"),
        "precision_note": prec.get("precision_note"),
        "dtype_verified": prec.get("dtype_verified"),
        "compute_dtypes": ";".join(prec.get("compute_dtypes") or []) or None,
        "onednn_isa": trace.get("isa"),
        "onednn_kernels": trace.get("summary"),
        "aten_cpu_capability": prec.get("aten_cpu_capability"),
        "aten_ops": ";".join(o["op"] for o in prec.get("aten_ops") or []) or None,
        "cpu_isa": caps.get("isa"),
        "bf16_state": caps.get("bf16"),
        "int8_state": caps.get("int8"),
        "numerics_ok": verdict.get("ok"),
        "agree_cosine": agree.get("cosine"),
        "agree_max_rel_err": agree.get("max_rel_err"),
        "agree_top1": agree.get("top1_agree"),
        "output_dtype": agree.get("output_dtype"),
        "reference_s": m.get("reference_s") if num else None,
        "conversion_s": (prepare or 0.0) + (first or 0.0)
        if prepare is not None or first is not None
        else None,
        "inspect_s": prec.get("inspect_s"),
        "cost_s": cost,
    }


def allocator_columns(rec: Record) -> dict:
    """The allocator the cell ran with, as the front door found it where the cell ran and the
    process proved it (``verification.allocator``: the libraries mapped)."""
    alloc = rec.allocator or {}
    env = alloc.get("env") or {}
    mapped = (rec.verification.get("allocator") or {}).get("mapped")
    return {
        "allocator_library": alloc.get("library"),
        "allocator_version": alloc.get("version"),
        "malloc_conf": env.get("MALLOC_CONF"),
        "malloc_env": allocators.settings_text(env) or None,
        "allocator_mapped": ";".join(mapped) if mapped else None,
    }


def verification_columns(ver: dict | None) -> dict:
    """The in-cell verification (``verify``) as flat columns; all None when absent."""
    ver = ver or {}
    threads = ver.get("threads") or {}
    pages = ver.get("pages") or {}
    by_node = pages.get("anon_kb_by_node") or {}
    share = pages.get("share_on_plan")
    return {
        "verified": ver.get("ok"),
        "verify_problems": "; ".join(p["message"] for p in ver.get("problems", [])) or None,
        "thread_count": threads.get("n_tasks"),
        "thread_last_cpus": threads.get("last_cpus"),
        "threads_outside_plan": len(threads["outside_plan"]) if "outside_plan" in threads else None,
        "anon_mb": pages["anon_kb"] / 1024.0 if "anon_kb" in pages else None,
        "anon_mb_by_node": ";".join(f"{n}:{kb / 1024.0:.1f}" for n, kb in by_node.items()) or None,
        "anon_on_plan_pct": share * 100.0 if share is not None else None,
        "anon_huge_mb": (
            pages["anon_huge_kb"] / 1024.0 if pages.get("anon_huge_kb") is not None else None
        ),
    }


def contention_columns(noise: dict | None) -> dict:
    """Machine state before the cell and the contention verdict (``contention``)."""
    noise = noise or {}
    return {
        "load_1m": noise.get("load_1m"),
        "runnable_others": noise.get("runnable_others"),
        "contended": noise.get("contended"),
        "foreign_cpu_pct": noise.get("foreign_cpu_pct"),
        "other_cpus_busy_pct": noise.get("other_cpus_busy_pct"),
        "excluded_iterations": noise.get("excluded_iterations"),
        "contended_retries": noise.get("retries"),
        "contended_reason": noise.get("contended_reason"),
    }


FAILURE_FIELDS = ("cause", "message", "returncode", "signal", "stderr_tail", "log", "command_line")
FAILURE_COLUMNS = [*KEY_COLUMNS, *FAILURE_FIELDS, "cell_json"]


def failures_table(cells: pd.DataFrame) -> pd.DataFrame:
    """One row per failed cell: its keys, the cause, the exit status and the last lines of its
    output, read back from the cell JSON."""
    rows = []
    if not cells.empty:
        for _, cell in cells[cells["status"] == "failed"].iterrows():
            f = record.read(cell["cell_json"]).failure
            rows.append(
                {
                    **{k: cell[k] for k in KEY_COLUMNS},
                    **{k: getattr(f, k) for k in FAILURE_FIELDS if hasattr(f, k)},
                    "cell_json": cell["cell_json"],
                }
            )
    df = pd.DataFrame(rows, columns=FAILURE_COLUMNS)
    return df.astype({"returncode": "Int64"})


def sample_rows(rec: Record) -> Iterable[dict]:
    if rec.status not in ("ok", "contended"):
        return
    keys = {k: rec.cell.get(k, DEFAULTS.get(k)) for k in KEYS}
    keys["replicate"] = rec.replicate
    m = rec.measurement
    lats = m["latencies_s"]
    foreign = m.get("foreign_pct") or [None] * len(lats)
    delay = m.get("run_delay_pct") or [None] * len(lats)  # (records before it: none)
    excluded = m.get("excluded") or [False] * len(lats)
    canary = m.get("canary_s") or [None] * len(lats)  # settings key canary (else none)
    faults = m.get("minor_faults") or [None] * len(lats)  # (records before it: none)
    rows = zip(lats, foreign, delay, excluded, canary, faults, strict=True)
    for i, (lat, f, d, e, c, pf) in enumerate(rows):
        yield {
            **keys,
            "iteration": i,
            "latency_ms": lat * 1000.0,
            "foreign_pct": f,
            "run_delay_pct": d,
            "excluded": bool(e),
            "canary_ms": None if c is None else c * 1000.0,
            "minor_faults": pf,
        }


SAMPLE_COLUMNS = [
    *KEY_COLUMNS,
    *("replicate", "iteration", "latency_ms", "foreign_pct", "run_delay_pct", "excluded"),
    *("canary_ms", "minor_faults"),
]
# summed over a cell's replicates: the measurement's times, then precision_columns'
SUMMED = ("measure_s", *TIMES[1:], "reference_s", "conversion_s", "inspect_s", "cost_s")


def pooled_variances(medians: dict) -> dict:
    """Each cell's process-level variance pool (``stats.pooled_replicate_var``): over its
    batch-size series (``speed.SERIES``: the cells sharing what sets that spread, the code, the
    binding, the allocator; bf16's processes spread 2 - 6 % beside eager's 1 - 2 % on the same
    CPUs) where at least two of its cells have two replicates (one would pool a cell with
    itself), else over its thread count, else the whole run. ``medians``: key tuple -> the
    replicates' medians (s); returns key tuple -> (variance, df). Wider pools let noisy cells
    (2-thread on 2 cores, bf16) widen quiet cells' CIs and took their own too narrow
    (``tests/test_pools.py``)."""
    t_at = KEY_COLUMNS.index("threads")
    fixed = [KEY_COLUMNS.index(k) for k in speed.SERIES]

    def pool(keys):
        spread = [medians[k] for k in keys if len(medians[k]) >= 2]
        return stats.pooled_replicate_var(spread) if len(spread) >= 2 else (math.nan, 0)

    def by(index):
        groups: dict = {}
        for k in medians:
            groups.setdefault(tuple(k[i] for i in index), []).append(k)
        return {g: pool(keys) for g, keys in groups.items()}

    run = stats.pooled_replicate_var(list(medians.values()))
    series, threads = by(fixed), by([t_at])
    out = {}
    for k in medians:
        for candidate in (series[tuple(k[i] for i in fixed)], threads[(k[t_at],)], run):
            if candidate[1]:
                break
        out[k] = candidate
    return out


def fault_columns(good: pd.DataFrame) -> dict:
    """A cell's page faults per timed step: the median over its replicates, and each one's in
    replicate order (glibc leaves each process in its own state: docs/precision.md)."""
    per = good.get("minor_faults_per_step")
    if per is None or per.isna().any():
        return {"minor_faults_per_step": None, "replicate_faults_per_step": None}
    return {
        "minor_faults_per_step": float(per.median()),
        "replicate_faults_per_step": ";".join(f"{v:.0f}" for v in per),
    }


# columns an older record or a cell with no successful replicate may lack: NaN, or None
OPTIONAL_NAN = ("latency_median_ms", "latency_ci_low_ms", "latency_ci_high_ms", "noisy")
OPTIONAL_NONE = ("stop_reason",)  # (``contention_columns`` are in every row)


def combine_replicates(
    reps: pd.DataFrame, samples: pd.DataFrame, stages: dict | None = None
) -> pd.DataFrame:
    """One row per cell from its replicates' rows (``cell_row``) and the run's clean samples.
    ``stages``: key tuple -> the cell's two-stage record (``tables.stages.read_records``): its CI
    then uses the first stage's variance (``ci_method`` ``two-stage``)."""
    if reps.empty:  # no cell measured (every cell skipped): the keys and counts, no rows
        return pd.DataFrame(columns=[*KEY_COLUMNS, "replicates", "status"])
    reps = reps.sort_values([*KEY_COLUMNS, "replicate"], kind="stable")
    reps = reps.assign(**{c: math.nan for c in OPTIONAL_NAN if c not in reps.columns})
    reps = reps.assign(**{c: None for c in OPTIONAL_NONE if c not in reps.columns})
    ok = reps[reps["status"] == "ok"]
    groups = {k: g for k, g in ok.groupby(KEY_COLUMNS, sort=False)}
    pooled = pooled_variances(
        {k: g["latency_median_ms"].to_numpy() / 1000.0 for k, g in groups.items()}
    )
    clean = samples[~samples["excluded"].astype(bool)] if not samples.empty else samples
    by_cell = {k: g["latency_ms"].to_numpy() for k, g in clean.groupby(KEY_COLUMNS, sort=False)}
    # each replicate's within-process variance, from its own clean samples
    within = {
        k: stats.within_log_var(g["latency_ms"].to_numpy() / 1000.0)
        for k, g in clean.groupby([*KEY_COLUMNS, "replicate"], sort=False)
    }
    rows = []
    for key, g in reps.groupby(KEY_COLUMNS, sort=False):
        good = groups.get(key)
        wv = [] if good is None else [within.get((*key, r), math.nan) for r in good["replicate"]]
        stage = (stages or {}).get(key)
        rows.append(cell_of(g, good, pooled.get(key), by_cell.get(key), stage, wv))
    out = pd.DataFrame(rows)
    front = [*KEY_COLUMNS, "replicates"]
    return out[front + [c for c in out.columns if c not in front and c != "replicate"]]


def cell_of(g, good, pooled_var, latencies, stage, within_vars=()) -> dict:
    """One cell's row from its replicates ``g`` (``good``: the successful ones, or None;
    ``within_vars``: each good one's ``stats.within_log_var``, from its samples)."""
    failed = g[g["status"] == "failed"]
    reasons = "; ".join(
        f"replicate {int(r)}: {why}"
        for r, why in zip(g["replicate"], g["contended_reason"], strict=True)
        if isinstance(why, str) and why
    )
    row = (good if good is not None else failed if len(failed) else g).iloc[0].to_dict()
    row["replicate"] = None
    row["replicates_failed"] = len(failed)
    if good is None:
        # no replicate measured: failed, or (none failed) contended throughout: no number
        row["replicates"] = 0
        if failed.empty:
            row.update(status="contended", contended=True, contended_reason=reasons or None)
        return row
    meds = good["latency_median_ms"].to_numpy() / 1000.0
    c = replicate_interval(meds, within_vars, pooled_var, stage, row)
    if latencies is not None and latencies.size:
        row.update(latency_columns(stats.summarize(latencies / 1000.0)))
    contended = bool(g["contended"].fillna(False).astype(bool).any())
    row.update(interval_columns(c, good, meds))
    row.update(noise_columns(good, row, contended, reasons))
    row.update(summed_columns(good))
    latency = [row[f"latency_{k}_ms"] for k in ("median", "ci_low", "ci_high")]
    row.update(throughput_columns(stats.rates(float(row["batch_size"]) * 1000.0, *latency)))
    return row


def replicate_interval(meds, within_vars, pooled_var, stage, row: dict) -> dict:
    """The cell's median and CI over its replicates (with a two-stage record, Stein's);
    the record's ``replicates_*`` columns go into ``row``."""
    c = stats.combine_replicates(meds, within_vars, pooled_var)
    if stage is not None:
        row.update(
            replicates_planned=stage["replicates"],
            replicates_needed=stage["needed"],
            replicates_reason=stage["reason"],
        )
        if stage.get("log_var") is not None:  # Stein's second stage (tables.stages)
            m, lo_s, hi_s = stats.stein_interval(meds, stage["log_var"], int(stage["df"]))
            c.update(median_s=m, ci_low_s=lo_s, ci_high_s=hi_s, ci_df=stage["df"])
            c["ci_method"] = stats.TWO_STAGE
    return c


def interval_columns(c: dict, good: pd.DataFrame, meds) -> dict:
    """The latency median and CI columns (ms) of the combined replicates ``c``."""
    med = c["median_s"] * 1000.0
    lo, hi = c["ci_low_s"] * 1000.0, c["ci_high_s"] * 1000.0
    if c["ci_method"] == stats.WITHIN:  # one replicate, nothing to pool: its own CI
        lo, hi = (float(good[f"latency_ci_{end}_ms"].iloc[0]) for end in ("low", "high"))
    return {
        "latency_median_ms": med,
        "latency_ci_low_ms": lo,
        "latency_ci_high_ms": hi,
        "ci_halfwidth_pct": stats.halfwidth_pct(med, lo, hi),
        "ci_method": c["ci_method"],
        "ci_df": c["ci_df"],
        "replicates": c["replicates"],
        "replicate_sd_pct": c["replicate_sd_pct"],
        "within_sd_pct": c["within_sd_pct"],
        "between_sd_pct": c["between_sd_pct"],
        "replicate_medians_ms": ";".join(f"{m * 1000.0:.4g}" for m in meds),
        **fault_columns(good),
    }


def noise_columns(good: pd.DataFrame, row: dict, contended: bool, reasons: str) -> dict:
    """The noise and timing columns over the successful replicates: any replicate contended
    (also one left without statistics), the worst load, the span of the runs."""
    return {
        "contended": contended,
        "noisy": bool(row.get("noisy")) or bool(good["noisy"].fillna(False).any()),
        "foreign_cpu_pct": good["foreign_cpu_pct"].max(),
        "other_cpus_busy_pct": good["other_cpus_busy_pct"].max(),
        "contended_reason": reasons or None,
        "load_1m": good["load_1m"].max(),
        "stop_reason": "+".join(sorted(set(good["stop_reason"].dropna().astype(str)))),
        "started_at": good["started_at"].min(),
        "finished_at": good["finished_at"].max(),
    }


def summed_columns(good: pd.DataFrame) -> dict:
    """The times (``SUMMED``) and counts summed over the successful replicates."""
    out = {col: float(good[col].sum()) for col in SUMMED if col in good.columns}
    for col in ("excluded_iterations", "contended_retries"):
        if col in good.columns:
            out[col] = good[col].fillna(0).sum()
    return out


def tables(paths: Iterable[str], stages: dict | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """cells.csv and samples.csv of the cell JSONs at ``paths``; ``stages``: see
    ``combine_replicates``."""
    rows, samples = [], []
    for path in paths:
        rec = record.read(path)
        rows.append(cell_row(rec, str(path)))
        samples.extend(sample_rows(rec))
    samples_df = pd.DataFrame(samples, columns=SAMPLE_COLUMNS)
    cells = speed.join(combine_replicates(pd.DataFrame(rows), samples_df, stages), samples_df)
    if not cells.empty:
        cells = cells.sort_values(KEY_COLUMNS, kind="stable").reset_index(drop=True)
    return cells, samples_df


SAME = "same_binding_as"  # cells.csv: the placement whose cell measured this one


def with_same_bindings(cells: pd.DataFrame, same: Iterable[dict]) -> pd.DataFrame:
    """``cells`` with a copy of the measuring cell's row for each cell the plan reports from
    another's measurement (``same``: ``plan.build.Plan.same_binding_rows``), ``same_binding_as``
    naming the measuring placement."""
    cells = cells.copy()
    if SAME not in cells.columns:  # after the keys and ``replicates``
        at = [*KEY_COLUMNS, "replicates"]
        cells.insert(sum(c in cells.columns for c in at), SAME, None)
    same = list(same)
    if cells.empty or not same:
        return cells
    index = {tuple(r[k] for k in KEY_COLUMNS): i for i, r in cells[KEY_COLUMNS].iterrows()}
    rows = []
    for entry in same:
        measured = tuple(entry[SAME] if k == "placement" else entry[k] for k in KEY_COLUMNS)
        if measured not in index:
            continue
        row = cells.loc[index[measured]].copy()
        row["placement"] = entry["placement"]
        row["placement_base"] = placement_mod.parse_label(str(entry["placement"]))[0]
        row[SAME] = entry[SAME]
        rows.append(row)
    if not rows:
        return cells
    out = pd.concat([cells, pd.DataFrame(rows)], ignore_index=True)
    return out.sort_values(KEY_COLUMNS, kind="stable").reset_index(drop=True)


def skipped_table(rows: list[dict]) -> pd.DataFrame:
    """``rows``: the cell keys and ``reason`` of every cell the grid could not schedule."""
    return pd.DataFrame(rows, columns=[*KEY_COLUMNS, "reason"])
