"""The pinned child process: builds the model, applies the optimization, times it, writes JSON.

Run by ``launcher`` as ``numactl <binding> python -m numa_effects.measure.cell --spec S --out O``
with
``OMP_NUM_THREADS`` set. Exits non-zero with a one-line reason on stderr when the cell cannot be
measured as labelled (wrong thread count, build error); the launcher records that as a failure.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import resource
import sys
import time
import warnings

from numa_effects import stats
from numa_effects.measure import contention, provenance, verify
from numa_effects.measure import result as cellresult
from numa_effects.measure import timing as measure
from numa_effects.plan.optimizations import OPTIMIZATIONS

EXIT_MISMATCH = 3


class CellError(RuntimeError):
    """The cell cannot be measured as labelled."""


def set_threads(threads: int) -> dict:
    import torch

    torch.set_num_threads(threads)
    with contextlib.suppress(RuntimeError):  # already set: only possible once per process
        torch.set_num_interop_threads(1)
    got = torch.get_num_threads()
    if got != threads:
        raise CellError(f"torch.get_num_threads() is {got}, the cell asks for {threads}")
    return {"torch_num_threads": got, "torch_num_interop_threads": torch.get_num_interop_threads()}


def build(model_name: str, opt: str, batch_size: int, image_size: int, seed: int, settings: dict):
    """Model and input, with the optimization applied. Returns (fn, x, timings, warnings)."""
    import torch
    import torchvision

    torch.manual_seed(seed)
    caught: list[dict] = []
    t0 = time.perf_counter()
    model = torchvision.models.get_model(model_name, weights=None).eval()
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(batch_size, 3, image_size, image_size, generator=gen)
    t1 = time.perf_counter()
    with warnings.catch_warnings(record=True) as wlist, torch.inference_mode():
        warnings.simplefilter("always")
        fn, x = OPTIMIZATIONS[opt].prepare(model, x, settings)
    t2 = time.perf_counter()
    seen = set()
    for w in wlist:
        key = (w.category.__name__, str(w.message).splitlines()[0])
        if key not in seen:
            seen.add(key)
            caught.append({"category": key[0], "message": key[1]})
    return fn, x, {"build_s": t1 - t0, "prepare_s": t2 - t1}, caught


def build_for(spec: dict):
    """``build`` for a launcher spec: the model, input and optimization the cell names."""
    cell, settings = spec["cell"], spec["settings"]
    return build(
        cell["model"],
        cell["opt"],
        int(cell["batch_size"]),
        int(cell["image_size"]),
        int(settings.get("seed", 0)),
        {**settings, "compile_cache_dir": spec.get("compile_cache_dir")},
    )


def replicate_contention(m: measure.Measurement, attempts: list[dict], settings: dict) -> dict:
    """The replicate's contention verdict from what its statistics use: contended when too few
    clean iterations remain after exclusion and retries, or when the clean iterations' own
    foreign share (duration-weighted) is above ``contention.FOREIGN_SHARE_LIMIT``. The whole
    window's verdict (``contention.Watch``, which spans excluded iterations and back-offs too)
    is kept as ``contended_window``."""
    min_clean = int(measure.settings_with_defaults(settings)["min_iterations"])
    out: dict = {"retries": len(attempts), "retried_attempts": attempts}
    if not m.foreign_pct:
        return out
    keep = [not e for e in m.excluded]
    w = [x for x, k in zip(m.latencies_s, keep, strict=True) if k]
    f = [x for x, k in zip(m.foreign_pct, keep, strict=True) if k]
    clean_pct = sum(a * b for a, b in zip(w, f, strict=True)) / sum(w) if w else None
    too_few = m.contended(min_clean if m.protocol == "adaptive" else 1)
    busy = clean_pct is not None and clean_pct > 100 * contention.FOREIGN_SHARE_LIMIT
    out["excluded_iterations"] = int(sum(m.excluded))
    out["clean_foreign_pct"] = None if clean_pct is None else round(clean_pct, 2)
    out["contended"] = bool(too_few or busy)
    reasons = []
    if too_few:
        reasons.append(
            f"{sum(m.excluded)} of {len(m.latencies_s)} timed iterations excluded "
            f"(> {m.exclude_foreign_pct:g} % foreign CPU) after {len(attempts)} retries"
        )
    if busy:
        reasons.append(f"other tasks used {clean_pct:.1f} % of the CPUs in the clean iterations")
    out["contended_reason"] = "; ".join(reasons) or None
    return out


def run(spec: dict) -> dict:
    import torch

    started = provenance.now()
    cell = spec["cell"]
    settings = spec["settings"]
    threads = int(cell["threads"])
    thread_info = set_threads(threads)
    bind = provenance.binding()
    fn, x, timings, caught = build_for(spec)

    def step():
        with torch.inference_mode():
            fn(x)

    with warnings.catch_warnings(record=True) as wlist:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        step()
        timings["first_call_s"] = time.perf_counter() - t0
        # Did anything else use this cell's CPUs while it was timed? (measure.contention)
        watch = contention.Watch(spec["plan"]["cpus"])
        # foreign CPU per timed iteration: contaminated ones are excluded, a replicate that
        # stays contended is measured again after a back-off (measure.run_with_retries)
        probe = contention.IterationProbe(spec["plan"]["cpus"])
        m, attempts = measure.run_with_retries(
            step, settings, probe=probe, first_call_s=timings["first_call_s"]
        )
        noise = watch.stop()
    noise["contended_window"] = noise.get("contended")
    noise["contended_window_reason"] = noise.get("contended_reason")
    noise.update(replicate_contention(m, attempts, settings))
    for w in wlist:
        entry = {"category": w.category.__name__, "message": str(w.message).splitlines()[0]}
        if entry not in caught:
            caught.append(entry)

    # After warm-up and timing, so reading /proc cannot disturb a timed iteration: the threads
    # exist and the weights and activations are resident.
    verification = verify.run(spec["plan"])

    clean = m.clean_latencies() or m.latencies_s  # all excluded: keep them, flagged contended
    summary = stats.summarize(clean)
    result = {
        "schema_version": cellresult.SCHEMA_VERSION,
        "status": "ok",
        "cell": cell,
        "replicate": int(spec.get("replicate", 1)),
        "plan": spec["plan"],
        "settings": settings,
        "measurement": {**m.to_dict(), **timings},
        "stats": summary,
        "throughput": stats.throughput(int(cell["batch_size"]), clean, summary["median_s"]),
        "binding": {**bind, **thread_info, "verification": verification},
        "contention": noise,
        "provenance": {
            "started_at": started,
            "finished_at": provenance.now(),
            "versions": provenance.versions(),
            "env": provenance.relevant_env(),
            "host": provenance.host(),
            "slurm": provenance.slurm(),
            "peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
            "warnings": caught,
        },
        "failure": None,
    }
    if not verification["ok"]:
        # A cell whose threads or pages are not where its label says is a failed cell: its
        # numbers stay in ``measurement`` for diagnosis but produce no statistics.
        result["status"] = "failed"
        result["stats"] = None
        result["throughput"] = None
        result["failure"] = {
            "cause": verification["cause"],
            "message": verify.failure_message(verification),
        }
    return result


def child_main(module: str, run_fn, argv=None, description: str | None = None) -> int:
    """The command line of every pinned child the launcher runs (``python -m <module>``):
    read the spec, run, write the result JSON atomically; exit EXIT_MISMATCH when the process
    cannot be measured as labelled."""
    ap = argparse.ArgumentParser(prog=f"python -m {module}", description=description)
    ap.add_argument("--spec", required=True, help="spec JSON written by the launcher")
    ap.add_argument("--out", required=True, help="where to write the result JSON")
    args = ap.parse_args(argv)
    with open(args.spec) as fh:
        spec = json.load(fh)
    try:
        result = run_fn(spec)
    except CellError as exc:
        print(f"{module}: {exc}", file=sys.stderr)
        return EXIT_MISMATCH
    cellresult.write_json_atomic(args.out, result)
    if result.get("status", "ok") != "ok":
        print(
            f"{module}: FAILED ({result['failure']['cause']}): {result['failure']['message']}",
            file=sys.stderr,
        )
    return 0


def main(argv=None) -> int:
    return child_main("numa_effects.measure.cell", run, argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
