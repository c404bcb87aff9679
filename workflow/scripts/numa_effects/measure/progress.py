"""The run's progress in one line, with an ETA: ``start`` before the first job (the measuring
jobs' estimates), ``done`` by every measuring job as it ends (``measure.job``):

    progress: 12/30 measuring jobs done in 4.1 min; about 6.2 min left (estimated 10.3 min)

The ETA scales the remaining jobs' estimate by how long the done ones took against theirs. Each
finished job appends one line to ``results/logs/progress.jsonl`` (appends of one short line are
atomic, so jobs running at once on a cluster each count once)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

START = "logs/progress.json"
DONE = "logs/progress.jsonl"


def start(results: str | os.PathLike, estimates: list[float]) -> None:
    """Before the first job: the measuring jobs' estimated seconds, in the order they run."""
    path = Path(results) / START
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"started": time.time(), "estimates": [float(s) for s in estimates]}
    path.write_text(json.dumps(data))
    (Path(results) / DONE).unlink(missing_ok=True)


def line(started: float, estimates: list[float], done: int, now: float) -> str:
    """The progress line: ``done`` of the run's jobs finished ``now``."""
    n = max(len(estimates), done)  # a two-stage checkpoint adds jobs the start did not know
    elapsed = now - started
    expected_done = sum(estimates[:done])
    rest = sum(estimates[done:])
    speed = elapsed / expected_done if expected_done > 0 else 1.0
    left = max(0.0, rest * speed)
    return (
        f"progress: {done}/{n} measuring jobs done in {elapsed / 60:.1f} min; about "
        f"{left / 60:.1f} min left (estimated {sum(estimates) / 60:.1f} min)"
    )


def done(out: str | os.PathLike, stream=None) -> str | None:
    """A measuring job has written ``out``: count it and print the line (None outside a run)."""
    # the results folder of the run started above ``out``
    results = next((p for p in Path(out).resolve().parents if (p / START).is_file()), None)
    if results is None:
        return None
    try:
        data = json.loads((results / START).read_text())
        with open(results / DONE, "a") as fh:
            fh.write(json.dumps({"t": time.time(), "out": str(out)}) + "\n")
        count = len((results / DONE).read_text().splitlines())
    except (OSError, ValueError):
        return None
    text = line(data["started"], data["estimates"], count, time.time())
    print(text, file=stream or sys.stderr, flush=True)
    return text
