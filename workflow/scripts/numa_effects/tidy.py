"""Cell JSONs -> tidy tables.

Column convention (documented in config/README.md): snake_case; the five cell keys first
(``model, opt, placement, threads, batch_size``); units as suffixes: ``_ms`` milliseconds,
``_s`` seconds, ``_ips`` images per second, ``_mb`` megabytes; every latency statistic is
``latency_<stat>_ms``; provenance columns last.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from . import cellresult
from . import placement as placement_mod
from .grid import KEYS

KEY_COLUMNS = list(KEYS)


def cell_row(data: dict, path: str = "") -> dict:
    cell = data["cell"]
    row = {k: cell[k] for k in KEYS}
    row["replicate"] = int(data.get("replicate", 1))
    row["image_size"] = cell.get("image_size")
    row["use_smt"] = cell.get("use_smt", False)
    row["placement_base"] = placement_mod.parse_label(str(cell["placement"]))[0]
    row["status"] = data["status"]
    for key, value in (data.get("stats") or {}).items():
        if key.endswith("_s"):
            row[f"latency_{key[:-2]}_ms"] = value * 1000.0
        else:
            row[key] = value
    for key, value in (data.get("throughput") or {}).items():
        row["throughput_ips" if key == "ips" else f"throughput_{key.removesuffix('_ips')}_ips"] = (
            value
        )
    m = data.get("measurement") or {}
    for key in ("protocol", "stop_reason", "target_rel_ci", "warmup_iterations", "warmup_stable"):
        if key in m:
            row[key] = m[key]
    for key in ("elapsed_s", "timed_s", "warmup_total_s", "build_s", "prepare_s", "first_call_s"):
        if key in m:
            row[key.replace("elapsed_s", "measure_s")] = m[key]
    plan = data.get("plan") or {}
    row["planned_cpus"] = plan.get("cpu_list")
    row["mem_policy"] = plan.get("mem_policy")
    row["planned_mems"] = plan.get("mem_list")
    bind = data.get("binding") or {}
    row["cpus_allowed"] = bind.get("cpus_allowed_list")
    row["mems_allowed"] = bind.get("mems_allowed_list")
    pol = bind.get("mempolicy") or {}
    row["mempolicy"] = (
        f"{pol.get('mode')}:{','.join(map(str, pol.get('nodes', [])))}" if pol else None
    )
    row["torch_num_threads"] = bind.get("torch_num_threads")
    row.update(verification_columns(bind.get("verification")))
    row.update(contention_columns(data.get("contention")))
    failure = data.get("failure") or {}
    row["failure_cause"] = failure.get("cause")
    row["failure_message"] = failure.get("message")
    prov = data.get("provenance") or {}
    versions = prov.get("versions") or {}
    row["torch_version"] = versions.get("torch")
    row["torchvision_version"] = versions.get("torchvision")
    row["hostname"] = (prov.get("host") or {}).get("hostname")
    row["slurm_job_id"] = (prov.get("slurm") or {}).get("SLURM_JOB_ID")
    row["peak_rss_mb"] = prov["peak_rss_kb"] / 1024.0 if prov.get("peak_rss_kb") else None
    row["started_at"] = prov.get("started_at")
    row["finished_at"] = prov.get("finished_at")
    row["command_line"] = prov.get("command_line") or failure.get("command_line")
    row["source"] = data.get("source", "measured")
    row["cell_json"] = path
    return row


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
    }


def contention_columns(noise: dict | None) -> dict:
    """Machine state before the cell and the contention verdict (``contention``)."""
    noise = noise or {}
    return {
        "load_1m": noise.get("load_1m"),
        "runnable_others": noise.get("runnable_others"),
        "contended": noise.get("contended"),
        "foreign_cpu_pct": noise.get("foreign_cpu_pct"),
        "contended_reason": noise.get("contended_reason"),
    }


FAILURE_COLUMNS = [
    *KEY_COLUMNS,
    "cause",
    "message",
    "returncode",
    "signal",
    "stderr_tail",
    "log",
    "command_line",
    "cell_json",
]


def failures_table(cells: pd.DataFrame) -> pd.DataFrame:
    """One row per failed cell of ``cells`` (from ``tables``): its keys, the cause, the exit
    status (``returncode``; negative = killed by ``signal``) and the last lines of its output,
    read back from the cell JSON."""
    rows = []
    if not cells.empty:
        for _, cell in cells[cells["status"] != "ok"].iterrows():
            data = cellresult.read(cell["cell_json"])
            f = data.get("failure") or {}
            rows.append(
                {
                    **{k: cell[k] for k in KEY_COLUMNS},
                    "cause": f.get("cause"),
                    "message": f.get("message"),
                    "returncode": f.get("returncode"),
                    "signal": f.get("signal"),
                    "stderr_tail": f.get("stderr_tail"),
                    "log": f.get("log"),
                    "command_line": f.get("command_line"),
                    "cell_json": cell["cell_json"],
                }
            )
    df = pd.DataFrame(rows, columns=FAILURE_COLUMNS)
    return df.astype({"returncode": "Int64"})


def sample_rows(data: dict) -> Iterable[dict]:
    if data["status"] != "ok":
        return
    keys = {k: data["cell"][k] for k in KEYS}
    keys["replicate"] = int(data.get("replicate", 1))
    for i, lat in enumerate(data["measurement"]["latencies_s"]):
        yield {**keys, "iteration": i, "latency_ms": lat * 1000.0}


def tables(paths: Iterable[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows, samples = [], []
    for path in paths:
        data = cellresult.read(path)
        rows.append(cell_row(data, str(path)))
        samples.extend(sample_rows(data))
    cells = pd.DataFrame(rows)
    if not cells.empty:
        cells = cells.sort_values(KEY_COLUMNS, kind="stable").reset_index(drop=True)
    samples_df = pd.DataFrame(
        samples, columns=[*KEY_COLUMNS, "replicate", "iteration", "latency_ms"]
    )
    return cells, samples_df


def skipped_table(rows: list[dict]) -> pd.DataFrame:
    """``rows``: the cell keys and ``reason`` of every cell the grid could not schedule."""
    return pd.DataFrame(rows, columns=[*KEY_COLUMNS, "reason"])


def write(df: pd.DataFrame, path: str) -> None:
    """CSV always; a Parquet copy beside it when pyarrow is installed. Atomic per file."""
    import os

    tmp = f"{path}.tmp"
    df.to_csv(tmp, index=False)
    os.replace(tmp, path)
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return
    pq = path.removesuffix(".csv") + ".parquet"
    df.to_parquet(f"{pq}.tmp", index=False)
    os.replace(f"{pq}.tmp", pq)
