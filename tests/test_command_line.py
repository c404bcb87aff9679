"""The mistakes Snakemake answers itself, before any workflow code runs (a traceback, a page of
usage text, or a line that names neither the file nor the item), are one line naming the file,
line or item when they come through the project's entry points: `make check-config` and `make
run` check the command line (SNAKEMAKE_ARGS) and its config files first
(numa_effects.config.command). Each case runs through the checker and through Snakemake's own
command line, both in this process: Snakemake's message must be the one docs/troubleshooting.md
explains. One case per entry point goes through `make check-config` and `make run`."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from conftest import REPO, load_config

from numa_effects.config import cli, command

TROUBLESHOOTING = REPO / "docs" / "troubleshooting.md"


def inputs(folder: Path) -> dict[str, str]:
    """Config files, good and bad, in ``folder``: {name: path}."""
    files = {
        "good": yaml.safe_dump(load_config("tiny")).encode(),
        "binary": bytes(range(256)),
        "utf16": "models: [resnet18]\n".encode("utf-16"),
        "bracket": b"models: [resnet18\nbatch_sizes: [1]\n",
        "tab": b"models:\n\t- resnet18\n",
        "quote": b'models: "resnet18\n',
        "list": b"- resnet18\n- resnet50\n",
        "empty": b"",
        "comment": b"# batch_sizes: [1]\n",
        "scalar": b"resnet18\n",
    }
    out = {}
    for name, data in files.items():
        path = folder / f"{name}.yaml"
        path.write_bytes(data)
        out[name] = str(path)
    (folder / "adir").mkdir()
    out["adir"] = str(folder / "adir")
    out["missing"] = str(folder / "missing.yaml")
    out["long"] = str(folder / ("c" * 300 + ".yaml"))
    return out


@dataclass(frozen=True)
class Case:
    id: str
    argv: Callable[[dict], list[str]]  # the command line's arguments, given inputs()
    texts: list[str]  # what the one line holds
    raw: str  # what Snakemake itself says (docs/troubleshooting.md explains it)


def configfile(name: str, *more: str) -> Callable[[dict], list[str]]:
    return lambda f: ["--configfile", f[name], *more]


def with_good(*more: str) -> Callable[[dict], list[str]]:
    return configfile("good", *more)


NOT_UTF8 = "UnicodeDecodeError: 'utf-8' codec can't decode byte"
NO_FILE = "FileNotFoundError: [Errno 2] No such file or directory"
NOT_YAML = "Config file is not valid JSON or YAML"
NO_KEYS = "Config file must be given as JSON or YAML with keys at top level"
NAME_VALUE = "Config entries have to be defined as name=value pairs"
CASES = [
    # Snakemake's tracebacks
    Case("binary", configfile("binary"), ["binary.yaml: it is not text (a NUL byte"], NOT_UTF8),
    Case("utf16", configfile("utf16"), ["utf16.yaml: it is UTF-16 text; allowed: UTF-8"], NOT_UTF8),
    Case("missing", configfile("missing"), ["missing.yaml: No such file or directory"], NO_FILE),
    Case(
        "directory",
        configfile("adir"),
        ["config file", "adir: Is a directory"],
        "IsADirectoryError: [Errno 21] Is a directory",
    ),
    Case(
        "name-too-long",
        configfile("long"),
        ["cannot read config file", "ccc.yaml: File name too long"],
        "OSError: [Errno 36] File name too long",
    ),
    Case(
        "dotted-key",
        with_good("--config", "packing.enabled=false"),
        ["--config packing.enabled=false: a nested key cannot be set with a dot", "packing={"],
        "Config entry must start with a valid identifier",
    ),
    Case(
        "dotted-key-deeper",
        with_good("--config", "import.packrat=x"),
        ["--config import.packrat=x: a nested key", '--config "import={packrat: x}"'],
        "Config entry must start with a valid identifier",
    ),
    Case(
        "target-after-config",
        with_good("--config", "seed=1", "machine"),
        ["--config item 'machine' has no '='", "put targets before --config"],
        NAME_VALUE,
    ),
    Case(
        "target-after-configfile",
        with_good("machine"),
        ["config file", "machine does not exist", "put targets before --configfile"],
        NO_FILE,
    ),
    Case(
        "item-after-configfile",
        with_good("seed=1"),
        ["config file 'seed=1' is a KEY=VALUE item", "allowed: --config seed=1"],
        NO_FILE,
    ),
    Case(
        "config-item-without-equals",
        with_good("--config", "seed"),
        ["--config item 'seed' has no '='", "allowed: KEY=VALUE"],
        NAME_VALUE,
    ),
    Case(
        "list-split-by-the-shell",
        with_good("--config", "batch_sizes=[1,", "2]"),
        ["--config batch_sizes=[1, 2]: the shell split", "batch_sizes=[1,2]"],
        NAME_VALUE,
    ),
    Case(
        "mapping-split-by-the-shell",
        with_good("--config", "packing={enabled:", "true}"),
        ["'packing={enabled:' and 'true}'", "(packing={enabled:true})"],
        NAME_VALUE,
    ),
    # Snakemake's lines that name neither the file nor the line
    Case(
        "unclosed-bracket", configfile("bracket"), ["bracket.yaml line 2, column 12 is"], NOT_YAML
    ),
    Case("tab-indentation", configfile("tab"), ["tab.yaml line 2, column 1", "'\\t'"], NOT_YAML),
    Case("unclosed-quote", configfile("quote"), ["quote.yaml line 2, column 1"], NOT_YAML),
    Case("a-list", configfile("list"), ["list.yaml holds a list, not a mapping"], NO_KEYS),
    Case("empty", configfile("empty"), ["empty.yaml holds no keys"], NO_KEYS),
    Case("only-a-comment", configfile("comment"), ["comment.yaml holds no keys"], NO_KEYS),
    Case("a-scalar", configfile("scalar"), ["scalar.yaml holds a string, not a"], NO_KEYS),
    # Snakemake's pages of usage text, or a line about something else
    Case(
        "configfile-without-a-file",
        lambda f: ["--configfile"],
        ["argument --configfile/--configfiles: expected at least one argument"],
        "snakemake: error: argument --configfile/--configfiles: expected at least one argument",
    ),
    Case(
        "unknown-option",
        with_good("--confg", "seed=1"),
        ["unknown option --confg (did you mean '--config'?)"],
        "snakemake: error: unrecognized arguments: --confg",
    ),
    Case(
        "one-dash",
        with_good("-config", "seed=1"),
        ["option -config has one dash; allowed: --config"],
        "Error parsing number of cores (--cores, -c): must be integer or 'all'",
    ),
]
IDS = [c.id for c in CASES]


# make's own line after a failed recipe ("make[1]: ***" when make runs under make test)
MAKE_ERROR = re.compile(r"make(\[\d+\])?: \*\*\* ")


def one_line(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip() and not MAKE_ERROR.match(ln)]
    assert len(lines) == 1, lines
    assert "Traceback" not in text and "usage:" not in text
    return lines[0]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_checker_says_it_in_one_line(tmp_path, case, capsys):
    argv = [*case.argv(inputs(tmp_path)), "--directory", str(tmp_path)]
    assert cli.main(["--snakemake", "all", *argv]) == 1
    line = one_line(capsys.readouterr().err)
    assert line.startswith("invalid configuration: ")
    for text in case.texts:
        assert text in line, f"{text!r} not in {line}"


def make(target: str, args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """`make TARGET SNAKEMAKE_ARGS="ARGS"` in the repository, as a user types it (the shell
    splits SNAKEMAKE_ARGS at its spaces). The venv is taken as it is (-o venv)."""
    # a top-level make, as typed in a shell, also when the tests run under `make test`
    inherited = ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")
    env = {k: v for k, v in os.environ.items() if k not in inherited}
    env["SNAKEMAKE_ARGS"] = " ".join(args)
    return subprocess.run(
        ["make", "-s", "-o", "venv", "-C", str(REPO), target],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_snakemake_says_what_the_docs_explain(tmp_path, case, capfd, caplog, monkeypatch):
    """Snakemake's own message (its command line given to Snakemake's ``main`` in this process:
    each case stops before the workflow is read) is the one docs/troubleshooting.md explains."""
    from snakemake.cli import main

    monkeypatch.setattr(sys, "argv", ["snakemake"])  # argparse names the program by it
    monkeypatch.chdir(tmp_path)
    argv = ["--snakefile", str(REPO / "Snakefile"), "--directory", str(tmp_path / "work")]
    with pytest.raises(SystemExit) as stop:
        main([*argv, "-n", "all", *case.argv(inputs(tmp_path))])
    assert stop.value.code not in (0, None)
    out, err = capfd.readouterr()
    said = out + err + caplog.text  # a line Snakemake logs before its own handler is set up
    assert case.raw in said, said[-3000:]
    assert f"`{case.raw}" in TROUBLESHOOTING.read_text(), case.raw


# One case per entry point through make: every case's line is the checker's
# (test_the_checker_says_it_in_one_line, in this process); make adds the shell's split of
# SNAKEMAKE_ARGS, which the list split by the shell exercises, and the refusal before Snakemake.
@pytest.mark.integration
def test_make_check_config_says_it_in_one_line(tmp_path):
    (case,) = [c for c in CASES if c.id == "list-split-by-the-shell"]
    argv = [*case.argv(inputs(tmp_path)), "--directory", str(tmp_path)]
    proc = make("check-config", argv, tmp_path)
    assert proc.returncode != 0 and proc.stdout == "", proc
    line = one_line(proc.stderr)
    for text in case.texts:
        assert text in line, f"{text!r} not in {line}"


@pytest.mark.integration
def test_make_run_refuses_before_snakemake_starts(tmp_path):
    (case,) = [c for c in CASES if c.id == "dotted-key"]
    proc = make("run", [*case.argv(inputs(tmp_path)), "--directory", str(tmp_path)], tmp_path)
    assert proc.returncode != 0
    line = one_line(proc.stderr)
    assert all(text in line for text in case.texts), line
    assert not (tmp_path / ".snakemake").exists()  # no Snakemake ran


def test_a_good_command_line_passes_and_keeps_its_meaning(tmp_path, capsys):
    files = inputs(tmp_path)
    argv = ["all", "--configfile", files["good"], "--config", "packing={enabled: true}"]
    argv += ["batch_sizes=[1,2]", "--directory", str(tmp_path), "-n"]
    parsed = command.parse(argv)
    assert parsed.config == ["packing={enabled: true}", "batch_sizes=[1,2]"]
    assert parsed.targets == ["all"]
    assert cli.main(["--snakemake", *argv]) == 0
    assert capsys.readouterr().out.startswith(f"ok: {files['good']} (planned against")


def test_every_snakemake_message_of_the_docs_table_is_a_case():
    """The table in docs/troubleshooting.md lists Snakemake's messages; each one is tested."""
    text = TROUBLESHOOTING.read_text()
    section = text.split("## Snakemake's own messages", 1)[1].split("\n## ", 1)[0]
    rows = [ln for ln in section.splitlines() if ln.startswith("| `")]
    listed = {row.split("`")[1] for row in rows}
    assert listed == {c.raw for c in CASES}, listed ^ {c.raw for c in CASES}
