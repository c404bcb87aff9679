"""The grid manifest: which cells (and replicates) the config asks for, and which are skipped,
in a file whose name carries a digest of its content (``grid/manifest-<digest>.json``). The
aggregation rules take it as an input: a changed grid is a missing file, so Snakemake re-runs
the aggregation from file existence alone, without ``.snakemake/`` metadata (which a copied
results folder lacks). Writing a manifest removes the older ones, so returning to an earlier
grid re-runs the aggregation too.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from numa_effects.plan import paths
from numa_effects.plan.grid import Grid


def content(grid: Grid, replicates: int, two_stage: dict | None = None) -> dict:
    """The grid as plain data: cell keys, replicates, the ``two_stage`` settings when on,
    skipped cells with their reasons, and the cells reported from another's measurement."""
    extra = {"two_stage": two_stage} if two_stage else {}
    if grid.same:
        extra["same"] = grid.same_binding_rows()
    return {
        **extra,
        "replicates": int(replicates),
        "cells": [key.as_dict() for key in sorted(grid.cells)],
        "skipped": [{**key.as_dict(), "reason": why} for key, why in sorted(grid.skipped.items())],
    }


def digest(data: dict) -> str:
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def path(results: str, data: dict) -> str:
    return f"{results}/" + paths.MANIFEST.format(digest=digest(data))


def write(output: str | os.PathLike, data: dict) -> list[Path]:
    """Write the manifest (temp file, then rename) and remove (and return) the folder's other
    files of its kind (the same name before the digest: ``manifest-*``, ``replicates-*``)."""
    output = Path(output)
    prefix = output.name.rsplit("-", 1)[0] + "-"
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = output.with_name(f".{output.name}.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, output)
    stale = [p for p in output.parent.glob(f"{prefix}*.json") if p != output]
    for p in stale:
        p.unlink(missing_ok=True)
    return stale
