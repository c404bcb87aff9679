"""The ``numa-effects`` command (numa_effects.cli): the installed console script lists every
command and each answers ``--help``; ``compare`` builds the config Snakemake reads back as the
mapping it was given."""

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

from numa_effects import cli
from numa_effects.compare import command
from numa_effects.config import files

EXE = Path(sys.executable).parent / "numa-effects"


def numa_effects(*args: str) -> subprocess.CompletedProcess:
    if not EXE.is_file():
        pytest.skip(f"{EXE} not installed (make venv installs it: pip install --no-deps -e .)")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the installed package
    return subprocess.run([str(EXE), *args], cwd=REPO, env=env, capture_output=True, text=True)


def test_help_lists_every_command():
    proc = numa_effects("--help")
    assert proc.returncode == 0
    listed = [line.split()[0] for line in proc.stdout.splitlines() if line.startswith("  ")]
    assert listed == list(cli.COMMANDS)


@pytest.mark.parametrize("name", list(cli.COMMANDS))
def test_each_command_answers_help(name):
    if not cli.available(name):
        pytest.skip(f"{cli.COMMANDS[name][0]} does not exist yet")
    proc = numa_effects(name, "--help")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip(), f"{name} --help printed nothing"


def test_an_unknown_command_is_one_line():
    proc = numa_effects("nonsense")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "nonsense" in proc.stderr


def test_compare_builds_the_mapping_snakemake_reads():
    # folder names with a comma, a space and YAML's own characters survive the round trip
    runs = ["runs/a,1/results", "runs/b: x/results", "[c]"]
    args = argparse.Namespace(
        runs=runs, labels="a,b,c", across="allocator", min_effect_pct=5.0, results="out"
    )
    parsed = files.parse_config_args(command.config_items(args))
    # Snakemake leaves a nested number a string; the config check coerces it
    assert float(parsed["compare"].pop("min_effect_pct")) == 5.0
    assert parsed == {
        "compare": {"runs": runs, "labels": ["a", "b", "c"], "across": ["allocator"]},
        "results": "out",
    }
