"""Runs inside the 2-node guest (tests/numa_vm/guest-e2e, step ``interference``): the
interference check of issue 22 -- ONE interference profile job through the pipeline's own
front door (``job.run`` of an interference group spec: the one measuring stack, numactl-pinned
``numa_effects.measure.cell`` instances, rounds, ``verify.run`` in every instance): one instance
alone, then k identical instances side by side placed as ``placement.pack`` places them
(``interference_configuration``: k = the number of nodes, at least 2, each of budget / k threads;
on the 2 x 2 guest two 2-thread instances, one per node), one replicate. Timings in the guest mean
nothing: the host checks placement and verification, and that the profile's table gives each node
its own row (``tables.interference``).

Until 2026-12-01 this step also measured a packing group of mixed widths (``[(1, 1), (2, 1),
(1, 1)]`` on 2 x 2); it was dropped to keep ``make test`` inside its budget: its instances cost
the guest three more torch processes (455 s of a 976 s step under TCG), and what it checked in
the guest -- instances placed by ``placement.pack`` on both nodes, no CPU shared, memory bound to
each instance's node, verified in the instance -- this profile's group checks too.
``placement.pack``'s mixed-width logic on the guest's topology is tested on the host
(tests/test_packing.py::test_pack_on_the_2_node_test_guest).

Writes OUT/interference.json (the profile job's result, with the topology and wall time) and the
instances' logs and specs in OUT/interference-logs. Exit status 0 when it was written (the host's
tests judge it), 1 when the plan did not match.

Usage (inside the guest): python tests/numa_vm/interference_check.py --out DIR
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

from numa_effects.measure import job as job_mod  # noqa: E402
from numa_effects.measure import record  # noqa: E402
from numa_effects.plan import spec as spec_mod  # noqa: E402
from numa_effects.plan import topology  # noqa: E402

# As driver.py's cells: timings in the guest mean nothing, a round or two is enough.
SETTINGS = {
    **driver.SETTINGS,
    "contended_retries": 0,  # contended it will be (TCG, beside the pipeline's cells)
}
CELL_COMMON = {k: driver.CELL[k] for k in ("model", "opt", "image_size")} | {"use_smt": False}
TIMEOUT_S = 1800  # the whole group: k cold torch imports at once in the guest take minutes


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
    }
    print(f"numa_vm: interference: {k} x {threads} threads on {budget} cores", flush=True)
    spec = spec_mod.interference(job, topo)
    done = job_mod.run(spec, out / "interference.json", out / "interference-logs", TIMEOUT_S)
    result = {**done.to_json(), "topology": topo.to_dict(), "wall_s": time.monotonic() - t0}
    record.write(out / "interference.json", result)
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
    args = ap.parse_args(argv)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    return interference(out, topology.current())


if __name__ == "__main__":
    sys.exit(main())
