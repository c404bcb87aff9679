"""The run's progress in one line, with an ETA: ``start`` before the first job (each measuring
job's estimate, by the record it writes), ``done`` by every measuring job as it ends
(``measure.job``):

    progress: 12/30 measuring jobs done in 4.1 min; about 6.2 min left (estimated 10.3 min)

The ETA scales the estimate of the jobs not yet done by the square root of how long the done ones
took against theirs: part of a slowness is the machine's, part the done jobs' own kind (a compile,
a noisy window), and the deploy job stops at its allowance (tests/test_progress.py has a real run
where the full ratio was 30 % over). Snakemake runs the jobs in an order of its own, so each done
job is matched to its own estimate by its record. Each finished job appends one line to
``results/logs/progress.jsonl`` (appends of one short line are atomic, so jobs running at once on a
cluster each count once)."""

from __future__ import annotations

import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

from numa_effects.plan.durations import minutes_text

START = "logs/progress.json"
DONE = "logs/progress.jsonl"


def _key(results: Path, out: str | os.PathLike) -> str:
    """A record's path within the results folder: the same from the run's and a job's side."""
    return os.path.relpath(Path(out).resolve(), results.resolve())


def start(results: str | os.PathLike, estimates: dict[str, float]) -> None:
    """Before the first job: the estimated seconds of each measuring job, by the record it
    writes (a path, as the job will name it)."""
    path = Path(results) / START
    path.parent.mkdir(parents=True, exist_ok=True)
    keyed = {_key(Path(results), out): float(s) for out, s in estimates.items()}
    path.write_text(json.dumps({"started": time.time(), "estimates": keyed}))
    (Path(results) / DONE).unlink(missing_ok=True)


def line(started: float, estimates: dict[str, float], finished: list[str], now: float) -> str:
    """The progress line at ``now``: the jobs whose records are ``finished`` are done. A job the
    start did not know (a replicate the two-stage checkpoint added) counts at the median
    estimate."""
    done = dict.fromkeys(finished)  # a record written twice counts once
    typical = statistics.median(estimates.values()) if estimates else 0.0
    expected_done = sum(estimates.get(k, typical) for k in done)
    rest = sum(s for k, s in estimates.items() if k not in done)
    n = len(estimates) + sum(k not in estimates for k in done)
    elapsed = now - started
    speed = math.sqrt(elapsed / expected_done) if expected_done > 0 and elapsed > 0 else 1.0
    return (
        f"progress: {len(done)}/{n} measuring jobs done in {minutes_text(elapsed)}; about "
        f"{minutes_text(rest * speed)} left (estimated {minutes_text(sum(estimates.values()))})"
    )


def done(out: str | os.PathLike, stream=None) -> str | None:
    """A measuring job has written ``out``: count it and print the line (None outside a run)."""
    # the results folder of the run started above ``out``
    results = next((p for p in Path(out).resolve().parents if (p / START).is_file()), None)
    if results is None:
        return None
    try:
        data = json.loads((results / START).read_text())
        estimates = dict(data["estimates"])
        with open(results / DONE, "a") as fh:
            fh.write(json.dumps({"t": time.time(), "out": _key(results, out)}) + "\n")
        finished = [json.loads(ln)["out"] for ln in (results / DONE).read_text().splitlines()]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    text = line(data["started"], estimates, finished, time.time())
    print(text, file=stream or sys.stderr, flush=True)
    return text


def allowance_s(allowance: dict) -> float:
    """The seconds the deploy job may take, at its start: the budget less the time the run has
    spent (its progress file's start) and what follows it (``plan.cost.deploy_allowance``); the
    planned allowance where no run started. Never below 0: the job still measures its
    ``rounds``."""
    try:
        started = json.loads((Path(allowance["results"]) / START).read_text())["started"]
    except (OSError, ValueError, KeyError, TypeError):
        return float(allowance["planned_s"])
    left = allowance["budget_s"] - (time.time() - float(started)) - allowance["after_s"]
    return max(0.0, left)
