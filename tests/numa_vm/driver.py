"""Runs inside the 2-node guest (tests/numa_vm/run-in-guest): the project's own front door
(``numa_effects.measure.job.run``: plan re-check, numactl, the pinned cell driven by the
runner, in-cell verification)
for every placement at t=1 and t=2 against the topology read inside the guest, plus negative
cells whose binding is deliberately wrong. Writes, below --out:

    machine.json                 machine facts of the guest (topology, numactl --hardware)
    cells/<label>/t<t>.json      one cell result per cell (as the pipeline writes them)
    logs/<label>/t<t>.log        the cell's log (its command line first)
    fixtures/                    with --capture-fixtures: sysfs, lscpu, /proc captures
    summary.json                 what ran, what was skipped and why, wall times

Usage (inside the guest): python tests/numa_vm/driver.py --out DIR [--jobs N] [--threads 1,2,4]
[--only remote/t1,...]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "workflow" / "scripts"))

from numa_effects.measure import job, machine, record, runner  # noqa: E402
from numa_effects.plan import placement, topology  # noqa: E402
from numa_effects.plan import spec as spec_mod  # noqa: E402

PLACEMENTS = ("sequential", "interleave", "remote", "mem-interleave")
THREADS = (1, 2)
SETTINGS = {
    "warmup": 1,
    "min_iterations": 1,
    "max_iterations": 2,
    "max_seconds_per_cell": 5,
    "seed": 0,
    # timings in the guest mean nothing: no iteration is excluded for contention (TCG, and the
    # pipeline's cells beside), so every cell has its numbers and is judged on its placement
    "exclude_foreign_pct": 100,
}
CELL = {"model": "resnet18", "opt": "none", "batch_size": 1, "image_size": 32}
TIMEOUT_S = 1500  # per cell; a cold first import of torch in the guest takes minutes


def spec_for(plan: placement.Plan) -> spec_mod.Spec:
    cell = {**CELL, "placement": plan.label, "threads": plan.threads, "use_smt": False}
    return spec_mod.one(spec_mod.MODEL, cell, plan, SETTINGS)


def run_cell(out: Path, name: str, spec: spec_mod.Spec) -> dict:
    t0 = time.monotonic()
    result = job.run(spec, out / "cells" / f"{name}.json", out / "logs" / f"{name}.log", TIMEOUT_S)
    cause = result.failure.cause if result.failure else ""
    print(f"numa_vm: {name}: {result.status} {cause} ({time.monotonic() - t0:.0f} s)", flush=True)
    return {"name": name, "status": result.status, "wall_s": time.monotonic() - t0}


# -- negative cells ----------------------------------------------------------------------------
WRONG_BINDING = "negative/wrong-binding"
MIGRATED = "negative/pages-migrated"
_original_command = runner.command


def _command(plan, spec, *args, **kwargs):
    """runner.command, except for the wrong-binding cell (``spec``: its spec path): there
    numactl is given the CPUs of the last node and memory on node 0, whatever the plan says."""
    if WRONG_BINDING in str(spec):
        topo = topology.current()
        last = topo.nodes[-1]
        plan = placement.Plan(
            plan.placement,
            plan.threads,
            topo.node_cpus(last)[: plan.threads],
            (last,),
            "bind",
            (topo.nodes[0],),
        )
    return _original_command(plan, spec, *args, **kwargs)


def _migrate_while_running(marker: str, src: int, dst: int, stop: threading.Event) -> list[str]:
    """Move the pages of the cell process whose command line contains ``marker`` from node
    ``src`` to ``dst`` with migratepages(8), again and again until ``stop``: the memory policy
    stays what the plan says, only the pages end up elsewhere."""
    log = []
    while not stop.is_set():
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                cmdline = Path("/proc", pid, "cmdline").read_bytes().replace(b"\0", b" ")
            except OSError:
                continue
            if marker.encode() in cmdline and b"numa_effects.measure.cell" in cmdline:
                cmdline_s = cmdline.decode(errors="replace")
                if not cmdline_s.startswith(sys.executable):
                    continue  # numactl itself, before it execs
                r = subprocess.run(
                    ["migratepages", pid, str(src), str(dst)], capture_output=True, text=True
                )
                log.append(f"migratepages {pid} {src} {dst}: rc={r.returncode}")
        stop.wait(1.0)
    return log


def capture_fixtures(out: Path) -> None:
    fx = out / "fixtures"
    fx.mkdir(parents=True, exist_ok=True)
    subprocess.run([str(REPO / "tests/fixtures/topology/capture"), str(fx / "topology")])
    capture = REPO / "tests/fixtures/proc/capture.py"
    nodes = topology.current().nodes
    if len(nodes) >= 2:
        for name, policy in (
            ("guest-membind0", f"--membind={nodes[0]}"),
            ("guest-membind1", f"--membind={nodes[1]}"),
            ("guest-interleave01", f"--interleave={nodes[0]},{nodes[1]}"),
        ):
            subprocess.run(
                ["numactl", policy, sys.executable, str(capture), str(fx / name)], check=False
            )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument(
        "--jobs",
        type=int,
        default=2,
        help="cells run at once (timings are moot in the guest); more than the host's cores "
        "only adds TCG contention",
    )
    ap.add_argument("--no-negative", action="store_true", help="skip the wrong-binding cell")
    ap.add_argument("--only", help="comma-separated cell names to run (e.g. remote/t1)")
    ap.add_argument(
        "--threads",
        default=",".join(map(str, THREADS)),
        help="comma-separated thread counts of the cells (default %(default)s; e.g. 1,2,4 in "
        "the 4-node guest, for interleave across 4 nodes)",
    )
    ap.add_argument(
        "--capture-fixtures",
        action="store_true",
        help="also capture sysfs/lscpu/numa_maps fixtures into OUT/fixtures (a few minutes)",
    )
    ap.add_argument(
        "--pages-negative",
        action="store_true",
        help="also run a cell whose pages migratepages(8) moves off the planned node",
    )
    args = ap.parse_args(argv)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()

    topo = topology.current()
    record.write(out / "machine.json", machine.facts(topo))
    if args.capture_fixtures:
        capture_fixtures(out)

    jobs: list[tuple[str, dict]] = []
    if not args.no_negative and len(topo.nodes) >= 2:
        # First, so that it runs on node 1's CPUs while the others queue on node 0's.
        remote = placement.plan(topo, 1, "remote")
        jobs.append((WRONG_BINDING, spec_for(remote)))
    skipped = {}
    plans = {}
    for place in PLACEMENTS:
        for t in (int(x) for x in args.threads.split(",")):
            p = placement.plan(topo, t, place)
            name = f"{place}/t{t}"
            if isinstance(p, placement.NotApplicable):
                skipped[name] = p.reason
                continue
            plans[name] = p.to_dict()
            jobs.append((name, spec_for(p)))

    if args.only:
        wanted = set(args.only.split(","))
        jobs = [(name, spec) for name, spec in jobs if name in wanted]
    runner.command = _command
    results = []
    # Processes, not threads: the runner supervises its child with signal handlers, which only
    # a main thread may install. Forked workers inherit the patched runner.command.
    ctx = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=args.jobs, mp_context=ctx) as pool:
        futures = [pool.submit(run_cell, out, name, spec) for name, spec in jobs]
        results = [f.result() for f in futures]

    migrate_log: list[str] = []
    if args.pages_negative and len(topo.nodes) >= 2:
        # Pages moved away behind the cell's back: policy and CPUs right, pages wrong.
        remote = placement.plan(topo, 1, "remote")
        stop = threading.Event()
        box: dict = {}
        mover = threading.Thread(
            target=lambda: box.update(
                log=_migrate_while_running(MIGRATED, topo.nodes[1], topo.nodes[0], stop)
            )
        )
        mover.start()
        try:
            results.append(run_cell(out, MIGRATED, spec_for(remote)))
        finally:
            stop.set()
            mover.join()
        migrate_log = box.get("log", [])

    summary = {
        "topology": topo.summary(),
        "plans": plans,
        "skipped": skipped,
        "results": results,
        "migratepages": migrate_log,
        "wall_s": time.monotonic() - started,
    }
    record.write(out / "summary.json", summary)
    print(f"numa_vm: done in {summary['wall_s']:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
