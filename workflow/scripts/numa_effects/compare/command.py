"""``numa-effects compare BASELINE OTHER... [options] [-- SNAKEMAKE_ARGS]``: the workflow's
``compare`` target with ``compare={runs: [...], ...}`` built from the arguments, checked and run
as ``make run`` runs (``numa_effects.config.cli``; docs/comparing.md)."""

from __future__ import annotations

import argparse
import json

from numa_effects.config import cli


def config_items(args: argparse.Namespace) -> list[str]:
    """The ``--config`` items: the mapping as JSON (a YAML subset: any folder name survives)."""
    mapping: dict = {"runs": args.runs}
    mapping |= {k: v.split(",") for k in ("labels", "across") if (v := getattr(args, k))}
    if args.min_effect_pct is not None:
        mapping["min_effect_pct"] = args.min_effect_pct
    items = [f"compare={json.dumps(mapping)}"]
    return items + ([f"results={args.results}"] if args.results else [])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="numa-effects compare",
        description="Compare result folders cell by cell, the first the baseline; the tables "
        "and page go to <results>/compare/<labels>/ (docs/comparing.md).",
    )
    ap.add_argument("runs", nargs="+", metavar="FOLDER", help="results folders, baseline first")
    ap.add_argument("--labels", help="comma-separated, one per folder")
    ap.add_argument("--across", help="comma-separated keys that may differ (e.g. allocator)")
    ap.add_argument("--min-effect-pct", type=float, help="smallest change that counts")
    ap.add_argument("--results", help="the folder the comparison goes into (default: results)")
    ap.add_argument("--cores", default="1", help="as snakemake's (default: 1)")
    argv = list(argv or [])
    cut = argv.index("--") if "--" in argv else len(argv)
    args, extra = ap.parse_args(argv[:cut]), argv[cut + 1 :]
    if len(args.runs) < 2:
        ap.error("give at least two folders: the baseline, then what to compare with it")
    snakemake = ["--cores", args.cores, "compare", "--config", *config_items(args), *extra]
    return cli.main(["--run", *snakemake])
