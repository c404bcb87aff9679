"""Bad input is rejected before any job starts, with a message naming the key and the allowed
values, by a real `snakemake -n` (exit status non-zero, nothing created); plus unit tests of
numa_effects.validation and the guards that keep config values away from any shell."""

from __future__ import annotations

import copy
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO, TINY_CONFIG, jobs_planned, snakemake

from numa_effects import grid, models, optimizations, placement, topology, validation

TOPO = REPO / "tests" / "fixtures" / "topology"
TWO_NODES = TOPO / "2x16-nosmt-alternating.lscpu-p.txt"  # 2 nodes x 16 cores, no SMT


def dry_run_fails(tmp_path: Path, config: dict | None, *extra: str) -> str:
    """Run `snakemake -n all`; assert it fails before any job and return its output."""
    proc = snakemake(tmp_path, config, "-n", "all", *extra, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert "Job stats" not in out and "Building DAG" not in out, out
    assert not (tmp_path / "results").exists()
    return out


def cfg(**over) -> dict:
    c = copy.deepcopy(TINY_CONFIG)
    c.update(over)
    return c


# -- snakemake -n: one case per kind of bad input -------------------------------------------------
@pytest.mark.integration
@pytest.mark.parametrize(
    ("over", "expected"),
    [
        pytest.param(
            {"models": ["resnet5"]},
            ["config key 'models'", "'resnet5'", "did you mean 'resnet50'", "resnet18, resnet34"],
            id="unknown-model",
        ),
        pytest.param(
            {"optimizations": ["none", "scirpt"]},
            ["config key 'optimizations'", "'scirpt'", "none, script, channels_last, compile"],
            id="unknown-optimization",
        ),
        pytest.param(
            {"placements": ["sequentail"]},
            ["config key 'placements'", "sequential, interleave, remote, mem-interleave"],
            id="unknown-placement",
        ),
        pytest.param(
            {"batch_sizes": [0]},
            ["config key 'batch_sizes[0]': 0 is out of range", "integer >= 1"],
            id="batch-zero",
        ),
        pytest.param(
            {"batch_sizes": [4, -2]},
            ["config key 'batch_sizes[1]': -2 is out of range", "integer >= 1"],
            id="batch-negative",
        ),
        pytest.param(
            {"batch_sizes": [1.5]},
            ["config key 'batch_sizes[0]': 1.5 is a number", "integer >= 1"],
            id="batch-non-integer",
        ),
        pytest.param(
            {"batch_sizes": ["eight"]},
            ["config key 'batch_sizes[0]': 'eight' is a string", "integer >= 1"],
            id="batch-string",
        ),
        pytest.param(
            {"batch_sizes": "16"},
            ["config key 'batch_sizes': '16' is a string", "a list (non-empty, no duplicates)"],
            id="batch-not-a-list",
        ),
        pytest.param(
            {"models": []},
            ["config key 'models': the list is empty", "non-empty"],
            id="empty-list",
        ),
        pytest.param(
            {"batch_sizes": [1, 4, 1]},
            ["config key 'batch_sizes': 1 appears more than once"],
            id="duplicates",
        ),
        pytest.param(
            {"optimizations": ["script", "script"]},
            ["config key 'optimizations': 'script' appears more than once"],
            id="duplicate-names",
        ),
        pytest.param(
            {"threads": [1, 4096]},
            ["config key 'threads': 4096 is more than this machine can ever run", "allowed: 1.."],
            id="threads-beyond-machine",
        ),
        pytest.param(
            {"threads": "all"},
            ["config key 'threads': 'all' is not allowed", "auto, or a list"],
            id="threads-bad-word",
        ),
        pytest.param(
            {"batch_size": [1]},
            ["unknown config key 'batch_size'", "did you mean 'batch_sizes'", "allowed keys:"],
            id="unknown-top-level-key",
        ),
        pytest.param(
            {"max_seconds_per_cell": 0},
            ["config key 'max_seconds_per_cell': 0 is out of range", "a number > 0"],
            id="budget-zero",
        ),
        pytest.param(
            {"max_seconds_per_cell": -5},
            ["config key 'max_seconds_per_cell': -5 is out of range", "a number > 0"],
            id="budget-negative",
        ),
        pytest.param(
            {"max_memory_mb": 0},
            ["config key 'max_memory_mb': 0 is out of range", "integer >= 256 or null"],
            id="memory-limit",
        ),
        pytest.param(
            {"seed": 2**70},
            ["config key 'seed'", "out of range", "<= 4294967295"],
            id="seed-too-large",
        ),
        pytest.param(
            {"min_iterations": 50, "max_iterations": 10},
            ["config key 'min_iterations': 50 is more than max_iterations (10)"],
            id="min-above-max",
        ),
        pytest.param(
            {"models": ["resnet18; touch INJECTED"]},
            ["config key 'models'", "'resnet18; touch INJECTED' is not a torchvision"],
            id="shell-metacharacters-in-name",
        ),
        pytest.param(
            {"placements": ["sequential$(touch INJECTED)"]},
            ["config key 'placements'", "sequential, interleave"],
            id="shell-metacharacters-in-placement",
        ),
        pytest.param(
            {"results": "out; touch INJECTED"},
            ["config key 'results'", "no spaces, quotes or shell metacharacters"],
            id="shell-metacharacters-in-path",
        ),
    ],
)
def test_bad_config_is_rejected_by_a_dry_run(tmp_path, over, expected):
    out = dry_run_fails(tmp_path, cfg(**over))
    assert "invalid configuration" in out
    for text in expected:
        assert text in out, f"{text!r} not in:\n{out}"
    assert not list(tmp_path.rglob("INJECTED"))


@pytest.mark.integration
def test_every_problem_is_reported_at_once(tmp_path):
    out = dry_run_fails(
        tmp_path, cfg(models=["resnet5"], batch_sizes=[0], max_seconds_per_cell=0, typo=1)
    )
    assert "(4 problems)" in out
    for key in ("'models'", "'batch_sizes'", "'max_seconds_per_cell'", "'typo'"):
        assert key in out


@pytest.mark.integration
def test_a_real_run_refuses_the_same_way(tmp_path):
    """Not only -n: the real command exits non-zero before any job, with the same message."""
    proc = snakemake(tmp_path, cfg(batch_sizes=[0]), "--cores", "1", "all", check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "config key 'batch_sizes[0]': 0 is out of range" in out
    assert not (tmp_path / "results").exists()


@pytest.mark.integration
def test_invalid_yaml_is_rejected_and_the_checker_says_where(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("models: [resnet18\nbatch_sizes: [1]\n")
    out = dry_run_fails(tmp_path, None, "--configfile", str(bad))
    assert "not valid JSON or YAML" in out  # Snakemake's own message (it parses config files)
    check = subprocess.run(
        [sys.executable, "-m", "numa_effects.validation", str(bad)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={"PYTHONPATH": str(REPO / "workflow" / "scripts"), "PATH": "/usr/bin:/bin"},
    )
    assert check.returncode == 1
    assert f"config file {bad} line 2, column" in check.stderr


@pytest.mark.integration
def test_a_config_file_that_is_not_a_mapping_is_rejected(tmp_path):
    bad = tmp_path / "list.yaml"
    bad.write_text("- resnet18\n- resnet50\n")
    out = dry_run_fails(tmp_path, None, "--configfile", str(bad))
    assert "keys at top level" in out


@pytest.mark.integration
@pytest.mark.parametrize(
    ("content", "expected"),
    [
        pytest.param('{"cpus": [{"cpu": 0}]}', "malformed topology", id="json-missing-node"),
        pytest.param('{"cpus": [', "is not valid JSON", id="json-truncated"),
        pytest.param("CPU,Core\n0,0\n", "no '# CPU,Core", id="lscpu-without-header"),
        pytest.param("", "", id="empty-file"),
    ],
)
def test_malformed_topology_file_is_rejected(tmp_path, content, expected):
    topo = tmp_path / "topo.txt"
    topo.write_text(content)
    out = dry_run_fails(tmp_path, cfg(topology=str(topo)))
    assert "config key 'topology'" in out
    assert "allowed: null (this machine)" in out
    assert expected in out


@pytest.mark.integration
def test_missing_topology_file_is_rejected(tmp_path):
    out = dry_run_fails(tmp_path, cfg(topology=str(tmp_path / "nope.json")))
    assert "config key 'topology': cannot read topology file" in out


@pytest.mark.integration
def test_more_threads_than_one_node_are_skipped_cells_not_an_error(tmp_path):
    """On a 2 x 16-core topology 20 threads do not fit on node 0 alone: the placements that
    need that (remote) are skipped cells (listed in skipped.csv), the grid is valid. 33 threads
    fit nowhere: an error."""
    ok = cfg(topology=str(TWO_NODES), threads=[20], placements=["sequential", "remote"])
    planned = grid.expand(ok, topology.load(TWO_NODES))
    assert planned.skipped and {k.placement for k in planned.skipped} == {"remote"}
    proc = snakemake(tmp_path / "ok", ok, "-n", "all")
    assert jobs_planned(proc).get("cell") == len(planned.cells) > 0
    out = dry_run_fails(tmp_path / "bad", {**ok, "threads": [20, 33]})
    assert "config key 'threads': 33 is more than topology file" in out
    assert "(32 physical cores usable in total on 2 NUMA nodes" in out
    assert "allowed: 1..32" in out


@pytest.mark.integration
def test_numbers_given_with_dash_dash_config_are_accepted(tmp_path):
    """`--config batch_sizes='[1,8]'` reaches the workflow as strings (Snakemake parses list
    values with YAML's BaseLoader): digit strings are taken as integers, as documented."""
    proc = snakemake(tmp_path, cfg(), "-n", "all", "--config", "batch_sizes=[1,8]", "threads=[1]")
    assert jobs_planned(proc).get("cell") == 4
    assert "bs8.json" in proc.stdout + proc.stderr


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
    """The cell rule's wildcards cannot match shell metacharacters or path separators."""
    text = (REPO / "workflow" / "rules" / "benchmark.smk").read_text()
    for wc in ("model", "opt", "placement", "threads", "batch_size"):
        assert re.search(rf"\b{wc}=r\"[^\"]+\"", text), f"no wildcard constraint for {wc}"


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


def test_schema_enums_match_the_registries():
    schema = validation.load_schema()
    props = schema["properties"]
    assert props["optimizations"]["items"]["enum"] == list(optimizations.OPTIMIZATIONS)
    assert props["placements"]["items"]["enum"] == list(placement.PLACEMENTS)


def test_validation_never_imports_torch():
    code = (
        "import sys; from numa_effects import validation; "
        "validation.check({'models': ['resnet18'], 'batch_sizes': [1], "
        "'optimizations': ['none'], 'threads': [1], 'placements': ['sequential']}); "
        "assert 'torch' not in sys.modules, 'torch imported'"
    )
    subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        env={"PYTHONPATH": str(REPO / "workflow" / "scripts"), "PATH": "/usr/bin:/bin"},
    )


def test_defaults_are_filled_and_strings_normalised():
    _, config = check(batch_sizes=["1", " 8"], topology="null")
    assert config["batch_sizes"] == [1, 8]
    assert config["topology"] is None
    assert config["max_memory_mb"] is None
    assert config["results"] == "results"


def test_valid_tiny_config_passes_and_returns_this_machine():
    topo, _ = check()
    assert topo.cpus


def test_booleans_are_not_integers():
    with pytest.raises(validation.ConfigError, match=r"'batch_sizes\[0\]': true is a boolean"):
        check(batch_sizes=[True])


def test_nested_import_key_errors_are_named():
    with pytest.raises(validation.ConfigError, match="unknown config key 'import.foo'"):
        check(**{"import": {"packrat": ["x"], "foo": 1}})


def test_describe_reads_like_english():
    schema = yaml.safe_load(validation.SCHEMA_PATH.read_text())["properties"]
    assert validation.describe(schema["batch_sizes"]) == (
        "a list (non-empty, no duplicates) of integers >= 1 and <= 65536"
    )
    assert validation.describe(schema["max_seconds_per_cell"]) == "a number > 0 and <= 86400"
    assert validation.describe(schema["threads"]).startswith("auto, or a list")
