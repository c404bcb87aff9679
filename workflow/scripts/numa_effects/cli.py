"""``numa-effects <command> [ARGS...]``: the commands a user runs outside Snakemake, one name
(``pip install -e .`` makes it; ``make venv`` does that into .venv). ``python -m numa_effects``
is the same. Each command is a module's ``main(argv)``, or a script beside the package (the
workflow's own, run as Snakemake's rules run it) given its arguments."""

from __future__ import annotations

import importlib
import importlib.util
import runpy
import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent.parent  # workflow/scripts: the package's folder
# name: (module with main(argv), or a script in SCRIPTS; one line of help)
COMMANDS = {
    "check-config": ("numa_effects.config.cli", "check a config or a snakemake command line"),
    "compare": ("numa_effects.compare.command", "compare result folders cell by cell"),
    "launch": ("numa_effects.launch", "start what the run recommends"),
    "loadtest": ("numa_effects.loadtest", "check the recommendation under load"),
    "import-packrat": ("import_packrat.py", "import PackRat's CSVs as a results folder"),
    "failed-cells": ("failed_cells.py", "list the result files of failed cells"),
    "placement": ("numa_effects.plan.placement_docs", "print each placement's numactl arguments"),
}


def available(name: str) -> bool:
    target = COMMANDS[name][0]
    if target.endswith(".py"):
        return (SCRIPTS / target).is_file()
    return importlib.util.find_spec(target) is not None


def usage() -> str:
    lines = ["usage: numa-effects <command> [--help | ARGS...]", "", "commands:"]
    for name, (_, what) in COMMANDS.items():
        lines.append(f"  {name:<15} {what}{'' if available(name) else ' (not installed)'}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS or not available(name):
        known = ", ".join(n for n in COMMANDS if available(n))
        print(f"numa-effects: error: no command {name!r} (known: {known})", file=sys.stderr)
        return 2
    target = COMMANDS[name][0]
    if target.endswith(".py"):  # a workflow script: its own argv, as from a shell
        sys.argv = [f"numa-effects {name}", *rest]
        try:
            runpy.run_path(str(SCRIPTS / target), run_name="__main__")
        except SystemExit as exc:
            return exc.code if isinstance(exc.code, int) else int(exc.code is not None)
        return 0
    return importlib.import_module(target).main(rest) or 0
