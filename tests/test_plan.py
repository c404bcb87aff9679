"""The plan (numa_effects.plan.build): one pure function of the checked config and a topology
that the rule files only read. Captured topologies of real machines; no Snakemake run here
(tests/test_pipeline.py runs the workflow built from it)."""

from __future__ import annotations

import ast
import copy
import dataclasses
import json
import re
from pathlib import Path

import pytest

from numa_effects import config as config_mod
from numa_effects.plan import (
    allocators,
    binding,
    build,
    code,
    cost,
    grid,
    optimizations,
    paths,
    placement,
    topology,
)
from numa_effects.plan import spec as spec_mod

FIX = Path(__file__).parent / "fixtures" / "topology"
TWO_NODES = FIX / "2x16-nosmt-alternating.lscpu-p.txt"
ONE_NODE = FIX / "this-vm-2cpu-1node.lscpu"

BASE = {
    "models": ["resnet18"],
    "batch_sizes": [1, 8],
    "optimizations": ["none", "script"],
    "threads": [1, 2],
    "placements": ["sequential", "interleave"],
    "image_size": 32,
    "replicates": 2,
}


def checked(topo_file: Path, **over) -> tuple[dict, topology.Topology]:
    cfg = copy.deepcopy({**BASE, **over, "topology": str(topo_file)})
    return cfg, config_mod.check(cfg).topology


def make(topo_file: Path = TWO_NODES, **over) -> build.Plan:
    cfg, topo = checked(topo_file, **over)
    return build.build(cfg, topo, code={"measure": "m0", "tables": "t0", "report": "r0"})


def test_a_plan_that_measures_nothing_narrows_to_itself():
    # a comparison's config names no models or batch sizes: the budget's narrowing, which keeps
    # the cells whose axes the config still names, has nothing to narrow (it raised KeyError)
    cfg, topo = checked(TWO_NODES)
    whole = build.build(cfg, topo, compare_keys=[])
    whole = dataclasses.replace(whole, imported=("packrat",))  # measured: False
    assert not whole.measured
    bare = {k: v for k, v in cfg.items() if k not in ("models", "batch_sizes")}
    assert whole.narrowed(bare).grid.cells == whole.grid.cells


def test_the_plan_holds_every_cell_replicate_in_run_order_with_its_priority():
    p = make()
    assert len(p.grid.cells) + len(p.grid.same) == 1 * 2 * 2 * 2 * 2 and not p.grid.skipped
    # a cell with another's binding (interleave at 1 thread is sequential) has no job
    assert {(k.placement, k.threads) for k in p.grid.same} == {("interleave", 1)}
    assert binding.same(*(placement.plan(p.topology, 1, n) for n in ("interleave", "sequential")))
    assert len(p.order) == 2 * len(p.grid.cells)
    # round by round: every first replicate before any second one
    rounds = [r for _, r in p.order]
    assert rounds == sorted(rounds)
    prios = [p.priority(k, r) for k, r in p.order]
    assert prios == sorted(prios, reverse=True) and len(set(prios)) == len(prios)
    outs = p.cell_outputs()
    assert outs[0] == p.order[0][0].path(p.results, p.order[0][1])
    assert set(outs) <= set(p.targets())


def test_a_cell_spec_carries_plan_settings_replicate_and_the_measuring_code():
    p = make()
    key = next(k for k in p.grid.cells if k.placement == "interleave" and k.threads == 2)
    spec = p.cell_spec(key, 2)
    assert spec.plan == p.grid.cells[key]
    assert spec.cell["image_size"] == 32 and spec.replicate == 2
    assert spec.code == "m0"
    # the optional keys (the canary) only when on: it is on by default
    assert set(spec.settings) == {*config_mod_settings_keys(), "canary"}
    assert "compile_cache_dir" not in spec.instances[0].options
    off = make(canary=False)
    assert set(off.cell_spec(key, 2).settings) == {*config_mod_settings_keys()}
    assert spec_mod.Spec.from_json(json.loads(json.dumps(spec.to_json()))) == spec


def config_mod_settings_keys():
    from numa_effects.plan import settings

    return settings.KEYS


def test_an_optimization_with_a_compile_cache_gets_the_runs_cache_folder():
    p = make(optimizations=["compile"])
    spec = p.cell_spec(next(iter(p.grid.cells)), 1)
    assert spec.instances[0].options["compile_cache_dir"] == f"{p.results}/{paths.COMPILE_CACHE}"


def test_no_spec_depends_on_where_the_run_lies(tmp_path, monkeypatch):
    """A job's spec is its params: a path made absolute in it would re-run every compiled cell
    and memory job of a run folder that was moved or copied ("Params have changed")."""

    def specs():
        p = make(optimizations=["compile"], placements=["sequential", "node-pairs"])
        cells = [p.cell_spec(k, r) for k, r in p.order]
        return cells + [p.memory_spec(c, m) for c, m in p.memory]

    monkeypatch.chdir(tmp_path)
    here = specs()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert specs() == here and len(here) > 2 * len(make().grid.cells)
    assert str(tmp_path) not in repr(here)


def test_a_grid_in_which_every_cell_is_skipped_is_a_valid_plan():
    p = make(ONE_NODE, placements=["remote"])
    assert not p.grid.cells and len(p.grid.skipped) == 8
    assert p.order == () and p.cell_outputs() == [] and p.peak == {}
    targets = p.targets()
    assert p.table("cells") in targets and p.table("skipped") in targets
    assert {r["reason"] for r in p.skipped_rows()} == {
        "remote needs at least 2 NUMA nodes; this machine has 1"
    }


def test_a_batch_too_large_for_memory_is_skipped_not_a_traceback():
    cfg, topo = checked(ONE_NODE, placements=["sequential"], batch_sizes=[65536], image_size=224)
    p = build.build(cfg, topo, memory_bytes=2**30)
    assert not p.grid.cells and all(
        "more than this machine's" in w for w in p.grid.skipped.values()
    )
    assert p.order == ()


def test_peak_jobs_one_per_placement_thread_count_and_dtype_or_none():
    p = make()
    places = ("sequential", "interleave")
    # a peak per measured placement: interleave at 1 thread is sequential's binding, measured once
    measured = {(pl, t) for pl in places for t in (1, 2)} - {("interleave", 1)}
    assert set(p.peak) == {(pl, t, "float32") for pl, t in measured}
    assert make(peak=False).peak == {}
    spec = p.peak_spec("interleave", 2, "float32")
    assert spec.plan == p.peak[("interleave", 2, "float32")]
    p = make(optimizations=["none", "int8", "int8_bf16"])  # int8_bf16 computes in int8 too
    assert set(p.peak) == {(pl, t, d) for pl, t in measured for d in ("float32", "int8")}


def test_an_import_measures_nothing_and_plans_figures_from_the_imported_cells():
    cfg, topo = checked(ONE_NODE)
    cfg["import"] = {"packrat": ["somewhere"]}
    keys = [{"model": "resnet50", "opt": "script", "placement": "interleave", "threads": 4,
             "batch_size": 8}]  # fmt: skip
    p = build.build(cfg, topo, imported_keys=keys)
    assert not p.measured and p.grid.cells == {} and p.figure_keys() == keys
    assert p.placements() == ["interleave"]
    assert p.table("failures") not in p.targets() and p.table("peak") not in p.targets()


def test_packing_jobs_follow_the_packing_settings():
    p = make(ONE_NODE, placements=["sequential"])
    assert p.packing["enabled"] and p.packed() == [("resnet18", "none")]
    assert len(p.packing_jobs) == len(p.packing["budgets"]) * 2  # x batch sizes
    assert make(ONE_NODE, placements=["sequential"], threads=[1]).packing_jobs == ()
    # the groups run with the allocator of the cells the plan predicts from: glibc as it comes
    # where the grid has it, else the grid's first in registry order (config.yaml: glibc tuned)
    grid_allocs = {k.allocator for k in p.grid.cells}
    assert p.packing_job("resnet18", "none")["allocator"] == allocators.baseline(grid_allocs)
    for allocs, want in (
        (["jemalloc", "glibc_tuned"], "glibc_tuned"),
        (["tcmalloc", "default"], "default"),
        (["glibc_tuned"], "glibc_tuned"),
    ):
        q = make(ONE_NODE, placements=["sequential"], allocators=allocs)
        assert q.packing_job("resnet18", "none")["allocator"] == want
        spec = q.interference_spec("resnet18", "none", 2, 1)
        assert spec.job["allocator"] == want
        assert {i.allocator for c in spec.configurations.values() for i in c.instances} == {want}


def test_interference_jobs_are_planned_with_their_placements_and_cost():
    """The profile's jobs come from the plan (grid and budget), each with the
    placements of its alone instance and groups made on the planning topology, and the plan
    says what they cost; none without packing or with the profile off."""
    p = make(ONE_NODE, placements=["sequential"])
    (j,) = p.interference_jobs
    assert (j["budget"], j["threads"], j["instances"]) == (2, 1, [2])
    spec = p.interference_spec("resnet18", "none", 2, 1)
    assert spec.job["batch"] == p.packing["interference"]["batch"] and spec.job["instances"] == [2]
    assert sorted(spec.configurations) == ["k1", "k2"] and spec.unplaced == {}
    assert [i.plan.cpus for i in spec.configurations["k2"].instances] == [(0,), (1,)]
    assert spec.schedule == tuple((n, r) for r in range(1, p.replicates + 1) for n in ("k1", "k2"))
    assert spec_mod.GroupSpec.from_json(json.loads(json.dumps(spec.to_json()))) == spec
    assert p.interference_run_paths() == [
        p.path(paths.INTERFERENCE_RUN, model="resnet18", opt="none", budget=2, threads=1)
    ]
    assert p.profile_cost()["configurations"] == 2 * p.replicates
    assert p.table("interference") in p.targets()
    off = make(ONE_NODE, placements=["sequential"], packing={"interference": {"enabled": False}})
    assert off.interference_jobs == () and off.packing_jobs
    # packing off (one thread count): the profile is measured for the deploy answer's
    # predictions only, and not at all when that is off too
    alone = make(ONE_NODE, placements=["sequential"], threads=[1])
    assert not alone.packing_jobs and alone.deploy["measured"] and alone.interference_jobs
    quiet = make(ONE_NODE, placements=["sequential"], threads=[1], deploy={"enabled": False})
    assert quiet.interference_jobs == ()


# -- registries: a new axis value is one entry ---------------------------------------------------
def _pinned_pair(topo, t, use_smt, cpu, mem):
    """The throwaway family's planner: t cores of node ``cpu``, memory bound to node ``mem``."""
    if cpu not in topo.nodes or mem not in topo.nodes:
        return f"n{cpu}m{mem} needs nodes {cpu} and {mem}; this machine has {list(topo.nodes)}"
    cpus = topo.node_cpus(cpu, use_smt)[:t]
    if len(cpus) < t:
        return f"node {cpu} has {len(cpus)} cores"
    return placement._make(topo, f"n{cpu}m{mem}", t, cpus, "bind", (mem,), use_smt)


@pytest.fixture
def node_pairs(monkeypatch):
    entry = placement.Placement(
        "n{cpu}m{mem}", _pinned_pair, "CPUs of node cpu, memory on node mem", "n{cpu}m{cpu}"
    )
    monkeypatch.setitem(placement.PLACEMENTS, entry.name, entry)
    return entry


def test_a_placement_family_is_one_registry_entry(node_pairs):
    p = make(placements=["n0m0", "n0m1", "n1m0"], threads=[2], optimizations=["none"])
    plans = {k.placement: v for k, v in p.grid.cells.items() if k.batch_size == 1}
    assert plans["n0m1"].numactl_args() == ["--physcpubind=0,2", "--membind=1"]
    assert placement.baseline_of("n0m1") == "n0m0" and placement.is_baseline("n0m0")
    # n1m0's baseline n1m1 is not in the grid: it runs in its own group
    order = [k.placement for k, r in p.order if r == 1 and k.batch_size == 1]
    assert abs(order.index("n0m1") - order.index("n0m0")) == 1
    rx = grid.wildcard_constraints()["placement"]
    assert re.fullmatch(rx, "n3m12") and re.fullmatch(rx, "n0m1+smt")
    assert not re.fullmatch(rx, "n0m")


def test_a_placement_family_member_the_machine_lacks_is_skipped_with_the_reason(node_pairs):
    p = make(ONE_NODE, placements=["n0m0", "n0m1"], threads=[1], optimizations=["none"])
    assert {k.placement for k in p.grid.cells} == {"n0m0"}
    assert {w for w in p.grid.skipped.values()} == {
        "n0m1 needs nodes 0 and 1; this machine has [0]"
    }


def test_an_optimization_is_one_registry_entry(monkeypatch):
    entry = optimizations.Optimization("half", "throwaway: eager in 2 bytes", dtype="bfloat16")
    monkeypatch.setitem(optimizations.OPTIMIZATIONS, "half", entry)
    cfg, topo = checked(ONE_NODE, optimizations=["none", "half"], placements=["sequential"],
                        batch_sizes=[4096], image_size=224, threads=[1])  # fmt: skip
    # ResNet-18 batch 4096 at 224: float32 needs ~24.7 GiB, a 2-byte dtype half of it
    p = build.build(cfg, topo, memory_bytes=16 * 2**30)
    assert {k.opt for k in p.grid.cells} == {"half"} and {k.opt for k in p.grid.skipped} == {"none"}
    assert re.fullmatch(grid.wildcard_constraints()["opt"], "half")


# -- code digests: content, not file times --------------------------------------------------------
def test_code_digests_follow_content_not_comments_docstrings_or_times(tmp_path):
    root = tmp_path / "scripts"
    (root / "numa_effects" / "measure").mkdir(parents=True)
    mod = root / "numa_effects" / "measure" / "m.py"
    mod.write_text('"""Doc."""\n\ndef f():\n    """Doc."""\n    return 1  # one\n')
    layers = {"measure": ("numa_effects/measure/*.py",)}
    first = code.digest(layers["measure"], root)
    mod.write_text('"""Other doc."""\n\n\ndef f():\n    """More."""\n    return 1  # two\n')
    assert code.digest(layers["measure"], root) == first
    mod.write_text('"""Doc."""\n\ndef f():\n    return 2\n')
    assert code.digest(layers["measure"], root) != first


def test_an_edit_of_the_progress_line_re_measures_nothing(tmp_path):
    root = tmp_path / "scripts"
    (root / "numa_effects" / "measure").mkdir(parents=True)
    for name in ("job.py", "progress.py"):
        (root / "numa_effects" / "measure" / name).write_text("X = 1\n")
    first = code.digest(code.LAYERS["measure"], root)
    (root / "numa_effects" / "measure" / "progress.py").write_text("X = 2\n")
    assert code.digest(code.LAYERS["measure"], root) == first
    (root / "numa_effects" / "measure" / "job.py").write_text("X = 2\n")
    assert code.digest(code.LAYERS["measure"], root) != first


def test_an_edit_of_a_page_template_re_renders_the_report(tmp_path):
    # templates are not Python: their bytes are the digest, and the report layer covers them
    root = tmp_path / "scripts"
    for sub in ("report", "compare"):
        (root / "numa_effects" / sub / "templates").mkdir(parents=True)
        (root / "numa_effects" / sub / "templates" / "p.html.j2").write_text("<p>{{ x }}</p>\n")
    first = code.digest(code.LAYERS["report"], root)
    for sub in ("report", "compare"):
        t = root / "numa_effects" / sub / "templates" / "p.html.j2"
        t.write_text("<p>{{ y }}</p>\n")
        assert code.digest(code.LAYERS["report"], root) != first
        t.write_text("<p>{{ x }}</p>\n")
    assert code.digest(code.LAYERS["report"], root) == first


def test_code_digests_are_cached_by_file_time_and_size(tmp_path, monkeypatch):
    cache = tmp_path / "digests.json"
    first = code.digests(cache_file=cache)
    assert cache.exists()
    calls = []
    monkeypatch.setattr(code, "file_digest", lambda p: calls.append(p) or "x")
    assert code.digests(cache_file=cache) == first and calls == []
    assert set(first) == set(code.LAYERS) and all(len(d) == 16 for d in first.values())


def imported_closure(entries: list[Path]) -> set[Path]:
    """Every package module the files ``entries`` import, directly or not (lazy imports too)."""
    seen, todo = set(), list(entries)
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            else:
                continue
            for name in (n for n in names if n.startswith("numa_effects.")):
                module = code.SCRIPTS / f"{name.replace('.', '/')}.py"
                todo += [module] if module.exists() else []
    return seen


def test_the_tables_and_report_digests_cover_the_code_their_scripts_import():
    """An edit of a module a tables or report job imports re-runs that job. A layer's digest
    need not list what a layer below it covers: a measure edit re-measures the cells, which
    re-runs the tables, whose new files re-run the report."""

    def listed(layer):
        return {p for pattern in code.LAYERS[layer] for p in code.SCRIPTS.glob(pattern)}

    below = listed("measure")  # kept to the code that runs in the cell (plan.code)
    for layer in ("tables", "report"):
        entries = [p for p in listed(layer) if p.parent == code.SCRIPTS]
        missing = imported_closure(entries) - listed(layer) - below
        assert not sorted(str(p.relative_to(code.SCRIPTS)) for p in missing), layer
        below |= listed(layer)


def test_every_rule_that_takes_a_layers_digest_has_its_script_in_that_layer():
    """A rule's ``code=PLAN.code[layer]`` re-runs it when that layer changes: its script must be
    in the layer, or an edit of the script (and of what only it imports) re-runs nothing."""
    found = 0
    for smk in sorted((REPO / "workflow" / "rules").glob("*.smk")):
        for block in re.split(r"\n\s*(?:rule|checkpoint) ", smk.read_text())[1:]:
            script = re.search(r'script:\s*\n\s*"\.\./scripts/(\w+\.py)"', block)
            layer = re.search(r'code=PLAN\.code\["(\w+)"\]', block)
            if script and layer:
                found += 1
                listed = {
                    p.name for pat in code.LAYERS[layer.group(1)] for p in code.SCRIPTS.glob(pat)
                }
                assert script.group(1) in listed, (smk.name, block.split(":")[0], layer.group(1))
    assert found >= 10  # the rules were read


def test_a_cell_skipped_for_what_this_machine_offers_still_has_its_spec():
    """A cluster job's node re-parses the workflow: a cell its host check skips there (here: a
    library missing) keeps its spec, so the job runs and fails with its cause (the launcher
    looks again) instead of the workflow raising; a cell that cannot be placed has none."""
    from numa_effects.plan import host

    cfg, topo = checked(TWO_NODES, allocators=["default", "jemalloc"])
    missing = host.Host(libraries={"jemalloc": None})
    p = build.build(cfg, topo, host=missing)
    key = next(k for k in p.grid.skipped if k.allocator == "jemalloc")
    assert "not found" in p.grid.skipped[key]
    spec = p.cell_spec(key, 1)
    assert spec.cell["allocator"] == "jemalloc" and spec.plan.threads == key.threads
    with pytest.raises(KeyError):
        p.cell_spec(dataclasses.replace(key, threads=999), 1)


# -- the plan built once per parse ------------------------------------------------------------

REPO = Path(__file__).resolve().parent.parent
TWO_BY_32 = FIX / "synthetic-2x32-smt-offset64.lscpu-p.txt"


def default_checked(**over) -> tuple[dict, topology.Topology]:
    import yaml

    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    got = config_mod.check({**cfg, **over})
    return got.config, got.topology


@pytest.mark.parametrize("topo_file", [TWO_BY_32, ONE_NODE])
def test_each_budget_step_narrows_the_plan_to_what_building_the_shrunk_config_gives(topo_file):
    """The budget's steps narrow one built plan instead of building it again: after every step
    the narrowed view's estimate and the narrowed plan equal those of the plan built from the
    shrunk config (the independent expectation: a full build)."""
    cfg, topo = default_checked(topology=str(topo_file), budget=None)
    codes = {"measure": "m", "tables": "t", "report": "r"}
    whole = build.build(copy.deepcopy(cfg), topo, code=codes)
    view, current, steps = cost.view(whole), copy.deepcopy(cfg), 0
    for step in cost.shrink_steps(topo):
        got = step(current)
        if got is None:
            continue
        current, steps = got[0], steps + 1
        rebuilt = build.build(copy.deepcopy(current), topo, code=codes)
        assert cost.estimate(cost.narrowed(view, current)).parts == cost.estimate(rebuilt).parts
        narrowed = whole.narrowed(copy.deepcopy(current))
        assert narrowed.targets() == rebuilt.targets() and narrowed.order == rebuilt.order
        assert narrowed.manifest == rebuilt.manifest and narrowed.peak == rebuilt.peak
        assert narrowed.packing_jobs == rebuilt.packing_jobs
    assert steps >= 3  # the default grid gives most steps something to drop


COUNT_BUILDS = """
import atexit, sys
sys.path.insert(0, "workflow/scripts")
from numa_effects.plan import build, grid
calls = {"build": 0, "expand": 0}
def counted(name, f):
    def wrapped(*a, **k):
        calls[name] += 1
        return f(*a, **k)
    return wrapped
build.build = counted("build", build.build)
grid.expand = counted("expand", grid.expand)
atexit.register(lambda: print("COUNTS", calls["build"], calls["expand"], file=sys.stderr))
from snakemake.cli import main
main(sys.argv[1:])
"""


@pytest.mark.parametrize("over", [[], [f"topology={TWO_BY_32}"]], ids=["default", "2x32"])
def test_a_parse_of_the_workflow_builds_the_plan_once(over, tmp_path):
    """A real ``snakemake -n all`` (its parse patched in-process to count) plans every cell once
    however many budget steps it takes (the 2x32 default takes several)."""
    import subprocess
    import sys

    argv = ["-n", "all", "--cores", "1", "--directory", str(tmp_path), "--snakefile"]
    argv += [str(REPO / "Snakefile"), "--configfile", str(REPO / "config" / "config.yaml")]
    argv += ["--config", *over] if over else []
    proc = subprocess.run(
        [sys.executable, "-c", COUNT_BUILDS, *argv],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "COUNTS 1 1" in proc.stderr, proc.stderr[-3000:]
    if over:  # the budget did shrink there: the steps ran, on the one plan
        assert "budget: " in proc.stderr


def test_measuring_modules_do_not_import_the_budget_solver():
    """A measuring job's imports (its entry script's and the front door's) leave plan.cost,
    the budget solver, and plan.build unimported."""
    import subprocess
    import sys

    code = (
        "import sys; sys.path.insert(0, 'workflow/scripts'); "
        "import numa_effects.measure.job, numa_effects.measure.cell, "
        "numa_effects.measure.runner, numa_effects.measure.progress; "
        "print(sorted(m for m in sys.modules if m.startswith('numa_effects.plan')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    assert "numa_effects.plan.spec" in out  # the modules were imported
    assert "numa_effects.plan.cost" not in out and "numa_effects.plan.build" not in out
