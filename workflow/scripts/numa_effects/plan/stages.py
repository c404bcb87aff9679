"""Replicates where the noise is (config key ``two_stage``): the plan's side of Stein's two-stage
rule. ``replicates`` processes of every cell are the first stage; a checkpoint job
(``tables.stages.decide``) writes how many replicates each cell takes in all
(``paths.REPLICATES``, named by the grid manifest's digest), and the plan reads it back
(``read``) to ask for the further replicates, which run in ``grid.job_order``'s order. The
statistics are in ``stats.stein_replicates``. Pure except ``read``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from numa_effects.plan import grid as grid_mod
from numa_effects.plan import manifest as manifest_mod
from numa_effects.plan import paths

# Why a cell stopped where it did (``replicates_reason`` in cells.csv, the report's cells table)
FIRST_STAGE = "first stage"  # the first stage's spread already meets the target
TARGET = "target"  # Stein's N for the target, between the first stage and the cap
CAP = "cap"  # the target needed more than the cap allows
GROUP = "group"  # a cell it is compared with needed more, and their comparison pairs rounds
UNMEASURED = "unmeasured"  # no first-stage replicate measured (failed, contended): none added
REASONS = {
    FIRST_STAGE: "the first stage's spread already met the target",
    TARGET: "as many as the target needs (Stein's rule on the first stage's variance)",
    CAP: "the target needed more than two_stage.cap allows",
    GROUP: (
        "a cell it is compared with needed more, and the first stage showed that their"
        " comparison pays for whole rounds (adjacent processes share noise)"
    ),
    UNMEASURED: "no first-stage replicate was measured, so none was added",
}


def settings(config: dict) -> dict | None:
    """The resolved ``two_stage`` key, or None when every cell runs ``replicates`` processes:
    when it is off, and when ``replicates`` is 1 (one process per cell asked for: a first
    stage of one has no spread of its own). The cap is never below ``replicates``."""
    ts = config.get("two_stage") or {}
    first = grid_mod.replicates(config)
    if not ts.get("enabled") or first < 2:
        return None
    return {
        "first_stage": first,
        "target_pct": float(ts.get("target_pct", 5)),
        "cap": max(first, int(ts.get("cap", 4))),
    }


def adds_replicates(settings: dict | None) -> bool:
    """The checkpoint can add replicates: a cap above the first stage (a budget that drops the
    second stage sets the cap to it)."""
    return bool(settings) and settings["cap"] > settings["first_stage"]


def path(results: str, manifest_path: str) -> str:
    """The counts file of a grid: named after its manifest (``grid/manifest-<digest>.json``),
    so a changed grid or ``two_stage`` setting decides again."""
    digest = Path(manifest_path).stem.rsplit("-", 1)[-1]
    return f"{results}/" + paths.REPLICATES.format(digest=digest)


def load(file: str | os.PathLike) -> list[dict]:
    """The cells' records of a counts file written by ``write`` (``tables.stages.decide``)."""
    return json.loads(Path(file).read_text())["cells"]


def read(file: str | os.PathLike) -> dict:
    """CellKey -> replicates in all, from a counts file."""
    return {grid_mod.CellKey.from_record(c): int(c["replicates"]) for c in load(file)}


def write(output: str | os.PathLike, data: dict) -> None:
    """Write a counts file and remove the folder's older ones (as the manifest is written)."""
    manifest_mod.write(output, data)
