"""``python -m benchmarks [NAME ...] [--grid default|quick] [--reuse] [--out DIR]``

Runs the selected benchmarks (all by default, in the order cost, replication, fidelity, noise,
overhead, bias, dag, packing, variance, canary, advise, aa, slices, designs), prints one table
each and writes ``<out>/<name>.csv``, plus ``<out>/run.json`` with the grid, the load average
before and after, and each benchmark's wall time. ``--grid quick`` uses ResNet-18 at batch
sizes 1 and 4 instead of the default grid (for a shared or slow machine). ``--reuse`` reuses
the pipeline runs of an earlier invocation (to re-print or re-analyse; do not compare times
across invocations). ``--bias-data DIR`` runs ``bias`` offline on DIR/fixed/samples.csv (e.g.
../shared/measurements/quiet-2core-xeon-*); ``--deploy-results DIR`` names the finished run
whose deploy plan ``designs`` measures in both designs."""

from __future__ import annotations

import argparse
import json
import platform
import signal
import sys
import time
from pathlib import Path

from . import (
    aa,
    advise,
    bias,
    canary,
    common,
    cost,
    dag,
    designs,
    fidelity,
    noise,
    overhead,
    packing,
    replication,
    slices,
    variance,
)

BENCHMARKS = {
    m.NAME: m
    for m in (
        cost,
        replication,
        fidelity,
        noise,
        overhead,
        bias,
        dag,
        packing,
        variance,
        canary,
        advise,
        aa,
        slices,
        designs,
    )
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help=f"benchmarks to run (default: all): {', '.join(BENCHMARKS)}",
    )
    ap.add_argument("--grid", default="default", choices=["default", "quick", "smoke"])
    ap.add_argument("--out", type=Path, default=common.ROOT / "results" / "bench")
    ap.add_argument("--reuse", action="store_true", help="reuse earlier pipeline runs")
    ap.add_argument(
        "--bias-data",
        type=Path,
        default=None,
        help="bias: analyse DIR/fixed/samples.csv instead of the cost benchmark's fixed run",
    )
    ap.add_argument(
        "--deploy-results",
        type=Path,
        default=None,
        help="designs: the finished run whose deploy plan is measured (default: results/)",
    )
    args = ap.parse_args(argv)
    # `kill` of the benchmark unwinds like Ctrl-C: the running pipeline's Snakemake is killed
    # (its cells die with it) and a background load stops (``load.DutyCycleLoad.__exit__``)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    names = args.names or list(BENCHMARKS)
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        ap.error(f"unknown benchmark(s) {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}")
    ctx = common.Context(
        grid_name=args.grid,
        out=args.out,
        reuse=args.reuse,
        bias_data=args.bias_data,
        deploy_results=args.deploy_results,
    )
    ctx.work.mkdir(parents=True, exist_ok=True)
    meta = {
        "grid": args.grid,
        "grid_config": ctx.grid(),
        "host": platform.node(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "load_before": common.load(),
        "benchmarks": {},
    }
    status = 0
    for name in names:
        t0 = time.perf_counter()
        try:
            df = BENCHMARKS[name].run(ctx)
        except Exception as exc:  # one failing benchmark must not hide the others
            # str() keeps what repr() drops (an OSError's file name)
            why = f"{type(exc).__name__}: {exc}"
            print(f"[bench] {name} FAILED: {why}", file=sys.stderr)
            meta["benchmarks"][name] = {"error": why}
            status = 1
            continue
        path = args.out / f"{name}.csv"
        df.to_csv(path, index=False)
        meta["benchmarks"][name] = {"wall_s": time.perf_counter() - t0, "csv": str(path)}
        print(f"[bench] {name}: wrote {path}", file=sys.stderr)
    meta["load_after"] = common.load()
    meta["pipeline_runs"] = {
        n: {
            "wall_s": r.wall_s,
            "returncode": r.returncode,
            "load_before": r.load_before,
            "load_after": r.load_after,
        }
        for n, r in ctx.runs.items()
    }
    (args.out / "run.json").write_text(json.dumps(meta, indent=1, default=str))
    return status


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: what ran was stopped, nothing is written
        print(
            "[bench] interrupted: the running pipeline and any load were stopped", file=sys.stderr
        )
        sys.exit(130)
