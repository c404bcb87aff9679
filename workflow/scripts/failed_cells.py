#!/usr/bin/env python3
"""Print the result files of failed cells (and failed peak and memory probe runs), one per
line, for Snakemake's ``--forcerun``; prints nothing when none failed. Retry only those:

    snakemake --cores 1 all --forcerun $(python workflow/scripts/failed_cells.py)

(``make retry-failed`` does exactly this.) The results folder is the first argument, or the
``results`` key of config/config.yaml, or ``results``; a folder that does not exist is an
error (exit status 2), not an empty list. Reads the cell JSONs themselves, so it
works even when the tables were never built. ``--contended`` also lists the replicates measured
while other tasks used their CPUs (column ``contended`` of cells.csv), those left without any
clean iteration (``status: contended``, no statistics) among them, to re-measure them on a
quieter machine.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def default_results() -> str:
    try:
        import yaml

        with open(REPO / "config" / "config.yaml") as fh:
            return str((yaml.safe_load(fh) or {}).get("results") or "results")
    except (OSError, ImportError):
        return "results"


def failed(results: str | Path, contended: bool = False) -> list[str]:
    out = []
    for sub in ("cells", "peak", "memory"):
        for path in sorted(Path(results, sub).rglob("*.json")):
            if path.name.startswith("."):
                continue  # a temp file of a write in progress
            try:
                data = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if not isinstance(data, dict):
                continue
            noisy = contended and (
                data.get("status") == "contended"
                or bool((data.get("contention") or {}).get("contended"))
            )
            if data.get("status") == "failed" or noisy:
                out.append(str(path))
    return out


def main(argv: list[str]) -> int:
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    contended = "--contended" in argv
    args = [a for a in argv if a != "--contended"]
    results = args[0] if args else default_results()
    if not Path(results).is_dir():
        print(f"error: no results folder {results} (RESULTS=folder names it)", file=sys.stderr)
        return 2
    for path in failed(results, contended):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
