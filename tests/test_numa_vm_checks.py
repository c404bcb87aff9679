"""The host-side check of the 2-node guest's interference step
(``tests/numa_vm/interference_check.py`` -> ``check_interference_group`` in
tests/test_numa_vm.py), unit-tested on a record produced on this project's 1-node host by the
same script (``tests/fixtures/numa_vm_interference/host-1node.json``: ``python
tests/numa_vm/interference_check.py --out DIR``, then named packing_group.py, on the 2-core KVM
guest, 2026-12-01, load 4.9-5.3): the checks pass on it, and altered copies -- placed
elsewhere, sharing a CPU, memory on another node, a failed verification, a table attributing an
instance to the wrong node -- fail them. The guest's own record is checked by
tests/test_numa_vm.py (marker numa_vm)."""

import copy
import json
from pathlib import Path

import pytest
from test_numa_vm import INTERFERENCE_CHECK, check_interference_group

from numa_effects.plan import topology

RECORD = Path(__file__).parent / "fixtures" / "numa_vm_interference" / "host-1node.json"


@pytest.fixture
def record() -> dict:
    return json.loads(RECORD.read_text())


def topo_of(rec: dict) -> topology.Topology:
    return topology.Topology.from_dict(rec["topology"])


def test_the_host_record_passes_the_guest_checks(record):
    topo = topo_of(record)
    assert len(topo.nodes) == 1  # this host: both instances on node 0, x = 1 each
    assert INTERFERENCE_CHECK.interference_configuration(topo) == (2, 1, 2)
    check_interference_group(record, topo)


def test_the_guest_configuration_is_two_instances_of_two_threads_one_per_node():
    from test_topology import load

    from numa_effects.plan import placement

    guest = load("qemu-2node-test-guest")
    budget, threads, k = INTERFERENCE_CHECK.interference_configuration(guest)
    assert (budget, threads, k) == (4, 2, 2)
    assert [p.cpu_nodes for p in placement.pack(guest, [threads] * k, budget)] == [(0,), (1,)]


def altered(record: dict) -> list[tuple[str, dict]]:
    out = []
    group = record["runs"]["k2"][0]["instances"]
    # the two instances swapped: each where its own plan says, but not where pack puts it
    r = copy.deepcopy(record)
    g = r["runs"]["k2"][0]["instances"]
    g[0], g[1] = g[1], g[0]
    out.append(("swapped", r))
    # a CPU of the other instance
    r = copy.deepcopy(record)
    r["runs"]["k2"][0]["instances"][1]["binding"]["cpus_allowed_list"] = group[0]["plan"][
        "cpu_list"
    ]
    out.append(("shared cpu", r))
    # memory bound to another node
    r = copy.deepcopy(record)
    r["runs"]["k2"][0]["instances"][0]["binding"]["mempolicy"]["nodes"] = [1]
    out.append(("membind", r))
    # pages on another node, the verification's own verdict left "ok"
    r = copy.deepcopy(record)
    ver = r["runs"]["k1"][0]["instances"][0]["verification"]
    ver["pages"]["anon_kb_by_node"] = {"1": ver["pages"]["anon_kb"]}
    out.append(("pages", r))
    # a failed verification
    r = copy.deepcopy(record)
    r["runs"]["k2"][0]["instances"][1]["verification"]["ok"] = False
    out.append(("verification", r))
    # the job failed
    r = copy.deepcopy(record)
    r["status"] = "failed"
    out.append(("failed", r))
    # a group of the wrong size
    r = copy.deepcopy(record)
    r["runs"]["k2"][0]["instances"] = group[:1]
    out.append(("one instance", r))
    return out


CASES = ["swapped", "shared cpu", "membind", "pages", "verification", "failed", "one instance"]


@pytest.mark.parametrize("case", CASES)
def test_altered_records_fail_the_checks(record, case):
    bad = dict(altered(record))[case]
    with pytest.raises(AssertionError):
        check_interference_group(bad, topo_of(record))
