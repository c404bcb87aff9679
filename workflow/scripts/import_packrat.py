"""Import PackRat results (resnet_latency.csv + resnet_throughput.csv) as tidy tables.

In the workflow (config key ``import: {packrat: [<folder>...]}``) the rule ``import_packrat``
runs this instead of measuring. From a shell it writes the same files:

    python workflow/scripts/import_packrat.py ../shared/reference/packrat/cloudlab_large-batches \
        --results runs/packrat-cloudlab

-> <results>/tables/{cells,samples,skipped}.csv (+ Parquet) and <results>/machine.json.
The mapping is documented in numa_effects/tables/packrat.py and docs/report.md. A source it
cannot read is one line naming the file (and line), exit status 2.

PackRat's multi-instance runs (``cloudlab_multiinstance-interference``: groups of instances with
``instances`` and ``instance_id``) import into the interference profile's table instead:

    python workflow/scripts/import_packrat.py --interference \
        ../shared/reference/packrat/cloudlab_multiinstance-interference --results runs/pr

-> <results>/tables/interference.csv (``tables.packrat.interference_table``), the table the
interference model fits (``tables.interference.curve``; docs/packing.md).
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from numa_effects.measure import record
from numa_effects.tables import packrat, tidy


def write(sources, cells, samples, skipped, machine, description=None) -> int:
    t = packrat.tables(sources)
    for path in (cells, samples, skipped, machine):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    tidy.write(t["cells"], str(cells))
    tidy.write(t["samples"], str(samples))
    tidy.write(t["skipped"], str(skipped))
    record.write(str(machine), packrat.machine_facts(sources, description))
    return len(t["cells"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sources", nargs="*", help="PackRat results folder (or one of its CSVs)")
    ap.add_argument("--results", default="results", help="output folder (default: results)")
    ap.add_argument("--machine", help="free-text description of the machine")
    ap.add_argument(
        "--interference",
        metavar="FOLDER",
        help="PackRat multi-instance folder -> <results>/tables/interference.csv",
    )
    args = ap.parse_args(argv)
    try:
        return run(args, ap)
    except packrat.PackratError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def run(args, ap) -> int:
    out = Path(args.results)
    if args.interference:
        table = packrat.interference_table(args.interference)
        (out / "tables").mkdir(parents=True, exist_ok=True)
        tidy.write(table, str(out / "tables" / "interference.csv"))
        print(f"imported {len(table)} groups into {out}/tables/interference.csv", file=sys.stderr)
        if not args.sources:
            return 0
    elif not args.sources:
        ap.error("give a PackRat results folder, or --interference FOLDER")
    n = write(
        args.sources,
        out / "tables/cells.csv",
        out / "tables/samples.csv",
        out / "tables/skipped.csv",
        out / "machine.json",
        args.machine,
    )
    print(f"imported {n} cells into {out}/tables/cells.csv", file=sys.stderr)
    return 0


if "snakemake" in globals():
    sm = snakemake  # noqa: F821
    write(
        sm.params.sources,
        sm.output.cells,
        sm.output.samples,
        sm.output.skipped,
        sm.output.machine,
        sm.params.description,
    )
elif __name__ == "__main__":
    sys.exit(main())
