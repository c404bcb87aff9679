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

Writes OUT/group.json (topology, budget, configuration, plans, the group record, wall time) and
the instances' logs and specs in OUT/logs. Exit status 0 when group.json was written (the host's
tests judge it), 1 when the configuration does not fit.

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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args(argv)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    topo = topology.current()
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
