"""The result model of a measurement (one JSON file per replicate of a cell; the same record per
replicate of a packing configuration and for the peak: ``runner.measure``) and atomic writes.

Top-level keys (``SCHEMA_VERSION`` 1; ``instances`` and the status ``contended`` came with the
one measuring stack, older files simply lack them):

- ``status``: "ok"; "contended": measured, but no timed iteration was clean after the retries,
  so ``stats`` and ``throughput`` are null (the iterations stay in ``measurement``); "failed"
- ``cell``: model, opt, placement, threads, batch_size, image_size, use_smt
- ``replicate``: which independent process of the cell this is (1-based; ``grid.job_order``)
- ``plan``: the planned binding (``placement.Plan.to_dict``)
- ``settings``: the measurement settings the cell was run with
- ``measurement``: warm-up and timed latencies (seconds, raw; per timed iteration its
  ``foreign_pct`` and ``excluded``), stop reason, elapsed, build and first-call times
- ``contention``: the machine's load before, the window's and the replicate's verdict
  (``contended``, ``contended_reason``, ``excluded_iterations``, ``retries``)
- ``stats``: summary statistics (``stats.summarize``); ``throughput``: images/s
- ``binding``: what the process found in force (/proc/self/status, get_mempolicy(2), torch
  threads) and ``binding.verification``: the in-cell checks of ``verify`` (CPUs, memory policy,
  the CPU each thread last ran on, anonymous pages per NUMA node) with ``ok`` and ``problems``
- ``provenance``: command line, versions, env, host, timestamps, peak RSS, warnings
- ``failure``: null, or cause, returncode, signal, stderr_tail for a failed cell
- ``code``: the digest of the measuring code that made it (``plan.code``; the spec's ``code``)
- ``instances``: one entry per pinned instance process (1 for a cell): threads, batch, plan,
  command line, its own latencies and statistics, binding and verification; for more than one
  instance the top-level ``plan`` is null and ``binding`` holds the combined verification
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
