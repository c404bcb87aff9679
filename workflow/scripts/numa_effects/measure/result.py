"""The cell result model (one JSON file per replicate of a cell) and atomic writes.

Top-level keys of a cell JSON (``SCHEMA_VERSION`` 1):

- ``status``: "ok" or "failed"
- ``cell``: model, opt, placement, threads, batch_size, image_size, use_smt
- ``replicate``: which independent process of the cell this is (1-based; ``grid.job_order``)
- ``plan``: the planned binding (``placement.Plan.to_dict``)
- ``settings``: the measurement settings the cell was run with
- ``measurement``: warm-up and timed latencies (seconds, raw), stop reason, elapsed
- ``stats``: summary statistics (``stats.summarize``); ``throughput``: images/s
- ``binding``: what the process found in force (/proc/self/status, get_mempolicy(2), torch
  threads) and ``binding.verification``: the in-cell checks of ``verify`` (CPUs, memory policy,
  the CPU each thread last ran on, anonymous pages per NUMA node) with ``ok`` and ``problems``
- ``provenance``: command line, versions, env, host, timestamps, peak RSS, warnings
- ``failure``: null, or cause, returncode, signal, stderr_tail for a failed cell
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

SCHEMA_VERSION = 1


def write_json_atomic(path: str | os.PathLike, data: dict) -> None:
    """Write JSON to a temp file in the same folder, fsync, then rename over ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(data, fh, indent=1, sort_keys=False, allow_nan=True)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        # mkstemp creates 0600; give the file the mode a plain open() would (shared folders).
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read(path: str | os.PathLike) -> dict:
    with open(path) as fh:
        data = json.load(fh)
    if data.get("schema_version") != SCHEMA_VERSION:
        raise ValueError(f"{path}: unsupported schema_version {data.get('schema_version')!r}")
    return data


def failed(spec: dict, cause: str, message: str, **details) -> dict:
    """A result for a cell that did not produce a measurement."""
    return {
        "schema_version": SCHEMA_VERSION,
        "status": "failed",
        "cell": spec["cell"],
        "replicate": int(spec.get("replicate", 1)),
        "plan": spec.get("plan"),
        "settings": spec.get("settings", {}),
        "failure": {"cause": cause, "message": message, **details},
    }


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
