"""``python -m numa_effects.config [FILE...] [--config KEY=VALUE...] [--directory DIR]``: check a
config as ``snakemake -n`` will, with the same lines.

The files are read as Snakemake reads them (``files``: the workflow's ``config/config.yaml`` in
the working directory first when it exists, then each FILE, then ``--config``), the working
directory is entered as Snakemake enters it, and the one checker (``numa_effects.config.check``)
runs. Unlike Snakemake it says where a YAML syntax error is. ``--list NAME`` prints a
registry's names; ``--readme`` regenerates config/README.md's key tables from the schema.
"""

from __future__ import annotations

import argparse
import os
import sys
from contextlib import contextmanager

from numa_effects.config import check, check_or_exit, files, readme
from numa_effects.config.problem import ConfigError
from numa_effects.config.registries import REGISTRIES


@contextmanager
def _directory(path: str | None):
    before = os.getcwd()
    if path:
        os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m numa_effects.config",
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
    args = ap.parse_args(argv)
    if args.list:
        print("\n".join(REGISTRIES[args.list].names()))
        return 0
    if args.readme:
        changed = readme.write()
        print(f"{readme.README_PATH}: {'updated' if changed else 'up to date'}")
        return 0
    if args.directory and not os.path.isdir(args.directory):
        print(
            f"invalid configuration: --directory {args.directory} is not a folder", file=sys.stderr
        )
        return 1
    configfiles = files.workflow_files(args.files, args.directory)
    try:
        with _directory(args.directory):
            config = files.load(configfiles)
            files.merge(config, files.parse_config_args(args.config))
            run = check if args.traceback else check_or_exit
            checked = run(config, configfiles=configfiles)
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 1
    except SystemExit as exc:
        return int(exc.code or 0)
    names = " + ".join(str(f) for f in [*configfiles[len(args.files) :], *args.files])
    print(f"ok: {names} (planned against {checked.topology.source or 'this machine'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
