"""Snakemake entry: run one pinned benchmark cell (see numa_effects.launcher)."""

import sys

from numa_effects import launcher

sm = snakemake  # noqa: F821
result = launcher.run(sm.params.spec, sm.output[0], sm.log[0], float(sm.params.timeout_s))
cell = "/".join(
    str(result["cell"][k]) for k in ("model", "opt", "placement", "threads", "batch_size")
)
if result["status"] == "ok":
    s = result["stats"]
    print(
        f"cell {cell}: median {s['median_s'] * 1e3:.1f} ms/batch, n={s['n']}, "
        f"{result['throughput']['ips']:.1f} img/s ({result['measurement']['stop_reason']})",
        file=sys.stderr,
    )
else:
    f = result["failure"]
    print(f"cell {cell}: FAILED ({f['cause']}): {f['message']}", file=sys.stderr)
