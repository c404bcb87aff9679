"""Import PackRat's published results as this project's tidy tables (docs/report.md,
"Importing PackRat results").

PackRat (msr-fiddle/packrat) appends one row per cell to ``resnet_latency.csv`` (latency min /
avg / max in ms per batch, hardware-counter GFLOP/s: 0 = unavailable) and
``resnet_throughput.csv`` (images/s = batch x iterations / total time). ``benchmark`` is
``<model>_<runtype|local|remote>_<opt>`` (``parse_benchmark``, ``placement``). PackRat has no
median, percentiles or samples: those stay empty, never invented.
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import pandas as pd

from numa_effects.plan.grid import DEFAULTS, KEYS

LATENCY_FILE = "resnet_latency.csv"
THROUGHPUT_FILE = "resnet_throughput.csv"
SOURCE = "imported from PackRat"
MODEL_NAMES = {"resnet": "resnet50"}  # PackRat's `resnet` benchmark is ResNet-50
MEMORY_PLACEMENTS = {"local": "sequential", "remote": "remote"}
TOPOLOGIES = ("sequential", "interleave")
# Columns identifying a PackRat cell: in both files when present.
PACKRAT_KEYS = (
    *("benchmark", "topology", "pinning", "allocator", "instance_id", "interop_threads"),
    *("intraop_threads", "batch_size"),
)
LATENCY_COLUMNS = {"latency(min)": "min", "latency(avg)": "mean", "latency(max)": "max"}
# The measured values of each file: finite numbers > 0 (``row_problems``).
VALUE_COLUMNS = {LATENCY_FILE: tuple(LATENCY_COLUMNS), THROUGHPUT_FILE: ("throughput",)}
# The counts that key a cell, in both files: whole numbers >= 1 (``row_problems``).
COUNT_COLUMNS = ("batch_size", "intraop_threads", "interop_threads")
STATS = ("min", "p10", "median", "mean", "p90", "p99", "max", "std", "iqr")
COLUMNS = [
    *KEYS,
    *("status", "n"),
    *(f"latency_{s}_ms" for s in STATS),
    *("throughput_ips", "throughput_total_ips", "hw_gflop_per_s", "interop_threads"),
    *("packrat_benchmark", "packrat_topology", "pinning", "instance_id", "failure_cause"),
    *("failure_message", "source", "source_file"),
]


class PackratError(ValueError):
    """A PackRat source is missing or cannot be mapped."""


def source_files(path: str | os.PathLike) -> tuple[Path, Path]:
    """``path``: a PackRat results folder, or either of its two CSV files."""
    p = Path(path)
    folder = p.parent if p.suffix == ".csv" else p
    lat, thr = folder / LATENCY_FILE, folder / THROUGHPUT_FILE
    missing = [str(f) for f in (lat, thr) if not f.is_file()]
    if missing:
        raise PackratError(f"PackRat import: {', '.join(missing)} not found")
    return lat, thr


def row_problems(path: str | os.PathLike) -> list[tuple[int, str]] | None:
    """(line, what) of every impossible value in one PackRat CSV: a value (``VALUE_COLUMNS``)
    that is not a finite number > 0, a count (``COUNT_COLUMNS``) not a whole number >= 1. None
    without rows."""
    path = Path(path)
    columns = VALUE_COLUMNS.get(path.name, (*LATENCY_COLUMNS, "throughput"))
    found: list[tuple[int, str]] = []
    rows = 0
    with open(path, newline="", encoding="utf-8", errors="replace") as fh:
        reader = csv.DictReader(fh)
        for row in reader:
            if not any((v or "").strip() for v in row.values() if isinstance(v, str)):
                continue  # a blank line (pandas skips them too)
            rows += 1
            for col in (*COUNT_COLUMNS, *columns):
                if col not in row:
                    continue  # a missing column is read()'s error
                what = _impossible((row[col] or "").strip(), count=col in COUNT_COLUMNS)
                if what:
                    found.append((reader.line_num, f"{col} {what}"))
    return found if rows else None


def _impossible(text: str, count: bool) -> str | None:
    """Why ``text`` is no measured value (``count``: no batch size or thread count), or None."""
    try:
        value = float(text)
    except ValueError:
        return f"{text!r} is not a number"
    if not math.isfinite(value):
        return f"{text} is not a finite number"
    if value <= 0:
        return f"{text} is {'negative' if value < 0 else 'zero'}"
    if count and not value.is_integer():
        return f"{text} is not a whole number"
    return None


def parse_benchmark(name: str) -> tuple[str, str, str]:
    """``resnet_manual_script`` -> (``resnet50``, ``manual``, ``script``)."""
    parts = str(name).split("_")
    if len(parts) < 3 or not all(parts):
        raise PackratError(
            f"PackRat benchmark {name!r} is not <model>_<runtype|local|remote>_<opt>"
        )
    return MODEL_NAMES.get(parts[0], parts[0]), parts[1], "_".join(parts[2:])


def placement(topology: str, runtype: str) -> str:
    if topology not in TOPOLOGIES:
        raise PackratError(f"PackRat topology {topology!r} is not one of {', '.join(TOPOLOGIES)}")
    if runtype in MEMORY_PLACEMENTS:
        if topology != "sequential":
            raise PackratError(f"PackRat {runtype} memory with {topology} threads has no placement")
        return MEMORY_PLACEMENTS[runtype]
    return topology


def _read(path: Path, values: Sequence[str]) -> pd.DataFrame:
    df = pd.read_csv(path)
    need = {"benchmark", "topology", "intraop_threads", "batch_size", *values}
    if need - set(df.columns):
        raise PackratError(f"{path}: missing columns {', '.join(sorted(need - set(df.columns)))}")
    df["_line"] = df.index + 2  # 1-based, after the header
    return df


def _check_rows(f) -> None:
    """Raise ``PackratError`` at ``row_problems``' first finding in ``f``."""
    found = row_problems(f)
    if found is None:
        raise PackratError(f"{f} has no rows after its header")
    if found:
        (line, what), more = found[0], len(found) - 1
        raise PackratError(f"{f} line {line}: {what}" + (f" (and {more} more)" if more else ""))


def read(path: str | os.PathLike) -> pd.DataFrame:
    """One PackRat folder as rows of cells.csv, sorted by the cell keys; a cell repeated in a
    file keeps its last row. A file without rows or with an impossible value is an error."""
    lat_path, thr_path = source_files(path)
    for f in (lat_path, thr_path):  # the config check names every one; here the first
        _check_rows(f)
    lat = _read(lat_path, list(LATENCY_COLUMNS))
    thr = _read(thr_path, ["throughput"])
    on = [k for k in PACKRAT_KEYS if k in lat.columns and k in thr.columns]
    lat = lat.drop_duplicates(on, keep="last")
    thr = thr.drop_duplicates(on, keep="last")
    m = lat.merge(thr, on=on, how="outer", suffixes=("", "_thr"))
    rows = []
    for r in m.to_dict("records"):
        model, runtype, opt = parse_benchmark(r["benchmark"])
        lines = [
            f"{f}:{int(r[col])}"
            for f, col in ((lat_path, "_line"), (thr_path, "_line_thr"))
            if pd.notna(r.get(col))
        ]
        flops = r.get("flops")
        row = dict.fromkeys(COLUMNS)
        row.update(
            model=model,
            opt=opt,
            placement=placement(r["topology"], runtype),
            threads=int(r["intraop_threads"]),
            batch_size=int(r["batch_size"]),
            status="ok",
            throughput_ips=r.get("throughput"),
            throughput_total_ips=r.get("throughput"),
            hw_gflop_per_s=flops if pd.notna(flops) and float(flops) > 0 else None,
            interop_threads=r.get("interop_threads"),
            packrat_benchmark=r["benchmark"],
            packrat_topology=r["topology"],
            pinning=r.get("pinning"),
            # PackRat's allocator is the axis value, so imported and measured cells line up;
            # files without the column ran with glibc's
            allocator=r["allocator"] if pd.notna(r.get("allocator")) else DEFAULTS["allocator"],
            instance_id=r.get("instance_id"),
            source=SOURCE,
            source_file="; ".join(lines),
        )
        for col, stat in LATENCY_COLUMNS.items():
            row[f"latency_{stat}_ms"] = r.get(col)
        rows.append(row)
    out = pd.DataFrame(rows, columns=COLUMNS)
    dup = out.duplicated(list(KEYS), keep=False)
    if dup.any():
        first = out[dup].iloc[0]
        raise PackratError(
            f"{path}: several PackRat rows map to the cell "
            f"{'/'.join(str(first[k]) for k in KEYS)} (e.g. differing pinning or "
            "instance_id); import them into separate results folders"
        )
    numeric = [c for c in COLUMNS if c.endswith(("_ms", "_ips", "_per_s")) or c == "n"]
    out = out.astype({"threads": int, "batch_size": int, **dict.fromkeys(numeric, float)})
    return out.sort_values(list(KEYS), kind="stable").reset_index(drop=True)


def cells_table(paths: Iterable[str | os.PathLike]) -> pd.DataFrame:
    """The cells of every source; a cell in two sources is an error (no silent overwrite)."""
    frames = [read(p) for p in paths]
    if not frames:
        raise PackratError("PackRat import: no source folder given")
    cells = pd.concat(frames, ignore_index=True)
    dup = cells.duplicated(list(KEYS), keep=False)
    if dup.any():
        files = sorted({f.split(":")[0] for f in cells[dup]["source_file"]})
        raise PackratError(
            f"PackRat import: {int(dup.sum())} rows are the same cell in several sources "
            f"({', '.join(files)}); import them into separate results folders"
        )
    return cells.sort_values(list(KEYS), kind="stable").reset_index(drop=True)


def tables(paths: Iterable[str | os.PathLike]) -> dict[str, pd.DataFrame]:
    """``cells``, ``samples`` (empty: PackRat kept no per-iteration latencies), ``skipped``."""
    return {
        "cells": cells_table(paths),
        "samples": pd.DataFrame(columns=[*KEYS, "iteration", "latency_ms"]),
        "skipped": pd.DataFrame(columns=[*KEYS, "reason"]),
    }


def keys(paths: Iterable[str | os.PathLike]) -> list[dict]:
    """The imported cells' keys (the workflow plans the report's figures from them)."""
    return cells_table(paths)[list(KEYS)].to_dict("records")


def input_files(paths: Iterable[str | os.PathLike]) -> list[str]:
    return [str(f) for p in paths for f in source_files(p)]


def machine_facts(paths: Sequence[str], description: str | None = None) -> dict:
    """``machine.json`` of an import: what is known is where the results come from."""
    return {
        "summary": {"cpu_model": description or "not recorded (imported from PackRat)"},
        "topology": None,
        "host": {},
        "versions": {},
        "kernel": {},
        "source": SOURCE,
        "imported_from": [str(p) for p in paths],
        "description": description,
    }


# -- PackRat's multi-instance runs: the interference profile -------------------------------------
#
# In ``<experiment>_resnet_latency.csv``, ``instance_id`` 1..k of a group of ``instances`` = k ran
# together (1-thread processes on one socket's cores), ``instance_id`` 0 is the same instance solo.
# A group's latency is its slowest instance's, as a plan's is.

INTERFERENCE_SUFFIX = "resnet_latency.csv"
GROUP_KEYS = ("benchmark", "allocator", "topology", "pinning", "intraop_threads", "batch_size")


def interference_files(path: str | os.PathLike) -> list[Path]:
    """The CSVs ending in ``resnet_latency.csv`` with ``instances`` and ``instance_id`` columns."""
    p = Path(path)
    files = [p] if p.suffix == ".csv" else sorted(p.glob(f"*{INTERFERENCE_SUFFIX}"))
    out = []
    for f in files:
        with open(f, newline="", encoding="utf-8", errors="replace") as fh:
            header = next(csv.reader(fh), [])
        if {"instances", "instance_id"} <= set(header):
            out.append(f)
    if not out:
        raise PackratError(
            f"PackRat import: no multi-instance latency CSV (columns instances, instance_id) in {p}"
        )
    return out


def interference_table(path: str | os.PathLike) -> pd.DataFrame:
    """PackRat's multi-instance runs of a folder as ``tables/interference.csv`` rows (see
    above), sorted like the measured table. A group whose instances 1..k are not all there, or
    without its solo run (instance 0), is an error naming the file."""
    from numa_effects.tables import interference

    rows = []
    for f in interference_files(path):
        _check_rows(f)
        df = pd.read_csv(f)
        df["_line"] = df.index + 2
        for col in GROUP_KEYS:
            if col not in df.columns:
                df[col] = "" if col in ("allocator", "topology", "pinning") else 1
        keys = [*GROUP_KEYS, "instances"]
        for key, g in df.groupby(keys, sort=True, dropna=False):
            got = dict(zip(keys, key, strict=True))
            k = int(got["instances"])
            solo = g[g["instance_id"] == 0]
            members = g[g["instance_id"] > 0].drop_duplicates("instance_id", keep="last")
            if len(solo) < 1 or sorted(members["instance_id"]) != list(range(1, k + 1)):
                raise PackratError(
                    f"{f}: the group of {k} instances ({got['benchmark']}, "
                    f"{got['allocator'] or 'default'}) has instance ids "
                    f"{sorted(g['instance_id'].tolist())}; want 0 (solo) and 1..{k}"
                )
            model, _, opt = parse_benchmark(got["benchmark"])
            t = int(got["intraop_threads"])
            alone = float(solo["latency(avg)"].iloc[-1])
            lat = members["latency(avg)"].astype(float)
            lines = ",".join(str(int(v)) for v in g["_line"])
            row = dict.fromkeys(interference.COLUMNS)
            row.update(
                model=model,
                opt=opt,
                threads=t,
                batch_size=int(got["batch_size"]),
                k=k,
                node="0",
                k_node=k,
                busy_cores=k * t,
                x=(k - 1) * t,
                alone_ms=alone,
                latency_ms=float(lat.max()),
                instance_mean_ms=float(lat.mean()),
                slowdown=float(lat.max()) / alone,
                ci_method="none (PackRat kept no samples)",
                replicates=1,
                status="ok",
                allocator=got["allocator"] or "default",
                source=SOURCE,
                source_file=f"{f}:{lines}",
            )
            rows.append(row)
    out = pd.DataFrame(rows, columns=[*interference.COLUMNS, "instance_mean_ms"])
    return out.sort_values(["model", "opt", "allocator", "threads", "k"]).reset_index(drop=True)
