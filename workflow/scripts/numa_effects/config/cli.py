"""``numa-effects check-config [FILE...] [--config KEY=VALUE...] [--directory DIR]``: check a
config as ``snakemake -n`` will, with the same lines (and where a YAML syntax error is);
``--list NAME`` prints a registry's names, ``--readme`` regenerates config/README.md's tables.
The entry points (``make check-config``, ``make run``) give it a Snakemake command line:
``--snakemake ARGS...`` checks it (``command``), ``--run ARGS...`` then runs ``snakemake
ARGS...`` in its place, never waiting for a Slurm controller that does not answer."""

from __future__ import annotations

import argparse
import io
import math
import os
import sys
from contextlib import chdir, nullcontext, redirect_stdout
from pathlib import Path

import yaml

from numa_effects import slurmconf
from numa_effects.config import check, check_or_exit, command, files
from numa_effects.config import schema as sch
from numa_effects.config.problem import ConfigError
from numa_effects.config.schema import REGISTRIES, REPO_DIR
from numa_effects.plan import cost

# The entry points' flags: each takes the rest of the command line as Snakemake's.
COMMAND_FLAGS = {
    "--snakemake": "check this snakemake command line (its options, --configfile, --config, "
    "--directory and targets) and the config it makes; everything after it is its",
    "--run": "as --snakemake, then run snakemake with these arguments",
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="numa-effects check-config",
        description="Check a config as the workflow will, with the same messages: "
        f"{files.WORKFLOW_CONFIGFILE} of the working directory (if there is one), then each "
        "FILE (later ones override keys), then --config values.",
    )
    ap.add_argument("files", nargs="*", metavar="FILE", help="as snakemake's --configfile")
    ap.add_argument("--config", nargs="+", default=[], metavar="KEY=VALUE", help="as snakemake's")
    ap.add_argument("--directory", "-d", default=None, help="the working directory, as snakemake's")
    ap.add_argument("--list", choices=list(REGISTRIES), help="print every allowed name")
    ap.add_argument("--readme", action="store_true", help="regenerate config/README.md's tables")
    ap.add_argument("--traceback", action="store_true", help="let an unexpected error raise")
    for flag, what in COMMAND_FLAGS.items():
        ap.add_argument(flag, nargs=argparse.REMAINDER, metavar="ARG", help=what)
    args = ap.parse_args(argv)
    if args.list:
        print("\n".join(REGISTRIES[args.list].names()))
        return 0
    if args.readme:
        if (new := update(old := README_PATH.read_text())) != old:
            README_PATH.write_text(new)
        print(f"{README_PATH}: {'updated' if new != old else 'up to date'}")
        return 0
    if args.snakemake is None and args.run is None:
        return _check(args.files, args.config, args.directory, args.traceback)
    return _command(args.snakemake if args.run is None else args.run, args.run is not None)


def _check(
    given: list, items: list[str], directory: str | None, traceback: bool, targets=()
) -> int:
    """Check the files, --config items and targets as Snakemake will read them; 0, or 1 and the
    lines."""
    from snakemake.utils import update_config

    if directory and not os.path.isdir(directory):
        print(f"invalid configuration: --directory {directory} is not a folder", file=sys.stderr)
        return 1
    configfiles = files.workflow_files(given, directory)
    try:
        if found := command.config_item_problems(items):
            raise ConfigError(found)
        with chdir(directory or "."):
            config = files.load(configfiles)
            update_config(config, files.parse_config_args(items))
            if found := command.target_problems(list(targets), config):
                raise ConfigError(found)  # before the config, so before any estimate of a run
            checked = (check if traceback else check_or_exit)(config, configfiles=configfiles)
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 1
    except SystemExit as exc:
        return int(exc.code or 0)
    names = " + ".join(str(f) for f in [*configfiles[len(given) :], *given])
    print(f"ok: {names} (planned against {checked.topology.source or 'this machine'})")
    return 0


def _command(argv: list[str], run: bool) -> int:
    """Check a snakemake command line; with ``run``, then become ``snakemake argv...``."""
    env, note = slurmconf.avoid()
    if note:
        print(note, file=sys.stderr)
    try:
        parsed = command.parse(argv)  # None: --help or --version, nothing to check
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 1
    if parsed is not None:
        with redirect_stdout(io.StringIO()) if run else nullcontext():  # run: Snakemake speaks next
            rc = _check(parsed.configfile, parsed.config, parsed.directory, False, parsed.targets)
    if not run or (parsed is not None and rc):
        return 0 if parsed is None else rc
    sys.stdout.flush(), sys.stderr.flush()
    exe = Path(sys.executable).parent / "snakemake"  # this environment's, as make run's was
    cmd = [str(exe)] if exe.is_file() else [sys.executable, "-m", "snakemake"]
    if parsed is not None and not (parsed.n or parsed.dry_run or parsed.dryrun):
        env[cost.CALIBRATE_ENV] = "1"  # a run, not a dry one: the parse may probe (plan.cost)
    os.execve(cmd[0], [*cmd, *argv], env)


# config/README.md's key tables, from the schema and the default config's values: one table per
# ``x-section`` between ``BEGIN`` and ``END``; a row is a key (nested keys after their parent),
# what is allowed (the error messages' words), its default and its description.
README_PATH = REPO_DIR / "config" / "README.md"
DEFAULT_CONFIG = REPO_DIR / files.WORKFLOW_CONFIGFILE
BEGIN = "<!-- config-keys: {}; generated by numa-effects check-config --readme -->"
END = "<!-- /config-keys -->"


def _yaml(value) -> str:
    """A value as flow-style YAML on one line (a scalar is a document of its own: no ``...``)."""
    text = yaml.safe_dump(value, default_flow_style=True, width=math.inf, sort_keys=False)
    return "`" + text.removesuffix("...\n").strip() + "`"


def sections(schema: dict) -> list[str]:
    """The sections, in the order their first key appears in the schema."""
    return list(dict.fromkeys(p.get("x-section", "other") for p in schema["properties"].values()))


def markdown(section: str, schema: dict | None = None) -> str:
    """The key table of one section."""
    schema = schema or sch.load()
    defaults = yaml.safe_load(DEFAULT_CONFIG.read_text())
    rows = ["| key | allowed | default | meaning |", "| --- | --- | --- | --- |"]
    for path, prop, required in sch.properties(schema):
        if schema["properties"][path.split(".")[0]].get("x-section", "other") != section:
            continue
        given = "required" if required else "not set"
        given = _yaml(prop["default"]) if "default" in prop else given
        if path in defaults and defaults[path] != prop.get("default", object()):
            given += f"; `config.yaml`: {_yaml(defaults[path])}"  # a top-level key only
        cells = (f"`{path}`", sch.describe(prop), given, prop.get("description", ""))
        cells = (c.replace("|", "\\|").replace("\n", " ") for c in cells)
        rows.append(f"| {' | '.join(cells)} |")
    return "\n".join(rows)


def update(text: str, schema: dict | None = None) -> str:
    """The README ``text`` with every section's table regenerated between its markers."""
    schema = schema or sch.load()
    for section in sections(schema):
        start = BEGIN.format(section)
        if start not in text or END not in text.split(start, 1)[1]:
            raise ValueError(f"config/README.md has no '{start}' ... '{END}' block")
        head, rest = text.split(start, 1)
        text = f"{head}{start}\n{markdown(section, schema)}\n{END}{rest.split(END, 1)[1]}"
    return text
