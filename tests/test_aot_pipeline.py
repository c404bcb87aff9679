"""``bf16_aot`` in a real snakemake run (resnet18 on 32 x 32 images, batch 1, 1 thread, two
replicates): the first process of the cell builds the AOTInductor package into the run's
compile cache and says so in its record, the second loads it and compiles nothing; both
compute in bf16 and agree with float32 eager. ``bf16: always``: the cells run on a CPU without
native bf16 too (marked), so the test does not depend on this machine's ISA."""

from __future__ import annotations

import json

import pytest
from conftest import load_config, snakemake

from numa_effects.measure.workloads import model as model_workload
from numa_effects.plan import grid, optimizations, paths

pytestmark = pytest.mark.integration
OPT = optimizations.OPTIMIZATIONS["bf16_aot"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    reason = optimizations.skip_reason(OPT, optimizations.availability())
    if reason:
        pytest.skip(reason)
    workdir = tmp_path_factory.mktemp("aot")
    cfg = load_config(
        "tiny",
        batch_sizes=[1],
        optimizations=["bf16_aot"],
        bf16="always",
        replicates=2,
        two_stage={"enabled": False, "target_pct": 3, "cap": 4},
        peak=False,
    )
    snakemake(workdir, cfg, "--cores", "1", "results/tables/cells.csv")
    results = workdir / "results"
    key = {
        "model": "resnet18",
        "opt": "bf16_aot",
        "placement": "sequential",
        "threads": 1,
        "batch_size": 1,
        "allocator": cfg["allocators"][0],
    }
    records = [
        json.loads((results / grid.CELL_PATTERN.format(**key, replicate=r)).read_text())
        for r in (1, 2)
    ]
    return results, records


def _notes(record):
    return [
        w["message"]
        for w in record["provenance"]["warnings"]
        if w["category"] == model_workload.AotPackage.__name__
    ]


def test_one_package_is_built_by_one_process_and_loaded_by_the_other(run):
    results, records = run
    assert [r["status"] for r in records] == ["ok", "ok"], [r.get("failure") for r in records]
    packages = list((results / paths.COMPILE_CACHE / model_workload.AOT_FOLDER).glob("*.pt2"))
    assert len(packages) == 1, packages
    notes = [_notes(r) for r in records]
    assert all(len(n) == 1 and packages[0].name in n[0] for n in notes), notes
    built = [i for i, n in enumerate(notes) if "built for this process by a child" in n[0]]
    loaded = [i for i, n in enumerate(notes) if "loaded (built by an earlier process)" in n[0]]
    assert len(built) == 1 and len(loaded) == 1, notes
    b, ld = records[built[0]]["measurement"], records[loaded[0]]["measurement"]
    # the builder's conversion holds the export and the compilation; the loader's neither,
    # and no first call compiles
    assert ld["prepare_s"] < b["prepare_s"] / 3, (ld["prepare_s"], b["prepare_s"])
    assert ld["first_call_s"] < b["prepare_s"] / 3 and b["first_call_s"] < b["prepare_s"] / 3


def test_both_processes_compute_in_bf16_and_agree_with_float32(run):
    _, records = run
    for r in records:
        prec = r["precision"]
        assert prec["dtype"] == "bfloat16" and prec["graph"] == "aoti", prec
        assert prec["numerics"]["verdict"]["ok"], prec["numerics"]
        assert prec["numerics"]["agreement"]["output_dtype"] == "bfloat16"
