"""A probe of this machine before planning (docs/deploy.md, "Time as an input"): one pinned
process imports torch, builds the grid's smallest model and times a few eager steps at batch 1
on one and on all threads; ``plan.cost.scale_of`` makes the estimate's factors of it. Its timings
are kept in ``results/logs/calibration.json`` with the load average, and reused while the host,
CPU, torch and this code are the same (``cost.calibration_key``)."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from numa_effects.plan import cost

FILE = cost.CALIBRATION
STEPS = 4  # timed eager steps per thread count, after one untimed
TIMEOUT_S = 120.0


def command(model: str, image_size: int, cpus: list[int]) -> list[str]:
    """The probe's process, pinned to ``cpus`` (numactl where there is one) at their count and
    at one thread."""
    threads = sorted({1, len(cpus)})
    probe = [sys.executable, "-m", __name__, model, str(image_size), *map(str, threads)]
    if shutil.which("numactl"):
        return ["numactl", f"--physcpubind={','.join(map(str, cpus))}", "--localalloc", *probe]
    return probe


def probe(model: str, image_size: int, cpus: list[int]) -> dict:
    """Run the probe: its process's start (spawn to torch imported), build and step seconds."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    t0, cmd = time.time(), command(model, image_size, cpus)
    run = {"capture_output": True, "text": True, "timeout": TIMEOUT_S, "env": env, "check": True}
    got = json.loads(subprocess.run(cmd, **run).stdout.strip().splitlines()[-1])
    start = got.pop("imported") - t0
    load = os.getloadavg()[0]
    got |= {"load_1m": load, "busy": load > len(cpus)}
    return {"model": model, "image_size": image_size, "start_s": start, **got}


def cached(results: str | os.PathLike, cpu_model: str) -> dict | None:
    """The kept timings where they hold for this machine and code, else None."""
    try:
        data = json.loads((Path(results) / FILE).read_text())
    except (OSError, ValueError):
        return None
    return data if data.get("key") == cost.calibration_key(cpu_model) else None


def scale(results, model: str, image_size: int, cpus: list[int], caps, dry_run) -> cost.Scale:
    """This machine's ``cost.Scale``: of the kept timings, else (not a dry run) of the probe's,
    kept with it; uncalibrated where neither is."""
    data = timings(results, model, image_size, cpus, caps, dry_run)
    return cost.scale_of(data, caps) if data else cost.UNCALIBRATED


def timings(results, model: str, image_size: int, cpus: list[int], caps, dry_run) -> dict | None:
    """The kept timings, else (not a dry run) the probe's, kept; None where neither is. Timings
    taken on a busy machine (a load above the CPUs probed) serve until a run probes again."""
    have = cached(results, caps.model_name)
    if dry_run or (have is not None and not have["busy"]):
        return have
    try:
        raw = probe(model, image_size, cpus)
    except (OSError, ValueError, KeyError, IndexError, subprocess.SubprocessError) as exc:
        print(f"numa-effects: calibration probe failed ({exc}); uncalibrated", file=sys.stderr)
        return None
    factors = dataclasses.asdict(cost.scale_of(raw, caps))  # by the constants of now: a record
    data = {"key": cost.calibration_key(caps.model_name), **raw, "factors": factors}
    path = Path(results) / FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1))
    return data


def _main(model: str, image_size: str, *threads: str) -> None:
    """Inside the pinned process (``python -m numa_effects.measure.calibrate MODEL SIZE
    THREADS...``): one JSON line of what it measured."""
    import torch
    import torchvision

    imported = time.time()
    t = time.perf_counter()
    net = getattr(torchvision.models, model)(weights=None).eval()
    build_s = time.perf_counter() - t
    x = torch.randn(1, 3, int(image_size), int(image_size))
    steps = {}
    with torch.inference_mode():
        for n in threads:
            torch.set_num_threads(int(n))
            net(x)
            steps[n] = []
            for _ in range(STEPS):
                t = time.perf_counter()
                net(x)
                steps[n].append(time.perf_counter() - t)
    print(json.dumps({"imported": imported, "build_s": build_s, "steps_s": steps}))


if __name__ == "__main__":
    _main(*sys.argv[1:])
