"""``python -m benchmarks.precision_note [RESULTS]``: the precision grid's numbers, from the
tables of one run of ``config/precision.yaml`` (docs/precision.md, "The precision grid"), nothing
measured here:

- the speedup of each optimization and allocator over float32 eager with glibc, at the run's
  thread counts and batch sizes (bf16, int8, compile, jemalloc, tcmalloc), with the 95 % CI
  (``precision.csv``), marked where the dtype is not native, not verified, or the timing was
  disturbed;
- the peak of each dtype per (placement, threads): measured (best kernel) and theoretical
  (``peak.csv``);
- the efficiency range over the cells against two denominators: float32 ``torch.mm`` alone
  (``peak.csv``'s ``mm_gflop_per_s``), which overstates it for bf16 and int8, and the peak of
  the cell's dtype on the models' path (``cells.csv``'s ``efficiency``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

TABLES = ("precision.csv", "peak.csv", "cells.csv")  # what render reads


def speedups(precision: pd.DataFrame) -> pd.DataFrame:
    """One row per (opt, allocator, placement, threads, batch) with the speedup and its CI."""
    p = precision.copy()
    pairs = zip(p["opt"], p["allocator"], strict=True)
    p["variant"] = [o if a == "default" else f"{o}+{a}" for o, a in pairs]
    marks = []
    for r in p.itertuples(index=False):
        m = []
        if r.native is False or str(r.native) == "False":
            m.append("non-native")
        if r.dtype_verified is False or str(r.dtype_verified) == "False":
            m.append("dtype not verified")
        if bool(r.contended) or bool(r.noisy):
            m.append("disturbed")
        marks.append(", ".join(m))
    p["marks"] = marks
    cols = ["variant", "placement", "threads", "batch_size", "speedup", "speedup_ci_low"]
    cols += ["speedup_ci_high", "ci_method", "marks"]
    return p[cols].sort_values(["variant", "placement", "threads", "batch_size"])


def efficiency_range(cells: pd.DataFrame, peak: pd.DataFrame) -> dict:
    """min and max efficiency over the ok cells, before (float32 torch.mm alone) and after."""
    ok = cells[cells["status"] == "ok"]
    f32 = peak[(peak["dtype"] == "float32") & (peak["status"] == "ok")]
    mm = f32.set_index(["placement", "threads"])["mm_gflop_per_s"]
    idx = pd.MultiIndex.from_arrays([ok["placement"], ok["threads"].astype(int)])
    before = ok["gflop_per_s"].to_numpy() / mm.reindex(idx).to_numpy(dtype=float)
    after = ok["efficiency"].to_numpy(dtype=float)

    def span(v):
        v = v[~pd.isna(v)]
        return (float(v.min()), float(v.max())) if len(v) else (None, None)

    return {"before": span(before), "after": span(after)}


def render(results: Path) -> str:
    t = Path(results) / "tables"
    precision = pd.read_csv(t / "precision.csv")
    peak = pd.read_csv(t / "peak.csv")
    cells = pd.read_csv(t / "cells.csv")
    lines = [f"precision note, from {results}"]
    lines.append("\nspeedup over float32 eager with glibc (none/default), 95 % CI:")
    s = speedups(precision)
    for r in s.itertuples(index=False):
        ci = f"[{r.speedup_ci_low:.2f}, {r.speedup_ci_high:.2f}]"
        marks = f"  ({r.marks})" if r.marks else ""
        lines.append(
            f"  {r.variant:<18} {r.placement:<11} t{r.threads} bs{r.batch_size:<4} "
            f"{r.speedup:6.2f}x {ci:<16} {r.ci_method or ''}{marks}"
        )
    lines.append("\npeak per dtype (GFLOP/s; int8: GOP/s), measured and theoretical:")
    for r in peak.sort_values(["dtype", "placement", "threads"]).itertuples(index=False):
        lines.append(
            f"  {r.dtype:<9} {r.placement:<11} t{r.threads} {r.status:<9} "
            f"measured {r.peak_gflop_per_s:8.1f} ({r.peak_kernel}), "
            f"theoretical {r.theoretical_gflop_per_s:8.1f}; kernels: {r.kernels}"
        )
    e = efficiency_range(cells, peak)
    fmt = lambda v: "n/a" if v[0] is None else f"{v[0]:.2f} - {v[1]:.2f}"  # noqa: E731
    lines.append(f"\nefficiency before (float32 torch.mm alone): {fmt(e['before'])}")
    lines.append(f"efficiency after (the cell's dtype's peak):  {fmt(e['after'])}")
    load = cells["load_1m"].dropna() if "load_1m" in cells else pd.Series(dtype=float)
    if len(load):
        lines.append(f"load average before the cells: {load.min():.2f} - {load.max():.2f}")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "results",
        nargs="?",
        type=Path,
        default=Path("runs/precision"),
        help="the results folder of a run of config/precision.yaml (default: %(default)s)",
    )
    results = ap.parse_args(argv).results
    missing = [n for n in TABLES if not (results / "tables" / n).is_file()]
    if missing:
        print(f"error: no {', '.join(missing)} in {results / 'tables'}", file=sys.stderr)
        return 2
    print(render(results), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
