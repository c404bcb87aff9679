"""Every command line in a shell block of README.md, docs/quickstart.md and docs/deploy.md (and
each ``# or: <command>`` beside one) runs as written, in its form without side effects
(``DRY_RUN``), from a folder whose ``results/`` is a default run's: a copy of the session's
quick run (``conftest.quick_run``: a real deploy answer), the repository's files linked beside
it. ``make`` targets that measure run as ``make -n``; ``make deploy`` and ``numa-effects launch``
with ``--print``; ``make run`` also as ``make check-config`` with its arguments (real: they are
checked); ``loadtest`` in its cheapest real form; ``compare`` with Snakemake's ``-n``; the rest
(``source``, ``head``) for real. A file a user fills in
(``my_server.py``) is a stand-in the test writes (``STAND_INS``). The quick grid is not the
default one: where a command names a default row, ``EXPECTED_SUBSTITUTIONS`` says which quick
row stands for it and why. ``NUMA_EFFECTS_DOCS_RESULTS=DIR`` reads an earlier run of the quick
grid instead of measuring one."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

pytestmark = pytest.mark.integration

PAGES = ("README.md", "docs/quickstart.md", "docs/deploy.md")
# what the folder the commands run in links from the repository (the Makefile's inputs)
LINKED = ("Makefile", "Snakefile", "workflow", "config", "profiles", "envs", "tools",
          "requirements.txt", "requirements-dev.txt", "pyproject.toml", ".venv")  # fmt: skip
# default-grid word in a documented command -> (the quick run's, why)
EXPECTED_SUBSTITUTIONS = {
    "latency-b16": ("latency-b2", "the quick grid's batch sizes are 1 and 2, not the default's"),
}
# make targets that measure or install something: `make -n` (`make deploy` gets ARGS=--print)
MAKE_DRY = {"run", "test", "check", "bench", "loadtest", "retry-failed", "venv", "sysdeps"}
# loadtest's cheapest real form: the recommendation alone, one short LoadGen run per scenario
LOADTEST_CHEAP = "--role recommended --min-duration-s 1 --min-queries 1 --server-runs 1"
STAND_INS = {"my_server.py": "import os\nprint(os.environ['NUMA_EFFECTS_INSTANCE'])\n"}
SHELL_BLOCK = re.compile(r"^```(?:sh|bash|shell)\n(.*?)^```", re.S | re.M)
OR_COMMAND = re.compile(r"#\s*or:\s*(.*?)\s*(?:\(.*\))?$")


def documented_commands() -> list[tuple[str, str]]:
    """(page, command) of every line of a shell block, and of each ``# or:`` comment."""
    out = []
    for page in PAGES:
        for block in SHELL_BLOCK.findall((REPO / page).read_text()):
            for line in block.replace("\\\n", " ").splitlines():
                command, _, comment = line.partition(" #")
                found = [command.strip()]
                if m := OR_COMMAND.search("#" + comment):
                    found.append(m.group(1))
                out += [(page, " ".join(c.split())) for c in found if c]
    return out


COMMANDS = documented_commands()


def dry_run(command: str) -> str:
    """The form of ``command`` that measures and starts nothing (module docstring)."""
    for word, (quick, _) in EXPECTED_SUBSTITUTIONS.items():
        command = command.replace(word, quick)
    words = shlex.split(command)
    if words[:2] == ["make", "deploy"]:  # the Makefile's own dry-run flag
        if 'ARGS="' in command:
            return command.replace('ARGS="', 'ARGS="--print ', 1)
        return f"{command} ARGS=--print"
    if words[:2] == ["make", "run"]:  # what it would run, and its arguments checked for real
        checked = command.replace("make run", "make check-config", 1)
        return f"{command.replace('make ', 'make -n ', 1)} && {checked}"
    if words[0] == "make" and MAKE_DRY & set(words[1:]):
        return command.replace("make ", "make -n ", 1)
    if words[0] == "snakemake":
        return command.replace("snakemake ", "snakemake -n ", 1)
    if words[:2] == ["numa-effects", "launch"] and "--print" not in words:
        head, sep, tail = command.partition(" -- ")
        return f"{head} --print{sep}{tail}"
    if words[:2] == ["numa-effects", "loadtest"]:
        return f"{command} {LOADTEST_CHEAP}"
    if words[:2] == ["numa-effects", "compare"]:
        return f"{command} -- -n"
    return command


def test_the_pages_have_the_commands_this_test_expects():
    """The extraction finds each kind, and every substitution is still needed."""
    kinds = {tuple(shlex.split(c)[:2]) for _, c in COMMANDS}
    assert {("make", "run"), ("make", "deploy"), ("make", "loadtest")} <= kinds
    assert {("numa-effects", w) for w in ("launch", "loadtest", "compare")} <= kinds
    assert {p for p, _ in COMMANDS} == set(PAGES)
    for word in [*EXPECTED_SUBSTITUTIONS, *STAND_INS]:
        assert any(word in c for _, c in COMMANDS), f"{word} is in no command: drop it"


def test_dry_run_forms():
    """Each rule of ``dry_run``, derived by hand from the module docstring."""
    assert dry_run("make run X=1") == "make -n run X=1 && make check-config X=1"
    assert dry_run("make test") == "make -n test"
    assert dry_run("make check-config") == "make check-config"
    assert (
        dry_run("numa-effects launch -- python x.py")
        == "numa-effects launch --print -- python x.py"
    )
    assert dry_run("numa-effects launch --objective latency-b16 --print") == (
        "numa-effects launch --objective latency-b2 --print"
    )
    assert dry_run("numa-effects compare a b") == "numa-effects compare a b -- -n"
    assert dry_run('make deploy ARGS="-- p"') == 'make deploy ARGS="--print -- p"'
    assert dry_run("make deploy") == "make deploy ARGS=--print"


@pytest.fixture(scope="module")
def site(request, tmp_path_factory) -> Path:
    """A folder as the manual's reader has it after ``make run``: the repository's files
    (linked), ``results/`` a copy of a real run with its deploy answer, the stand-ins, and the
    two result folders quickstart's ``compare`` names (copies of that run)."""
    given = os.environ.get("NUMA_EFFECTS_DOCS_RESULTS")
    results = Path(given) if given else request.getfixturevalue("quick_run").results
    root = tmp_path_factory.mktemp("docs_cli")
    for name in LINKED:
        if (REPO / name).exists():
            (root / name).symlink_to(REPO / name)
    # `make deploy` and `make check-config` run for real need the venv: up to date, or make
    # would reinstall the shared .venv from this folder (its scripts then name this folder)
    stale = subprocess.run(["make", "-q", "venv"], cwd=root, capture_output=True)
    assert stale.returncode == 0, "the venv is out of date: run `make venv` first"
    shutil.copytree(results, root / "results", symlinks=True)
    for name, text in STAND_INS.items():
        (root / name).write_text(text)
    for folder in ("runs/before", "runs/after"):
        shutil.copytree(results, root / folder, symlinks=True)
    return root


@pytest.mark.parametrize(("page", "command"), COMMANDS, ids=[f"{p}:{c[:60]}" for p, c in COMMANDS])
def test_documented_command_runs(site, page, command):
    dry = dry_run(command)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("MAKEFLAGS", None)
    proc = subprocess.run(
        ["bash", "-c", dry], cwd=site, env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, f"{dry}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    if "launch" in dry and "--print" in dry:  # the sh lines of every instance, pinned
        assert "numactl" in proc.stdout and proc.stdout.rstrip().endswith("wait"), proc.stdout
        assert " -- " not in dry or dry.split(" -- ", 1)[1] in proc.stdout
