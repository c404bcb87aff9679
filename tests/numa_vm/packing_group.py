"""Runs inside the 2-node guest (tests/numa_vm/guest-e2e, step ``packing``): ONE packing group
through the packing runner's own code, ``group.plans_for`` (``placement.pack``) and
``group.measure_group`` (the one measuring stack, ``runner.measure``: k concurrent
numactl-pinned ``numa_effects.measure.cell`` processes, rounds, then ``verify.run`` in every
instance). No fat instance: each instance costs
the guest a torch import of minutes.

The configuration comes from the topology read in the guest (``configuration``): budget = every
core; one instance as wide as node 0, and 1-thread instances on the remaining cores, the wide one
second so that pack's largest-first order is exercised. On the 2 x 2 guest: [(1, 1), (2, 1),
(1, 1)] -> the 2-thread instance alone on one node, the 1-thread ones on the other node's CPUs.

Then the interference check (issue 22): ONE interference profile job through the pipeline's own
``group.run_interference`` -- one instance alone, then k identical instances side by side placed
as ``placement.pack`` places them (``interference_configuration``: k = the number of nodes, at
least 2, each of budget / k threads; on the 2 x 2 guest two 2-thread instances, one per node),
one replicate. Timings in the guest mean nothing: the host checks placement and verification, and
that the profile's table gives each node its own row (``tables.interference``).

Writes OUT/group.json (topology, budget, configuration, plans, the group record, wall time),
OUT/interference.json (the profile job's result, with the topology and wall time) and the
instances' logs and specs in OUT/logs and OUT/interference-logs. Exit status 0 when both were
written (the host's tests judge them), 1 when a configuration does not fit.
``--only interference`` skips the packing group (a dry check of the interference step on this
host's topology).

Usage (inside the guest): python tests/numa_vm/packing_group.py --out DIR
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "workflow" / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import driver  # noqa: E402

from numa_effects.measure import group  # noqa: E402
from numa_effects.measure import result as cellresult  # noqa: E402
from numa_effects.plan import topology  # noqa: E402

# As driver.py's cells: timings in the guest mean nothing, a round or two is enough.
SETTINGS = {
    **driver.SETTINGS,
    "contended_retries": 0,  # contended it will be (TCG, beside the pipeline's cells)
}
CELL_COMMON = {k: driver.CELL[k] for k in ("model", "opt", "image_size")} | {"use_smt": False}
TIMEOUT_S = 1800  # the whole group: k cold torch imports at once in the guest take minutes


def configuration(topo: topology.Topology) -> tuple[int, list[tuple[int, int]]]:
    """(budget, [(threads, images), ...]) for ``topo``: see the module docstring."""
    budget = sum(len(topo.node_cpus(n)) for n in topo.nodes)
    wide = len(topo.node_cpus(topo.nodes[0]))
    conf = [(1, 1)] * (budget - wide)
    conf.insert(min(1, len(conf)), (wide, 1))
    return budget, conf


def interference_configuration(topo: topology.Topology) -> tuple[int, int, int]:
    """(budget, threads, k) of the interference check on ``topo``: every core, k = the number
    of nodes (at least 2) instances of budget // k threads."""
    budget = sum(len(topo.node_cpus(n)) for n in topo.nodes)
    k = max(2, len(topo.nodes))
    return budget, budget // k, k


def interference(out: Path, topo: topology.Topology) -> int:
    """The interference check (see the module docstring): OUT/interference.json."""
    t0 = time.monotonic()
    budget, threads, k = interference_configuration(topo)
    job = {
        **CELL_COMMON,
        "settings": SETTINGS,
        "replicates": 1,
        "budget": budget,
        "threads": threads,
        "batch": driver.CELL["batch_size"],
        "instances": [k],
        "placements": {},
    }
    print(f"numa_vm: interference: {k} x {threads} threads on {budget} cores", flush=True)
    result = group.run_interference(
        job, out / "interference.json", out / "interference-logs", TIMEOUT_S
    )
    result["topology"] = topo.to_dict()
    result["wall_s"] = time.monotonic() - t0
    cellresult.write_json_atomic(out / "interference.json", result)
    failure = result.get("failure") or {}
    print(
        f"numa_vm: interference: {result['status']} {failure.get('cause') or ''} "
        f"{failure.get('message') or ''} ({result['wall_s']:.0f} s)",
        flush=True,
    )
    return 0 if result["status"] == "ok" or failure.get("cause") != "plan-mismatch" else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--only", choices=["interference"], help="skip the packing group")
    args = ap.parse_args(argv)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    topo = topology.current()
    if args.only == "interference":
        return interference(out, topo)
    t0 = time.monotonic()
    budget, conf = configuration(topo)
    record = {
        "topology": topo.to_dict(),
        "summary": topo.summary(),
        "budget": budget,
        "configuration": [list(c) for c in conf],
        "settings": SETTINGS,
        "cell_common": CELL_COMMON,
    }
    got = group.plans_for(topo, budget, conf, use_smt=False)
    if isinstance(got, str):
        record["no_plan"] = got
        cellresult.write_json_atomic(out / "group.json", record)
        print(f"numa_vm: packing: {conf} does not fit: {got}", flush=True)
        return 1
    record["plans"] = [p.to_dict() for p, _ in got]
    for p, b in got:
        print(f"numa_vm: packing: t={p.threads} b={b}: numactl {' '.join(p.numactl_args())}")
    measured = group.measure_group(got, CELL_COMMON, SETTINGS, out / "logs", "plan", TIMEOUT_S)
    record["group"] = measured
    record["wall_s"] = time.monotonic() - t0
    cellresult.write_json_atomic(out / "group.json", record)
    failure = measured.get("failure") or {}
    print(
        f"numa_vm: packing: {measured['status']} {failure.get('cause') or ''} "
        f"{failure.get('message') or ''} ({record['wall_s']:.0f} s)",
        flush=True,
    )
    return interference(out, topo)


if __name__ == "__main__":
    sys.exit(main())
