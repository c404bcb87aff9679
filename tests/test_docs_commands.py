"""Every `snakemake` command line in a shell block of docs/*.md plans without error: each runs
as a dry run (`-n`, real snakemake, nothing executed) in a copy of the workflow, exactly as
written (substitutions and quoting through bash). The cluster's second step reads the
machine.json its first step writes, so that step runs for real first (the `machine` rule only
reads this machine's topology). A comparison reads result folders while it is checked, so the
folders the documented `compare` commands name are made first, as small stand-ins (a cells.csv
and a machine.json: what a comparison reads). Commands that need a placeholder filled in are
not here."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, key, result_folder

pytestmark = pytest.mark.integration

PACKRAT = Path(os.environ.get("NUMA_EFFECTS_PACKRAT", REPO.parent / "shared/reference/packrat"))


def documented_commands() -> list[tuple[str, str]]:
    out = []
    for md in sorted((REPO / "docs").glob("*.md")):
        for block in re.findall(r"```(?:sh|bash|shell)\n(.*?)```", md.read_text(), re.S):
            for line in block.replace("\\\n", " ").splitlines():
                line = line.split("  #")[0].strip()
                if line.startswith("snakemake "):
                    out.append((md.name, " ".join(line.split())))
    return out


COMMANDS = documented_commands()
# the folders of `compare='[a, b]'` and `compare={runs: [a, b], ...}`
COMPARED = re.compile(r"compare=\[([^\]]*)\]|runs: \[([^\]]*)\]")


def compared_folders(commands) -> set[str]:
    found = set()
    for _, command in commands:
        if "compare" not in command:
            continue
        for m in COMPARED.finditer(command):
            found |= {f.strip() for f in (m.group(1) or m.group(2)).split(",") if f.strip()}
    return found


def test_the_docs_have_the_commands_this_test_expects():
    pages = {md for md, _ in COMMANDS}
    assert {"usage.md", "report.md", "cluster.md", "troubleshooting.md", "comparing.md"} <= pages
    assert {"runs/a/results", "runs/b/results"} <= compared_folders(COMMANDS)


@pytest.fixture(scope="module")
def checkout(tmp_path_factory):
    """The workflow's files in a fresh folder, PackRat's data at ../shared like the docs assume,
    and results/ as a default run leaves it (machine.json from a real `machine` run, cells/)."""
    root = tmp_path_factory.mktemp("docs") / "repo"
    root.mkdir()
    for name in ("Snakefile", "workflow", "config", "profiles", "envs"):
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, root / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif src.exists():
            shutil.copy(src, root / name)
    if PACKRAT.is_dir():
        (root.parent / "shared/reference").mkdir(parents=True)
        (root.parent / "shared/reference/packrat").symlink_to(PACKRAT)
    run(root, "snakemake --cores 1 machine")
    assert (root / "results/machine.json").is_file()
    (root / "results/cells").mkdir(exist_ok=True)  # results/ as a default run leaves it
    for folder in compared_folders(COMMANDS):
        result_folder(root / folder, [{**key(), "status": "ok", "latency_median_ms": 10.0}])
    return root


def run(root: Path, command: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.run(
        ["bash", "-c", command], cwd=root, env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, f"{command}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.mark.parametrize(("page", "command"), COMMANDS, ids=[f"{p}:{c[:60]}" for p, c in COMMANDS])
def test_documented_command_plans(checkout, page, command):
    if "shared/reference/packrat" in command and not PACKRAT.is_dir():
        pytest.skip(f"PackRat reference data not found at {PACKRAT}")
    dry = command.replace("snakemake ", "snakemake -n --quiet rules ", 1)
    proc = run(checkout, dry)
    assert "Traceback" not in proc.stderr
