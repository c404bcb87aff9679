"""Bad input is rejected before any job starts: exit status 1, one line per problem naming the
full key path and what is allowed, never a traceback, nothing created, by a real
`snakemake -n` (one case per class of bad input) and, with the same lines, by
`python -m numa_effects.config`; plus unit tests of numa_effects.config (message
variants, normalisation, the results folder), numa_effects.plan.memory and
numa_effects.plan.manifest,
and the guards that keep config values away from any shell."""

from __future__ import annotations

import copy
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO, TINY_CONFIG, jobs_planned, snakemake

from numa_effects import config as validation
from numa_effects.plan import grid, manifest, memory, models, optimizations, placement, topology

TOPO = REPO / "tests" / "fixtures" / "topology"
TWO_NODES = TOPO / "2x16-nosmt-alternating.lscpu-p.txt"  # 2 nodes x 16 cores, no SMT
# Lines Snakemake prints before it reads the workflow (not ours).
BANNERS = ("Using workflow specific profile",)


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


def checker_lines(tmp_path: Path, *args: str) -> tuple[int, list[str]]:
    """`python -m numa_effects.config` on the same input, as a user would run it."""
    proc = subprocess.run(
        [sys.executable, "-m", "numa_effects.config", *args, "--directory", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={"PYTHONPATH": str(REPO / "workflow" / "scripts"), "PATH": os.environ["PATH"]},
    )
    assert "Traceback" not in proc.stdout + proc.stderr
    return proc.returncode, [line for line in proc.stderr.splitlines() if line.strip()]


def cfg(**over) -> dict:
    c = copy.deepcopy(TINY_CONFIG)
    c.update(over)
    return c


# -- snakemake -n: one case per class of bad input ------------------------------------------------
# (case id, config overrides or a callable(tmp_path) -> overrides, texts the one line must hold)
CLASSES = [
    ("out-of-range", {"batch_sizes": [4, 0]}, ["'batch_sizes[1]': 0 is out of range", ">= 1"]),
    ("wrong-type", {"batch_sizes": [1.5]}, ["'batch_sizes[0]': 1.5 is a number", "an integer"]),
    (
        "above-upper-bound",
        {"batch_sizes": [1099511627776]},
        ["'batch_sizes[0]': 1099511627776 is out of range", "<= 65536"],
    ),
    ("image-size-bound", {"image_size": 100000}, ["'image_size': 100000 is out of range", "16384"]),
    (
        "integral-float-checked-as-int",
        {"threads": [1000.0]},
        ["'threads': 1000 is more than this machine can ever run", "allowed: 1.."],
    ),
    ("not-finite", {"max_seconds_per_cell": math.nan}, ["'max_seconds_per_cell': nan is not a"]),
    ("duplicate-after-normalising", {"batch_sizes": [1, 1.0]}, ["'batch_sizes': 1 appears"]),
    ("unknown-key", {"batch_size": [1]}, ["unknown config key 'batch_size'", "'batch_sizes'?"]),
    ("unknown-nested-key", {"import": {"packrat": ["x"], "foo": 1}}, ["'import.foo'"]),
    (
        "unknown-name-short-list",
        {"placements": ["sequentail"]},
        ["'placements[0]': 'sequentail'", "sequential, interleave, remote, mem-interleave"],
    ),
    (
        "unknown-name-long-list",
        {"models": ["resnet18", "resnet5"]},
        ["'models[1]': 'resnet5'", "nearest: resnet50", "--list models"],
    ),
    ("min-above-max", {"min_iterations": 50, "max_iterations": 10}, ["'min_iterations': 50"]),
    ("shell-characters", {"results": "out; touch X"}, ["'results'", "no spaces, quotes"]),
    ("results-system-folder", {"results": "/etc"}, ["'results': '/etc' is a system folder"]),
    ("results-inside-system", {"results": "/usr/local/x"}, ["'results'", "inside a system"]),
    ("results-root", {"results": "/"}, ["'results': '/' is the root folder"]),
    ("results-holds-workdir", {"results": ".."}, ["'results': '..' is the working directory"]),
    ("results-snakemake", {"results": ".snakemake/x"}, ["inside one of the workflow's own"]),
    (
        "results-workflow-folder",
        {"results": str(REPO / "workflow" / "out")},
        ["inside one of the workflow's own folders"],
    ),
    (
        "results-is-a-file",
        lambda d: {"results": str(_file(d / "afile", b"x"))},
        ["is an existing file, not a folder"],
    ),
    (
        "topology-not-text",
        lambda d: {"topology": str(_file(d / "topo.bin", bytes(range(256)) * 4))},
        ["config key 'topology': cannot read topology file", "allowed: null (this machine)"],
    ),
    (
        "import-folder-missing",
        lambda d: {"import": {"packrat": [str(d / "nope")]}},
        ["config key 'import.packrat[0]'", "not found", "allowed: PackRat results folders"],
    ),
]


def _file(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


@pytest.mark.integration
@pytest.mark.parametrize(
    ("over", "expected"), [c[1:] for c in CLASSES], ids=[c[0] for c in CLASSES]
)
def test_bad_input_is_one_line_naming_the_key(tmp_path, capsys, over, expected):
    """Snakemake and the checker (`python -m numa_effects.config`, its main() here; run as
    a command by the tests below) print the same single line."""
    over = over(tmp_path) if callable(over) else over
    lines = dry_run_fails(tmp_path, cfg(**over))
    assert len(lines) == 1, lines
    assert lines[0].startswith("invalid configuration: config key '") or lines[0].startswith(
        "invalid configuration: unknown config key '"
    ), lines
    for text in expected:
        assert text in lines[0], f"{text!r} not in {lines[0]}"
    assert not list(tmp_path.rglob("X"))
    capsys.readouterr()
    rc = validation.main([str(tmp_path / "config.yaml"), "--directory", str(tmp_path)])
    assert (rc, capsys.readouterr().err.splitlines()) == (1, lines)


@pytest.mark.integration
def test_every_problem_is_reported_at_once(tmp_path):
    lines = dry_run_fails(
        tmp_path, cfg(models=["resnet5"], batch_sizes=[0], max_seconds_per_cell=0, typo=1)
    )
    assert lines[0].startswith("invalid configuration (4 problems;")
    assert len(lines) == 5
    for key in ("'models[0]'", "'batch_sizes[0]'", "'max_seconds_per_cell'", "'typo'"):
        assert sum(key in line for line in lines[1:]) == 1, key


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


def test_the_checker_reads_dash_dash_config_like_snakemake(tmp_path):
    rc, lines = checker_lines(tmp_path, "config/config.yaml", "--config", "batch_sizes=[1,0]")
    assert rc == 1 and len(lines) == 1 and "'batch_sizes[1]': 0 is out of range" in lines[0]
    rc, lines = checker_lines(tmp_path, str(tmp_path / "nope.yaml"))
    assert rc == 1 and lines == [
        f"invalid configuration: cannot read config file {tmp_path / 'nope.yaml'}: "
        "No such file or directory (every key is described in config/README.md)"
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "numa_effects.config", "--list", "models"],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(REPO / "workflow" / "scripts"), "PATH": os.environ["PATH"]},
        check=True,
    )
    assert proc.stdout.split() == list(models.CLASSIFICATION_MODELS)


@pytest.mark.integration
def test_a_config_file_that_is_not_a_mapping_is_rejected(tmp_path):
    bad = tmp_path / "list.yaml"
    bad.write_text("- resnet18\n- resnet50\n")
    out = "\n".join(dry_run_fails(tmp_path, None, "--configfile", str(bad)))
    assert "keys at top level" in out


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        pytest.param('{"cpus": [{"cpu": 0}]}', "malformed topology", id="json-missing-node"),
        pytest.param('{"cpus": [', "is not valid JSON", id="json-truncated"),
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
    (line,) = err.value.problems
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
    proc = snakemake(tmp_path / "ok", ok, "-n", "all")
    assert jobs_planned(proc).get("cell") == len(planned.cells) > 0
    with pytest.raises(validation.ConfigError) as err:
        validation.check({**ok, "threads": [20, 33]}, workdir=tmp_path)
    (line,) = err.value.problems
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
    assert jobs_planned(proc).get("cell") == 4
    assert "out/cells/resnet18/none/sequential+smt/t1/bs8/" in out
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
    proc = snakemake(tmp_path, config, "-n", "all")
    assert jobs_planned(proc).get("cell") == 1


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
    with pytest.raises(validation.ConfigError, match=r"unknown config key 'import\.foo'"):
        check(**{"import": {"packrat": ["x"], "foo": 1}})


def test_describe_reads_like_english():
    schema = yaml.safe_load(validation.SCHEMA_PATH.read_text())["properties"]
    assert validation.describe(schema["batch_sizes"]) == (
        "a list (non-empty, no duplicates) of integers >= 1 and <= 65536"
    )
    assert validation.describe(schema["max_seconds_per_cell"]) == "a number > 0 and <= 86400"
    assert validation.describe(schema["threads"]).startswith("auto, or a list")


@pytest.mark.parametrize(
    ("over", "expected"),
    [
        ({"models": ["resnet5"]}, "'models[0]': 'resnet5' is not a torchvision"),
        ({"optimizations": ["none", "scirpt"]}, "none, script, channels_last, compile"),
        ({"batch_sizes": [4, -2]}, "'batch_sizes[1]': -2 is out of range"),
        ({"batch_sizes": ["eight"]}, "'batch_sizes[0]': 'eight' is a string"),
        ({"batch_sizes": "16"}, "'batch_sizes': '16' is a string; allowed: a list"),
        ({"models": []}, "'models': the list is empty"),
        ({"optimizations": ["script", "script"]}, "'script' appears more than once"),
        ({"threads": "all"}, "'threads': 'all' is not allowed; allowed: auto, or a list"),
        ({"max_seconds_per_cell": -5}, "'max_seconds_per_cell': -5 is out of range"),
        ({"max_seconds_per_cell": math.inf}, "'max_seconds_per_cell': inf is not a finite"),
        ({"max_memory_mb": 0}, "'max_memory_mb': 0 is out of range; allowed: an integer >= 256"),
        ({"seed": 2**70}, "<= 4294967295"),
        ({"seed": 0.5}, "'seed': 0.5 is a number; allowed: an integer"),
        ({"use_smt": "yes"}, "'use_smt': 'yes' is a string; allowed: true or false"),
        ({"import": {"machine": "x"}}, "config key 'import.packrat' is missing"),
        ({"placements": ["sequential$(touch X)"]}, "'placements[0]'"),
    ],
)
def test_message_variants(tmp_path, over, expected):
    with pytest.raises(validation.ConfigError) as err:
        validation.check(cfg(**over), workdir=tmp_path)
    assert any(expected in line for line in err.value.problems), err.value.problems
    assert "\n" not in "".join(err.value.problems)


def test_values_are_normalised_by_schema_type_for_every_key():
    schema = validation.load_schema()
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
    validation.normalize(config, schema)
    assert config["batch_sizes"] == [1, 2, 8] and all(type(b) is int for b in config["batch_sizes"])
    assert config["threads"] == [1] and type(config["threads"][0]) is int
    assert type(config["seed"]) is int and type(config["image_size"]) is int
    assert config["use_smt"] is True and config["max_memory_mb"] is None
    assert config["max_seconds_per_cell"] == 2.5
    assert config["results"] == "out/x"
    for b in ("true", "false", "True", "False"):
        assert validation.coerce(b, schema["properties"]["use_smt"]) is (b.lower() == "true")
    assert validation.coerce(1.5, schema["properties"]["seed"]) == 1.5  # refused later
    assert validation.coerce(True, schema["properties"]["seed"]) is True  # not 1


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

    props = validation.load_schema()["properties"]
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
    problems = validation.results_problems(results, workdir=work, workflow_dir=work)
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
        (line,) = validation.results_problems(bad, workdir=tmp_path, workflow_dir=REPO)
        assert why in line, line


def test_every_tracked_top_level_folder_is_protected():
    out = subprocess.run(
        ["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    folders = {line.split("/")[0] for line in out.splitlines() if "/" in line}
    assert folders <= set(validation.WORKFLOW_DIRS), folders - set(validation.WORKFLOW_DIRS)


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
    for name in ("resnet18", "resnet50", "mobilenet_v3_small"):
        assert memory.measure(name) == memory.FOOTPRINT[name], name
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
    paths = {manifest.path("r", c) for c in (a, more, fewer, reps)}
    assert manifest.path("r", a) == manifest.path("r", same) and len(paths) == 4
    old = tmp_path / manifest.path("r", a)
    manifest.write(old, a)
    new = tmp_path / manifest.path("r", more)
    assert manifest.write(new, more) == [old]
    assert not old.exists() and yaml.safe_load(new.read_text()) == more
