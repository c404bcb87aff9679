"""Bad input is rejected before any job starts: exit status 1, one line per problem naming the
full key path and what is allowed, never a traceback, nothing created. Every case below gives
one problem alone (``check``), and the same lines from a real `snakemake -n` and from
`numa-effects check-config` (cases batched: one run reports many problems); plus unit
tests of numa_effects.config (message variants, normalisation, config files, the results
folder, registries, the README's key tables), numa_effects.plan.memory and
numa_effects.plan.manifest, and the guards that keep config values away from any shell."""

from __future__ import annotations

import copy
import math
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from conftest import REPO, load_config, result_folder, snakemake
from conftest import key as cell_key
from conftest import planned as dag_planned

from numa_effects import config as validation
from numa_effects.config import cli, files, paths, schema
from numa_effects.plan import (
    grid,
    manifest,
    memory,
    models,
    optimizations,
    packing,
    placement,
    settings,
    stages,
    topology,
)

TOPO = REPO / "tests" / "fixtures" / "topology"
TWO_NODES = TOPO / "2x16-nosmt-alternating.lscpu-p.txt"  # 2 nodes x 16 cores, no SMT
# Lines Snakemake prints before it reads the workflow (not ours).
BANNERS = ("Using workflow specific profile",)
ENV = {"PYTHONPATH": str(REPO / "workflow" / "scripts"), "PATH": os.environ["PATH"]}


def tree(root: Path) -> set[Path]:
    return set(root.rglob("*")) if root.exists() else set()


def dry_run_fails(tmp_path: Path, config: dict | None, *extra: str) -> list[str]:
    """Run `snakemake -n all`; assert it fails with status 1 before any job, with no
    traceback and nothing created; return its lines (Snakemake's banners left out)."""
    if config is not None:  # written first, so the snapshot below holds it
        tmp_path.mkdir(parents=True, exist_ok=True)
        (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    before = tree(tmp_path)
    proc = snakemake(tmp_path, config, "-n", "all", *extra, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "Traceback" not in out and 'File "' not in out, out
    assert "Job stats" not in out and "Building DAG" not in out, out
    assert tree(tmp_path) == before, f"created: {sorted(map(str, tree(tmp_path) - before))}"
    return [line for line in out.splitlines() if line.strip() and not line.startswith(BANNERS)]


def checker(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """`numa-effects check-config ... --directory tmp_path`, as a user would run it."""
    proc = subprocess.run(
        [sys.executable, "-m", "numa_effects", "check-config", *args, "--directory", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=ENV,
    )
    assert "Traceback" not in proc.stdout + proc.stderr
    return proc


def checker_lines(tmp_path: Path, *args: str) -> tuple[int, list[str]]:
    proc = checker(tmp_path, *args)
    return proc.returncode, [line for line in proc.stderr.splitlines() if line.strip()]


def cfg(**over) -> dict:
    c = copy.deepcopy(load_config("tiny"))
    c.update(over)
    return c


def _file(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


LATENCY_HEADER = "benchmark,topology,interop_threads,intraop_threads,batch_size,"
LATENCY_HEADER += "latency(min),latency(avg),latency(max),flops"
THROUGHPUT_HEADER = "benchmark,topology,interop_threads,intraop_threads,batch_size,throughput"


def packrat_folder(
    folder: Path,
    latencies: list[str] | None = None,
    rows: int = 2,
    header_only: str = "",
    batch: str = "1",
) -> str:
    """A PackRat results folder of ``rows`` cells (threads 1..rows, batch 1); ``latencies``
    replaces the latency(avg) of the first rows, ``batch`` the latency file's first batch
    size; the file ``header_only`` has no rows."""
    latencies = list(latencies or [])
    lat, thr = [LATENCY_HEADER], [THROUGHPUT_HEADER]
    for t in range(1, rows + 1):
        avg = latencies[t - 1] if t <= len(latencies) else str(100.0 / t)
        b = batch if t == 1 else "1"
        lat.append(f"resnet_manual_script,sequential,1,{t},{b},{90.0 / t},{avg},{120.0 / t},0.0")
        thr.append(f"resnet_manual_script,sequential,1,{t},1,{10.0 * t}")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "resnet_latency.csv").write_text("\n".join(lat) + "\n")
    (folder / "resnet_throughput.csv").write_text("\n".join(thr) + "\n")
    if header_only:
        (folder / header_only).write_text((folder / header_only).read_text().split("\n")[0] + "\n")
    return str(folder)


def earlier_results(folder: Path) -> Path:
    """The results folder of an earlier run: machine.json and its cells."""
    (folder / "cells").mkdir(parents=True)
    (folder / "machine.json").write_text("{}")
    return folder


def compared(folder: Path, *models: str) -> list[str]:
    """Result folders of one cell each (of these models), as a comparison reads them."""
    rows = [{**cell_key(model=m), "status": "ok", "latency_median_ms": 10.0} for m in models]
    return [str(result_folder(folder / f"run{i}", [row])) for i, row in enumerate(rows)]


def not_a_result_folder(folder: Path) -> dict:
    (folder / "empty").mkdir(parents=True)
    return {"compare": [*compared(folder, "resnet18"), str(folder / "empty")]}


def results_inside(folder: Path) -> dict:
    runs = compared(folder, "resnet18", "resnet18")
    return {"compare": runs, "results": f"{runs[0]}/out"}


# -- every class of bad input: one problem each ---------------------------------------------------
@dataclass(frozen=True)
class Case:
    id: str
    over: dict | Callable[[Path], dict]  # config overrides, or made with files in a folder
    texts: list[str]  # what its one line must hold
    extra: str = ""  # YAML lines appended to the config file
    reads: tuple[str, ...] = ()  # other keys its check reads, and keys a callable sets

    @property
    def keys(self) -> set[str]:
        appended = re.findall(r"^(\w+):", self.extra, re.M)
        return {*(self.over if isinstance(self.over, dict) else ()), *appended, *self.reads}


CASES = [
    Case("out-of-range", {"batch_sizes": [4, 0]}, ["'batch_sizes[1]': 0 is out of range", ">= 1"]),
    Case("wrong-type", {"batch_sizes": [1.5]}, ["'batch_sizes[0]': 1.5 is a number", "an integer"]),
    Case(
        "above-upper-bound",
        {"batch_sizes": [1099511627776]},
        ["'batch_sizes[0]': 1099511627776 is out of range", "<= 65536"],
    ),
    Case("negative", {"batch_sizes": [4, -2]}, ["'batch_sizes[1]': -2 is out of range"]),
    Case("not-a-number", {"batch_sizes": ["eight"]}, ["'batch_sizes[0]': 'eight' is a string"]),
    Case("not-a-list", {"batch_sizes": "16"}, ["'batch_sizes': '16' is a string; allowed: a list"]),
    Case("boolean-is-not-int", {"batch_sizes": [True]}, ["'batch_sizes[0]': true is a boolean"]),
    Case(
        "image-size-bound",
        {"image_size": 100000},
        ["'image_size': 100000 is out of range", "16384"],
    ),
    Case(
        "integral-float-checked-as-int",
        {"threads": [1000.0]},
        ["'threads': 1000 is more than this machine can ever run", "allowed: 1.."],
        reads=(
            "topology",
            "use_smt",
        ),
    ),
    Case(
        "threads-word", {"threads": "all"}, ["'threads': 'all' is not allowed; allowed: auto, or a"]
    ),
    Case(
        "not-finite", {"max_seconds_per_cell": math.nan}, ["'max_seconds_per_cell': nan is not a"]
    ),
    Case(
        "not-positive", {"max_seconds_per_cell": -5}, ["'max_seconds_per_cell': -5 is out of range"]
    ),
    Case("infinite", {"max_seconds_per_cell": math.inf}, ["'max_seconds_per_cell': inf is not a"]),
    Case("duplicate-after-normalising", {"batch_sizes": [1, 1.0]}, ["'batch_sizes': 1 appears"]),
    Case("duplicate-name", {"optimizations": ["script", "script"]}, ["'script' appears more than"]),
    Case("empty-list", {"models": []}, ["'models': the list is empty"]),
    Case("unknown-key", {"batch_size": [1]}, ["unknown config key 'batch_size'", "'batch_sizes'?"]),
    Case(
        "unknown-nested-key",
        {"import": {"packrat": ["x"], "foo": 1}},
        ["unknown config key 'import.foo'"],
    ),
    Case(
        "missing-nested-key",
        {"import": {"machine": "x"}},
        ["config key 'import.packrat' is missing"],
    ),
    Case(
        "key-given-twice",
        {},
        ["'warmup': given twice in config file", "only the last would count"],
        extra="warmup: 3\n",
    ),
    Case(
        "unknown-name-short-list",
        {"placements": ["sequentail"]},
        ["'placements[0]': 'sequentail'", "sequential, interleave, remote, mem-interleave"],
    ),
    Case(
        "unknown-name-long-list",
        {"models": ["resnet18", "resnet5"]},
        ["'models[1]': 'resnet5' is not a torchvision", "nearest: resnet50", "--list models"],
    ),
    Case(
        "unknown-optimization",
        {"optimizations": ["none", "scirpt"]},
        ["'optimizations[1]': 'scirpt'", "none, script, channels_last, compile"],
    ),
    Case(
        "unknown-allocator",
        {"allocators": ["default", "mimalloc"]},
        [
            "'allocators[1]': 'mimalloc' is not a known allocator",
            "default, glibc_tuned, jemalloc, tcmalloc",
        ],
    ),
    Case("bf16-rule", {"bf16": "sometimes"}, ["'bf16': 'sometimes'", "auto, always"]),
    Case(
        "smt-label-as-placement",
        {"placements": ["sequential+smt"]},
        ["'placements[0]': 'sequential+smt' is not a known placement", "use_smt: true"],
    ),
    Case("shell-in-a-name", {"placements": ["sequential$(touch X)"]}, ["'placements[0]'"]),
    Case(
        "node-pair-unknown-node",
        {
            "topology": str(TOPO / "qemu-4node-4x1x2-smt-adjacent"),
            "node_pairs": [[0, 1], [0, 5]],
        },
        [
            "config key 'node_pairs[1]': [0, 5]: topology file",
            "has no node 5; allowed: [cpu node, memory node] with a CPU node of 0-3 and a memory",
        ],
    ),
    Case(
        "node-pair-memory-only-cpu-node",
        {
            "topology": str(TOPO / "synthetic-4node-plus-memory-only"),
            "node_pairs": [[4, 0]],
        },
        [
            "'node_pairs[0]': [4, 0]: node 4 has no CPUs",
            "a CPU node of 0-3 and a memory node of 0-4",
        ],
    ),
    Case(
        "node-pairs-word",
        {"node_pairs": "diagonal"},
        ["'node_pairs': 'diagonal' is not allowed (did you mean 'diagonal+row0'?)"],
    ),
    Case("min-above-max", {"min_iterations": 50, "max_iterations": 10}, ["'min_iterations': 50"]),
    Case("max-memory", {"max_memory_mb": 0}, ["'max_memory_mb': 0 is out of range; allowed: an"]),
    Case("seed-bound", {"seed": 2**70}, ["'seed'", "<= 4294967295"]),
    Case("seed-fraction", {"seed": 0.5}, ["'seed': 0.5 is a number; allowed: an integer"]),
    Case(
        "boolean-word", {"use_smt": "yes"}, ["'use_smt': 'yes' is a string; allowed: true or false"]
    ),
    Case("shell-characters", {"results": "out; touch X"}, ["'results'", "no spaces, quotes"]),
    Case("results-system-folder", {"results": "/etc"}, ["'results': '/etc' is a system folder"]),
    Case("results-inside-system", {"results": "/usr/local/x"}, ["'results'", "inside a system"]),
    Case("results-root", {"results": "/"}, ["'results': '/' is the root folder"]),
    Case("results-holds-workdir", {"results": ".."}, ["'results': '..' is the working directory"]),
    Case("results-snakemake", {"results": ".snakemake/x"}, ["inside one of the workflow's own"]),
    Case(
        "results-workflow-folder",
        {"results": str(REPO / "workflow" / "out")},
        ["inside one of the workflow's own folders"],
    ),
    Case(
        "results-is-a-file",
        lambda d: {"results": str(_file(d / "afile", b"x"))},
        ["is an existing file, not a folder"],
        reads=("results",),
    ),
    Case(
        "topology-not-text",
        lambda d: {"topology": str(_file(d / "topo.bin", bytes(range(256)) * 4))},
        ["config key 'topology': cannot read topology file", "allowed: null (this machine)"],
        reads=("topology",),
    ),
    Case(
        "import-folder-missing",
        lambda d: {"import": {"packrat": [str(d / "nope")]}},
        ["config key 'import.packrat[0]'", "not found", "allowed: PackRat results folders"],
        reads=("import",),
    ),
    Case(
        "import-csv-without-rows",
        lambda d: {
            "import": {
                "packrat": [packrat_folder(d / "packrat-empty", header_only="resnet_latency.csv")]
            }
        },
        ["config key 'import.packrat[0]'", "resnet_latency.csv has no rows after its header"],
        reads=("import",),
    ),
    Case(
        "import-negative-latency",
        lambda d: {"import": {"packrat": [packrat_folder(d / "packrat-neg", ["50", "-1.5"])]}},
        ["'import.packrat[0]'", "resnet_latency.csv line 3: latency(avg) -1.5 is negative"],
        reads=("import",),
    ),
    Case(
        "import-nan-latency",
        lambda d: {"import": {"packrat": [packrat_folder(d / "packrat-nan", ["nan"])]}},
        ["resnet_latency.csv line 2: latency(avg) nan is not a finite number"],
        reads=("import",),
    ),
    Case(
        "import-negative-batch-size",
        lambda d: {"import": {"packrat": [packrat_folder(d / "packrat-batch", batch="-4")]}},
        [
            "'import.packrat[0]'",
            "resnet_latency.csv line 2: batch_size -4 is negative",
            "batch sizes and thread counts that are whole numbers >= 1",
        ],
        reads=("import",),
    ),
    Case(
        "topology-negative-node",
        lambda d: {
            "topology": str(_file(d / "neg.lscpu", b"# CPU,Core,Socket,Node\n0,0,0,0\n1,1,0,-1\n"))
        },
        ["config key 'topology':", "neg.lscpu line 3: NUMA node -1 is negative", "allowed: null"],
        reads=("topology",),
    ),
    Case(
        "results-inside-another-results-folder",
        lambda d: {"results": str(earlier_results(d / "earlier") / "run2")},
        ["config key 'results':", "is inside the results folder", "earlier (it holds machine.json"],
        reads=("results", "compare"),  # with compare, the compare check says where results is
    ),
    Case(
        "results-name-too-long",
        {"results": "r" * 300},
        ["'results': 'rrrr", "(300 characters) is a path with a folder name of 300 bytes"],
    ),
    Case(
        "packing-without-sequential",
        {"placements": ["interleave"], "packing": {"enabled": True}},
        ["'packing.enabled': true, but packing predicts from the 'sequential' cells"],
        reads=(
            "optimizations",
            "use_smt",
            "topology",
        ),
    ),
    Case(
        "packing-budget-beyond-topology",
        {"packing": {"budgets": ["node", 4096]}},
        ["'packing.budgets[1]': 4096 is more than the", "allowed: node, all or a core count"],
        reads=(
            "optimizations",
            "placements",
            "use_smt",
            "topology",
        ),
    ),
    Case(
        "packing-optimization-not-in-grid",
        {"packing": {"optimizations": ["compile"]}},
        ["'packing.optimizations[0]': 'compile' is not in optimizations; allowed: none, script"],
        reads=(
            "optimizations",
            "placements",
            "use_smt",
            "topology",
        ),
    ),
]
# The compare check reads import too (compare and import together are refused).
COMPARE_READS = ("compare", "import")
CASES += [
    Case(
        "compare-one-folder",
        {"compare": ["a"]},
        ["'compare': the list has 1 item", "least 2"],
        reads=COMPARE_READS,
    ),
    Case(
        "compare-not-a-result-folder",
        not_a_result_folder,
        ["config key 'compare[1]'", "empty is not a result folder (no tables/cells.csv"],
        reads=COMPARE_READS,
    ),
    Case(
        "compare-nothing-in-common",
        lambda d: {"compare": compared(d / "apart", "resnet18", "resnet50")},
        ["'compare[1]'", "no cell in common", "every cell differs in model (resnet18 vs resnet50)"],
        reads=COMPARE_READS,
    ),
    Case(
        "compare-results-inside-a-compared-folder",
        results_inside,
        ["config key 'results'", "is inside the compared folder", "compared folders are only read"],
        reads=(*COMPARE_READS, "results"),
    ),
    Case(
        "compare-with-import",
        lambda d: {
            "compare": compared(d / "both", "resnet18", "resnet18"),
            "import": {"packrat": [packrat_folder(d / "packrat-both")]},
        },
        ["config key 'compare': given together with import", "allowed: one of them"],
        reads=COMPARE_READS,
    ),
    Case(
        "compare-across-an-unknown-axis",
        lambda d: {"compare": {"runs": compared(d / "x", "resnet18", "resnet18"), "across": ["t"]}},
        ["'compare.across[0]': 't' is not an axis of the grid", "allowed: model, opt, placement"],
        reads=COMPARE_READS,
    ),
]
IDS = [c.id for c in CASES]


def write_config(folder: Path, cases: list[Case]) -> Path:
    """The config file of ``cases`` together (their files made in ``folder``)."""
    over: dict = {}
    for case in cases:
        over.update(case.over(folder) if callable(case.over) else copy.deepcopy(case.over))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(cfg(**over)) + "".join(case.extra for case in cases))
    return path


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_each_bad_input_is_one_problem_naming_its_key(tmp_path, case):
    path = write_config(tmp_path, [case])
    with pytest.raises(validation.ConfigError) as err:
        validation.check(files.load([path]), configfiles=[path], workdir=tmp_path)
    (problem,) = err.value.problems
    line = str(problem)
    assert line.startswith(("config key '", "unknown config key '")), line
    assert problem.key and f"'{problem.key}'" in line
    for text in case.texts:
        assert text in line, f"{text!r} not in {line}"
    assert "\n" not in line


def batches(cases: list[Case]) -> list[list[Case]]:
    """Cases grouped so that no two in a group touch the same key (or a key another's check
    reads): one run of a group reports each case's problem."""
    groups: list[tuple[set, list[Case]]] = []
    for case in cases:
        for used, group in groups:
            if not used & case.keys:
                used |= case.keys
                group.append(case)
                break
        else:
            groups.append((set(case.keys), [case]))
    return [group for _, group in groups]


@pytest.mark.integration
@pytest.mark.parametrize("group", batches(CASES), ids=lambda g: f"{g[0].id}-and-{len(g) - 1}")
def test_snakemake_and_the_checker_give_the_same_lines(tmp_path, group):
    """A real `snakemake -n` and `numa-effects check-config` on the same file print the
    same lines: one per case of the group, each case's texts in exactly one."""
    path = write_config(tmp_path, group)
    lines = dry_run_fails(tmp_path, None, "--configfile", str(path))
    assert checker_lines(tmp_path, str(path)) == (1, lines)
    if len(group) > 1:
        assert lines[0].startswith(f"invalid configuration ({len(group)} problems;"), lines
        lines = lines[1:]
    assert len(lines) == len(group), lines
    for case in group:
        hits = [line for line in lines if all(text in line for text in case.texts)]
        assert len(hits) == 1, (case.id, lines)
    assert not list(tmp_path.rglob("X"))


def test_every_case_is_in_a_batch_and_batches_are_few():
    groups = batches(CASES)
    assert sorted(c.id for g in groups for c in g) == sorted(IDS)
    # compare and results cases share their keys (compare reads import): batches of their own
    assert len(groups) <= 14, [len(g) for g in groups]


@pytest.mark.integration
def test_a_real_run_refuses_the_same_way(tmp_path):
    """Not only -n: the real command exits 1 before any job, with the same line."""
    proc = snakemake(tmp_path, cfg(batch_sizes=[0]), "--cores", "1", "all", check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1
    assert "config key 'batch_sizes[0]': 0 is out of range" in out
    assert "Traceback" not in out and 'File "' not in out
    assert not (tmp_path / "results").exists()


@pytest.mark.integration
def test_invalid_yaml_is_rejected_and_the_checker_says_where(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("models: [resnet18\nbatch_sizes: [1]\n")
    out = "\n".join(dry_run_fails(tmp_path, None, "--configfile", str(bad)))
    assert "not valid JSON or YAML" in out  # Snakemake's own message (it parses config files)
    rc, lines = checker_lines(tmp_path, str(bad))
    assert rc == 1 and len(lines) == 1
    assert f"config file {bad} line 2, column" in lines[0]


def test_the_checker_reads_files_and_dash_dash_config_like_snakemake(tmp_path):
    rc, lines = checker_lines(tmp_path, "config/config.yaml", "--config", "batch_sizes=[1,0]")
    assert rc == 1 and len(lines) == 1 and "'batch_sizes[1]': 0 is out of range" in lines[0]
    # Like Snakemake, the workflow's config/config.yaml (in the working directory) comes
    # first, then each file; a key given twice in one file is refused in either.
    own = write_config(tmp_path / "config", [])
    own.rename(tmp_path / files.WORKFLOW_CONFIGFILE)
    (tmp_path / "more.yaml").write_text("seed: 5\nwarmup: 2\nwarmup: 3\n")
    proc = checker(tmp_path)
    assert proc.returncode == 0 and proc.stdout.startswith("ok: config/config.yaml ("), proc
    rc, lines = checker_lines(tmp_path, str(tmp_path / "more.yaml"))
    assert rc == 1 and lines == [
        f"invalid configuration: config key 'warmup': given twice in config file "
        f"{tmp_path / 'more.yaml'} (lines 2 and 3); only the last would count; allowed: each "
        "key once per file (a later file or --config overrides an earlier file) (every key is "
        "described in config/README.md)"
    ]
    (tmp_path / "more.yaml").write_text("seed: 5\n")
    proc = checker(tmp_path, str(tmp_path / "more.yaml"))
    assert proc.returncode == 0 and proc.stdout.startswith(f"ok: config/config.yaml + {tmp_path}")
    rc, lines = checker_lines(tmp_path, str(tmp_path / "nope.yaml"))
    assert rc == 1 and lines == [
        f"invalid configuration: cannot read config file {tmp_path / 'nope.yaml'}: "
        "No such file or directory (every key is described in config/README.md)"
    ]
    proc = checker(tmp_path, "--list", "models")
    assert proc.stdout.split() == list(models.CLASSIFICATION_MODELS)


@pytest.mark.integration
@pytest.mark.parametrize(
    ("content", "holds"),
    [("- resnet18\n- resnet50\n", "holds a list, not"), ("# nothing yet\n", "holds no keys")],
    ids=["a-list", "only-a-comment"],
)
def test_a_config_file_without_keys_is_refused_by_both(tmp_path, content, holds):
    """Snakemake refuses a config file that is not a mapping (an empty or comment-only one
    too) before the workflow runs, with its own message; the checker refuses it as well."""
    bad = tmp_path / "bad.yaml"
    bad.write_text(content)
    out = "\n".join(dry_run_fails(tmp_path, None, "--configfile", str(bad)))
    assert "keys at top level" in out  # Snakemake's own message
    rc, lines = checker_lines(tmp_path, str(bad))
    assert rc == 1 and len(lines) == 1 and f"config file {bad} {holds}" in lines[0], lines


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        pytest.param('{"cpus": [{"cpu": 0}]}', "malformed topology", id="json-missing-node"),
        pytest.param('{"cpus": [', "is not valid JSON", id="json-truncated"),
        pytest.param(
            '{"cpus": [{"cpu": 0, "node": -1}]}',
            "topo.txt: CPU 0 has NUMA node -1, a negative number",
            id="json-negative-node",
        ),
        pytest.param("# CPU,Core,Socket,Node\n-1,0,0,0\n", "line 2: CPU -1 is negative", id="cpu"),
        pytest.param("CPU,Core\n0,0\n", "no '# CPU,Core", id="lscpu-without-header"),
        pytest.param("", "", id="empty-file"),
        pytest.param(None, "cannot read topology file", id="missing-file"),
    ],
)
def test_malformed_topology_file_is_rejected(tmp_path, content, expected):
    topo = tmp_path / "topo.txt"
    if content is not None:
        topo.write_text(content)
    with pytest.raises(validation.ConfigError) as err:
        validation.check(cfg(topology=str(topo)), workdir=tmp_path)
    (line,) = err.value.lines
    assert line.startswith("config key 'topology': ")
    assert "allowed: null (this machine)" in line
    assert expected in line


@pytest.mark.integration
def test_more_threads_than_one_node_are_skipped_cells_not_an_error(tmp_path):
    """On a 2 x 16-core topology 20 threads do not fit on node 0 alone: the placements that
    need that (remote) are skipped cells (listed in skipped.csv), the grid is valid. 33 threads
    fit nowhere: an error."""
    ok = cfg(topology=str(TWO_NODES), threads=[20], placements=["sequential", "remote"])
    planned = grid.expand(ok, topology.load(TWO_NODES))
    assert planned.skipped and {k.placement for k in planned.skipped} == {"remote"}
    assert dag_planned(tmp_path / "ok", ok).get("cell") == len(planned.cells) > 0
    with pytest.raises(validation.ConfigError) as err:
        validation.check({**ok, "threads": [20, 33]}, workdir=tmp_path)
    (line,) = err.value.lines
    assert "config key 'threads': 33 is more than topology file" in line
    assert "(32 physical cores usable in total on 2 NUMA nodes" in line
    assert "allowed: 1..32" in line


@pytest.mark.integration
def test_values_given_with_dash_dash_config_are_normalised(tmp_path):
    """`--config batch_sizes='[1,8]'` reaches the workflow as strings (Snakemake parses list
    values with YAML's BaseLoader), `use_smt=true` as the string 'true', `seed=0.0` as a
    float: each is taken as the schema's type, for every key alike."""
    proc = snakemake(
        tmp_path,
        cfg(),
        "-n",
        "all",
        "--config",
        "batch_sizes=[1,8.0]",
        "threads=[1]",
        "use_smt=true",
        "seed=0.0",
        "results=./out//",
    )
    out = proc.stdout + proc.stderr
    assert "out/cells/resnet18/none/sequential+smt/t1/bs8/" in out
    assert len({f for f in re.findall(r"output: (\S+/cells/\S+\.json)", out)}) == 4
    outputs = [f for line in re.findall(r"output: (.+)", out) for f in line.split(", ")]
    assert outputs and all(f.startswith("out/") and "//" not in f for f in outputs), outputs


@pytest.mark.integration
def test_cells_that_cannot_fit_this_machine_are_skipped_with_the_estimate(tmp_path):
    """The planner's own estimate and this machine's memory decide which batch is too big."""
    have = memory.machine_bytes(topology.current())
    sizes = [2**k for k in range(17)]
    too_big = [b for b in sizes if memory.estimate("resnet50", b, 224) > have]
    if not too_big:
        pytest.skip("this machine holds even the largest allowed batch")
    config = cfg(models=["resnet50"], image_size=224, batch_sizes=[1, too_big[0]])
    config.update(optimizations=["none"], threads=[1], placements=["sequential"])
    planned = grid.expand(config, topology.current(), have)
    assert [k.batch_size for k in planned.cells] == [1]
    (reason,) = planned.skipped.values()
    assert f"batch {too_big[0]} at 224 x 224" in reason and "more than this machine's" in reason
    assert dag_planned(tmp_path, config).get("cell") == 1


# -- no config value ever reaches a shell unquoted ------------------------------------------------
def workflow_files() -> list[Path]:
    return [REPO / "Snakefile", *sorted((REPO / "workflow" / "rules").glob("*.smk"))]


def test_no_shell_directive_uses_an_unquoted_value():
    """Rules run scripts, not shell commands. If a `shell:` directive is ever added, every
    {placeholder} in it must be quoted with :q."""
    for path in workflow_files():
        text = path.read_text()
        for m in re.finditer(r"^\s*shell:\s*\n((?:\s{8,}.*\n)+)", text, flags=re.M):
            for ph in re.findall(r"(?<!\{)\{([^{}]+)\}(?!\})", m.group(1)):
                assert ph.endswith(":q"), f"{path.name}: unquoted {{{ph}}} in a shell directive"
        assert "shell(" not in text, f"{path.name} calls shell() directly"


def test_name_wildcards_only_match_names():
    """The cell rule's wildcards (from the axis registry) cannot match shell metacharacters or
    path separators."""
    from numa_effects.plan import grid

    text = (REPO / "workflow" / "rules" / "benchmark.smk").read_text()
    assert "**grid_mod.wildcard_constraints()" in text
    constraints = grid.wildcard_constraints()
    assert set(constraints) == {*grid.KEYS, "replicate"}
    for name, rx in constraints.items():
        for bad in ("a/b", "x;rm", "$(id)", "a b", "..", "", "1'"):
            assert not re.fullmatch(rx, bad), (name, bad)
    good = {"model": "resnet50", "opt": "channels_last", "placement": "mem-interleave+smt"}
    for name, value in {**good, "threads": "16", "batch_size": "1024", "replicate": "2"}.items():
        assert re.fullmatch(constraints[name], value), (name, value)


# -- unit tests (no snakemake) --------------------------------------------------------------------
def check(**over):
    config = cfg(**over)
    return validation.check(config), config


def test_checked_in_model_list_equals_torchvision():
    torchvision = pytest.importorskip("torchvision")
    assert list(models.CLASSIFICATION_MODELS) == sorted(
        torchvision.models.list_models(module=torchvision.models)
    )
    assert torchvision.__version__.split("+")[0] == models.TORCHVISION_VERSION


def test_the_registries_are_the_one_source_of_names():
    """The schema file names registries, not their members; the loaded schema has them."""
    raw = yaml.safe_load(schema.SCHEMA_PATH.read_text())["properties"]
    for key in ("models", "optimizations", "placements"):
        assert raw[key]["items"] == {"type": "string", "x-registry": key}
    props = schema.load()["properties"]
    assert props["optimizations"]["items"]["enum"] == list(optimizations.OPTIMIZATIONS)
    # a family (n{cpu}m{mem}) makes the placements a pattern: every fixed name, every member and
    # the name that stands for all members (node-pairs), nothing else
    pattern = props["placements"]["items"]["pattern"]
    fixed = [n for n, e in placement.PLACEMENTS.items() if not e.fields]
    for name in [*fixed, "n0m1", "n12m3", *placement.families()]:
        assert re.fullmatch(pattern, name), name
    assert not re.fullmatch(pattern, "n0m") and not re.fullmatch(pattern, "sequential+smt")
    assert props["models"]["items"]["enum"] == list(models.CLASSIFICATION_MODELS)


def test_a_new_optimization_is_one_registry_entry(monkeypatch):
    new = optimizations.Optimization("bf16", "throwaway", dtype="bfloat16")
    monkeypatch.setitem(optimizations.OPTIMIZATIONS, "bf16", new)
    checked, config = check(optimizations=["none", "bf16"])
    assert config["optimizations"] == ["none", "bf16"] and checked.topology.cpus
    assert "bf16" in schema.load()["properties"]["optimizations"]["items"]["enum"]
    # the README's row lists the registry's names, in its order
    (row,) = [r for r in cli.markdown("grid").splitlines() if r.startswith("| `optimizations`")]
    assert f"one of {', '.join(optimizations.OPTIMIZATIONS)} |" in row
    with pytest.raises(validation.ConfigError, match=r"'bf17'.*\(did you mean 'bf16'\?\)"):
        check(optimizations=["bf17"])


def test_a_new_placement_family_is_one_registry_entry(monkeypatch):
    def plan(topo, t, use_smt, cpu, mem):
        return placement._make(
            topo, f"n{cpu}m{mem}", t, topo.node_cpus(cpu)[:t], "bind", [mem], use_smt
        )

    family = placement.Placement("n{cpu}m{mem}", plan, "CPUs of node cpu, memory on node mem")
    monkeypatch.setitem(placement.PLACEMENTS, family.name, family)
    _, config = check(placements=["sequential", "n0m1", "n1m0"])
    assert config["placements"] == ["sequential", "n0m1", "n1m0"]
    pattern = schema.load()["properties"]["placements"]["items"]["pattern"]
    assert re.fullmatch(pattern, "n0m1") and not re.fullmatch(pattern, "n0mx")
    with pytest.raises(validation.ConfigError) as err:
        check(placements=["n0mx", "n0m1+smt"])
    assert [p.key for p in err.value.problems] == ["placements[0]", "placements[1]"]
    assert "n{cpu}m{mem}" in err.value.lines[0]


def test_validation_never_imports_torch():
    code = (
        "import sys; from numa_effects import config as validation; "
        "validation.check({'models': ['resnet18'], 'batch_sizes': [1], "
        "'optimizations': ['none'], 'threads': [1], 'placements': ['sequential']}); "
        "assert 'torch' not in sys.modules, 'torch imported'"
    )
    subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        env={"PYTHONPATH": str(REPO / "workflow" / "scripts"), "PATH": "/usr/bin:/bin"},
    )


def test_the_plans_own_defaults_are_the_schemas():
    """The plan reads configs the check did not fill (a nested key left out, a test's): its
    fallbacks are the schema's defaults, which config/README.md shows."""
    props = schema.load()["properties"]
    assert {k: props[k]["default"] for k in settings.DEFAULTS} == settings.DEFAULTS
    assert props["cell_timeout_margin_s"]["default"] == settings.TIMEOUT_MARGIN_S
    assert props["replicates"]["default"] == grid.DEFAULT_REPLICATES
    two = props["two_stage"]["properties"]
    got = stages.settings({"replicates": 2, "two_stage": {"enabled": True}})
    assert [got["target_pct"], got["cap"]] == [two["target_pct"]["default"], two["cap"]["default"]]


def test_defaults_are_filled_and_strings_normalised():
    _, config = check(batch_sizes=["1", " 8"], topology="null")
    assert config["batch_sizes"] == [1, 8]
    assert config["topology"] is None
    assert config["max_memory_mb"] is None
    assert config["results"] == "results"


def test_valid_tiny_config_passes_and_returns_this_machine():
    checked, config = check()
    assert checked.topology.cpus and checked.config is config


def test_failed_keys_come_from_the_problems_not_their_text():
    """A bad ``results`` is not also checked against the file system; a bad ``topology``
    skips the thread check; problems say which key they are about."""
    with pytest.raises(validation.ConfigError) as err:
        check(results="/etc;x", topology=5, threads=[10**6])
    assert [p.key for p in err.value.problems] == ["results", "topology"]
    assert validation.Problem("a.b[0]", "x").top == "a"
    assert str(validation.Problem("seed", "is bad")) == "config key 'seed': is bad"


def test_describe_reads_like_english():
    props = schema.load()["properties"]
    assert schema.describe(props["batch_sizes"]) == (
        "a list (non-empty, no duplicates) of integers >= 1 and <= 65536"
    )
    assert schema.describe(props["max_seconds_per_cell"]) == "a number > 0 and <= 86400"
    assert schema.describe(props["threads"]).startswith("auto, or a list")
    assert schema.describe(props["optimizations"]).endswith(
        "of one of none, script, channels_last, compile, bf16, bf16_aot, bf16_eager, int8, "
        "int8_bf16"
    )
    assert "--list models" in schema.describe(props["models"])


def test_the_readme_key_tables_are_the_schema():
    text = cli.README_PATH.read_text()
    assert cli.update(text) == text, (
        "config/README.md's key tables are stale: regenerate with "
        "numa-effects check-config --readme"
    )
    schema_keys = [path for path, _, _ in schema.properties(schema.load())]
    assert all(f"| `{key}` |" in text for key in schema_keys)
    assert cli.sections(schema.load()) == [
        "grid",
        "measurement",
        "packing",
        "deploy",
        "compare",
        "failure handling",
    ]


def test_the_readme_generator_fails_without_its_markers():
    with pytest.raises(ValueError, match="config-keys: grid"):
        cli.update("# Configuration\n")


def test_a_key_given_twice_is_named_with_its_file_and_lines(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text(
        "seed: 1\npacking:\n  enabled: true\n  budgets: [node]\n  enabled: false\n"
        "import: {packrat: [a], packrat: [b]}\nseed: 2\nseed: 3\n"
    )
    problems = files.duplicate_problems([f, str(f), f"{tmp_path}/./c.yaml"])  # read once
    assert [(p.key, str(p).split(" in config file")[0]) for p in problems] == [
        ("packing.enabled", "config key 'packing.enabled': given twice"),
        ("import.packrat", "config key 'import.packrat': given twice"),
        ("seed", "config key 'seed': given 3 times"),
    ]
    assert "(lines 3 and 5)" in str(problems[0])
    assert "(line:column 6:10 and 6:24)" in str(problems[1])
    assert "(lines 1, 7 and 8)" in str(problems[2])
    j = tmp_path / "c.json"
    j.write_text('{\n\t"seed": 1,\n\t"seed": 2\n}\n')
    assert [str(p).split("; only")[0] for p in files.duplicate_problems([j])] == [
        f"config key 'seed': given twice in config file {j} (lines 2 and 3)"
    ]
    (tmp_path / "ok.yaml").write_text("seed: 1\nwarmup: 1\n")
    assert files.duplicate_problems(["ok.yaml", "missing.yaml"], tmp_path) == []


def test_impossible_packrat_values_are_named_by_file_and_line_and_capped(tmp_path):
    bad = ["-1", "nan", "inf", "0", "x", "", "-2", "-3"]
    folder = packrat_folder(tmp_path / "p", bad, rows=8)
    problems = paths.import_problems({"import": {"packrat": [folder]}})
    lines = [str(p) for p in problems]
    assert {p.key for p in problems} == {"import.packrat[0]"}
    assert len(lines) == paths.MAX_ROWS_NAMED + 1, lines
    lat = f"{folder}/resnet_latency.csv"
    for line, what in [
        (2, "latency(avg) -1 is negative"),
        (3, "latency(avg) nan is not a finite number"),
        (4, "latency(avg) inf is not a finite number"),
        (5, "latency(avg) 0 is zero"),
        (6, "latency(avg) 'x' is not a number"),
    ]:
        assert f"'import.packrat[0]': {lat} line {line}: {what}; allowed:" in "\n".join(lines)
    assert f"{lat}: 3 more impossible values after line 6" in lines[-1]
    from numa_effects.tables import packrat

    with pytest.raises(packrat.PackratError, match=r"line 2: latency\(avg\) -1 is negative"):
        packrat.read(folder)
    empty = tmp_path / "e"
    packrat_folder(empty, rows=0)
    (empty / "resnet_latency.csv").write_text("")
    (problem, other) = paths.import_problems({"import": {"packrat": [str(empty)]}})
    assert str(problem).endswith(
        f"{empty}/resnet_latency.csv is empty; allowed: PackRat results "
        "folders (or one of their CSVs) holding resnet_latency.csv and "
        "resnet_throughput.csv"
    )
    assert "resnet_throughput.csv has no rows after its header" in str(other)


def test_packing_checks_name_the_key_and_settings_trust_them():
    topo = topology.load(TWO_NODES)
    config = cfg(threads=[1, 2], packing={"budgets": ["node", 32, 33], "optimizations": ["none"]})
    assert [str(p) for p in validation.packing_problems(config, topo)] == [
        "config key 'packing.budgets[2]': 33 is more than the 32 cores of this machine; "
        "allowed: node, all or a core count between 1 and 32"
    ]
    config["packing"]["budgets"] = ["node", 32]
    s = packing.settings(config, topo, [1, 2])
    assert s["enabled"] and s["budgets"] == {16: ["node"], 32: ["32"]}


def test_the_snakefile_names_the_workflow_configfile():
    text = (REPO / "Snakefile").read_text()
    assert f'configfile: "{files.WORKFLOW_CONFIGFILE}"' in text


def test_values_are_normalised_by_schema_type_for_every_key():
    sch = schema.load()
    config = cfg(
        batch_sizes=["1", 2.0, " 8 "],
        threads=[1.0],
        seed=0.0,
        image_size="32",
        use_smt="True",
        max_memory_mb="none",
        max_seconds_per_cell="2.5",
        results="./out//x/",
    )
    schema.normalize(config, sch)
    assert config["batch_sizes"] == [1, 2, 8] and all(type(b) is int for b in config["batch_sizes"])
    assert config["threads"] == [1] and type(config["threads"][0]) is int
    assert type(config["seed"]) is int and type(config["image_size"]) is int
    assert config["use_smt"] is True and config["max_memory_mb"] is None
    assert config["max_seconds_per_cell"] == 2.5
    assert config["results"] == "out/x"
    for b in ("true", "false", "True", "False"):
        assert schema.coerce(b, sch["properties"]["use_smt"]) is (b.lower() == "true")
    assert schema.coerce(1.5, sch["properties"]["seed"]) == 1.5  # refused later
    assert schema.coerce(True, sch["properties"]["seed"]) is True  # not 1


def test_every_number_in_the_schema_has_an_upper_bound():
    """Numbers no machine could run are refused by the schema: every integer or number key,
    nested ones included, has an upper bound (threads: checked against the machine instead)."""

    def unbounded(key, prop):
        for branch in prop.get("oneOf", [prop]):
            leaf = branch.get("items", branch)
            types = leaf.get("type")
            types = set(types) if isinstance(types, list) else {types}
            bounded = "maximum" in leaf or "exclusiveMaximum" in leaf
            if key != "threads" and types & {"integer", "number"} and not bounded:
                yield key
            for sub, sub_prop in branch.get("properties", {}).items():
                yield from unbounded(f"{key}.{sub}", sub_prop)

    props = schema.load()["properties"]
    assert [k for key, prop in props.items() for k in unbounded(key, prop)] == []


@pytest.mark.parametrize(
    ("results", "ok"),
    [
        ("results", True),
        ("./results/", True),
        ("../sibling", True),
        ("/scratch/someone/run1", True),
        ("/tmp/x", True),
        (".", False),
        ("..", False),
        ("/", False),
        ("/etc", False),
        ("/etc/x", False),
        ("/proc/self", False),
        ("config", False),
        ("tests/out", False),
        (".snakemake", False),
        (".git/x", False),
    ],
)
def test_results_folder_rules(tmp_path, results, ok):
    work = tmp_path / "work"
    work.mkdir()
    for d in ("config", "tests", ".git"):
        (work / d).mkdir()
    problems = [str(p) for p in paths.results_problems(results, workdir=work, workflow_dir=work)]
    assert (problems == []) is ok, problems
    if not ok:
        (line,) = problems
        assert line.startswith(f"config key 'results': {results!r} is ")


def test_results_below_a_file_or_through_a_symlink_is_refused(tmp_path):
    (tmp_path / "afile").write_text("x")
    (tmp_path / "link").symlink_to("/etc")
    for bad, why in (
        ("afile", "an existing file"),
        ("afile/sub", "which is a file"),
        ("link/x", "system"),
    ):
        (problem,) = paths.results_problems(bad, workdir=tmp_path, workflow_dir=REPO)
        assert why in str(problem), problem


def test_results_names_the_file_system_cannot_hold_are_refused(tmp_path):
    def why(results):
        return [str(p) for p in paths.results_problems(results, tmp_path, REPO)]

    assert why("r" * 255) == []  # the longest name allowed
    (line,) = why(f"a/{'r' * 256}/b")
    assert "a folder name of 256 bytes (rrrrrrrrrrrr...), longer than the 255" in line
    assert line.startswith("config key 'results': 'a/rrrr") and len(line) < 1000
    (line,) = why("/".join(["d" * 200] * 19))
    assert "bytes long as an absolute path, leaving no room for the files a run" in line


def test_results_inside_a_results_folder_is_refused_and_a_rerun_is_not(tmp_path):
    earlier = earlier_results(tmp_path / "earlier")
    assert paths.results_problems(str(earlier), tmp_path, REPO) == []  # the same run again
    (tmp_path / "link").symlink_to(earlier)
    for inside in ("earlier/run2", "link/run2", "earlier/cells/x"):
        (problem,) = paths.results_problems(inside, tmp_path, REPO)
        folder = tmp_path / inside.split("/")[0]  # as given: a link is named as the link
        assert f"inside the results folder {folder} (it holds machine.json" in str(problem)
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "machine.json").write_text("{}")  # a topology file, no results
    assert paths.results_problems("notes/run", tmp_path, REPO) == []
    assert paths.results_problems("earlier/run2", tmp_path, REPO, nested=False) == []


def test_every_tracked_top_level_folder_is_protected():
    out = subprocess.run(
        ["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    folders = {line.split("/")[0] for line in out.splitlines() if "/" in line}
    assert folders <= set(paths.WORKFLOW_DIRS), folders - set(paths.WORKFLOW_DIRS)


# -- memory estimate and grid manifest ------------------------------------------------------------
def test_memory_estimate_scales_with_batch_and_image_area():
    params, layer = memory.FOOTPRINT["resnet50"]
    assert memory.estimate("resnet50", 1, 224) == params * 4 + layer
    assert memory.estimate("resnet50", 8, 448) == params * 4 + 8 * layer * 4
    assert memory.estimate("regnet_x_400mf", 1, 224) is None  # not in the table: never skipped
    need = memory.estimate("resnet18", 64, 224)
    assert memory.skip_reason("resnet18", 64, 224, need) is None
    assert "more than this machine's" in memory.skip_reason("resnet18", 64, 224, need - 1)
    assert memory.skip_reason("resnet18", 64, 224, None) is None


def test_memory_table_matches_a_meta_device_forward_pass():
    pytest.importorskip("torchvision")
    from footprint import footprint

    for name in ("resnet18", "resnet50", "mobilenet_v3_small"):
        assert footprint(name) == memory.FOOTPRINT[name], name
    assert set(memory.FOOTPRINT) <= set(models.CLASSIFICATION_MODELS)


def test_memory_skips_only_when_planning_for_this_machine():
    assert memory.machine_bytes(topology.current()) > 0
    assert memory.machine_bytes(topology.load(TWO_NODES)) is None


def test_manifest_name_changes_with_the_grid_only(tmp_path):
    topo = topology.load(TWO_NODES)
    a = manifest.content(grid.expand(cfg(), topo), 1)
    same = manifest.content(grid.expand(cfg(seed=5, warmup=3), topo), 1)
    more = manifest.content(grid.expand(cfg(batch_sizes=[1, 2, 4]), topo), 1)
    fewer = manifest.content(grid.expand(cfg(batch_sizes=[1]), topo), 1)
    reps = manifest.content(grid.expand(cfg(), topo), 2)
    names = {manifest.path("r", c) for c in (a, more, fewer, reps)}
    assert manifest.path("r", a) == manifest.path("r", same) and len(names) == 4
    old = tmp_path / manifest.path("r", a)
    manifest.write(old, a)
    new = tmp_path / manifest.path("r", more)
    assert manifest.write(new, more) == [old]
    assert not old.exists() and yaml.safe_load(new.read_text()) == more


# -- targets: refused before Snakemake starts, so before any estimate of the run -----------------
@pytest.mark.parametrize(
    ("targets", "text"),
    [
        (["all", "alll"], "target 'alll' is not a rule (did you mean 'all'?); allowed: all, "),
        (["compare"], "target 'compare' needs config key 'compare' (compare result folders"),
    ],
    ids=["misspelled", "compare-without-its-key"],
)
def test_a_bad_target_is_one_line_before_any_budget_or_estimate(tmp_path, targets, text):
    """The real entry of `make run` (check_config.py --run): Snakemake would print the plan's
    budget and estimate lines at parse time, then refuse the target; here nothing starts."""
    good = write_config(tmp_path, [])
    argv = ["--run", "--profile", "profiles/local", "--cores", "1", *targets, "-n"]
    proc = subprocess.run(
        [sys.executable, "workflow/scripts/check_config.py", *argv, "--configfile", str(good)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={"PATH": os.environ["PATH"]},
        timeout=300,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    (line,) = [ln for ln in out.splitlines() if ln.strip()]
    assert line.startswith("invalid configuration: ") and text in line, line
    assert "budget" not in out.lower() and "estimated" not in out.lower()


def test_bare_snakemake_prints_the_budget_only_when_all_runs(tmp_path):
    """Without make: Snakemake refuses a misspelled target after reading the Snakefile; the
    budget's and estimate's lines come from rule all's input, so they are printed for all
    (one line each) and not before the refusal."""
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    bad = snakemake(tmp_path / "bad", cfg, "-n", "--cores", "1", "alll", check=False)
    said = bad.stdout + bad.stderr
    assert bad.returncode != 0 and "No rule to produce alll" in said
    assert "budget" not in said.lower() and "estimated" not in said
    good = snakemake(tmp_path / "good", cfg, "-n", "--cores", "1", "all")
    assert (good.stdout + good.stderr).count("numa-effects: the whole run is estimated at") == 1


def test_targets_are_rules_of_the_workflow_or_output_files():
    """Every `rule NAME:` of the rule files is a target; a plot rule by its family; a path is
    an output file, left to Snakemake."""
    from numa_effects.config import command

    text = "\n".join(p.read_text() for p in workflow_files())
    named = re.findall(r"^(?:rule|checkpoint) (\w+):", text, re.M)
    ok = [n for n in named if n not in ("compare", "compare_tables", "compare_page")]
    ok += ["plot_latency", "results/tables/cells.csv"]
    assert command.target_problems(ok, cfg()) == []
    assert command.target_problems(["compare"], {"compare": ["a", "b"]}) == []
    (problem,) = command.target_problems(["seed=1"], cfg())
    assert "allowed: --config seed=1" in str(problem)
