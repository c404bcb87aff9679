"""``numa-effects loadtest``: the recommendation under load, the MLPerf way (docs/deploy.md).

One configuration of ``tables/recommendation.csv`` (``--objective``, ``--role``: the
recommendation or its strongest baseline) is started warm through the measuring stack (the deploy
job's spec, ``measure.job.prepare``, ``measure.warm``: the pinned ``measure.cell``
processes) and driven by MLPerf's LoadGen as the system under test. Queries are queued; an idle
instance takes up to its batch of queued samples for one ``go`` (one step of its whole batch), and
a thread per instance reads its replies and completes those samples. Offline gives images/s;
Server the highest Poisson rate whose p99 (LoadGen's) stays within the latency bound, found by
bisection over a few short LoadGen runs. Every run is a row of ``tables/loadtest.csv``; LoadGen's
summary and detail logs stay in ``loadtest/<role>/<scenario>/<run>/``, and how the rows were made
(command, versions, host, load) in ``loadtest/<role>/provenance.json``."""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import math
import os
import re
import sys
import threading
import time
from pathlib import Path

import mlperf_loadgen as lg
import pandas as pd
import yaml

from numa_effects.measure import job as job_mod
from numa_effects.measure import provenance, warm
from numa_effects.plan import paths, topology
from numa_effects.plan import spec as spec_mod
from numa_effects.plan.deploy import LOADTEST
from numa_effects.plan.products.deploy import rerun_job

TABLE = paths.table("loadtest")
OUT = paths.LOADTEST_DIR + "/{role}"
ROLES = ("recommended", "baseline")
OFFLINE, SERVER = "offline", "server"
COLUMNS = [
    *("model", "objective", "role", "configuration", "layout", "scenario", "target_qps"),
    *("achieved", "p50_ms", "p99_ms", "bound_ms", "meets_bound", "found", "queries", "valid"),
    *("unsatisfied", "duration_s", "logs"),
]
BOUND_FACTOR = 3.0  # the default bound: this many times the configuration's measured latency
WARM_STEPS = LOADTEST["warm_steps"]  # untimed steps per instance first (a compiled model compiles)
MAX_DURATION = LOADTEST["max_duration"]  # a LoadGen run's longest, x its minimum duration
SAMPLES = 1024  # the query sample library: slots, each instance holds its own input


class LoadtestError(RuntimeError):
    """What stops a load test before LoadGen runs (one line for the user)."""


# -- the configuration ---------------------------------------------------------------------------


def strongest_baseline(rows: pd.DataFrame) -> pd.Series | None:
    """The baseline row the recommendation has the smallest gain over (measured, else
    predicted): the one closest to it."""
    base = rows[rows["role"] == "baseline"]
    if base.empty:
        return None
    better = base["gain"].where(base["gain"] > 0)
    return base.loc[better.idxmin()] if better.notna().any() else base.iloc[0]


def pick(results: Path, objective: str, role: str, model: str | None = None):
    """(the row of recommendation.csv, its configuration in the deploy plan) of ``role``."""
    try:
        table = pd.read_csv(results / paths.table("recommendation"))
        plan = json.loads((results / paths.DEPLOY_PLAN).read_text())
    except OSError as exc:
        raise LoadtestError(f"{results} has no deploy answer ({exc})") from exc
    rows = table[table["objective"] == objective]
    if model:
        rows = rows[rows["model"] == model]
    if rows.empty:
        known = ", ".join(dict.fromkeys(table["objective"]))
        raise LoadtestError(f"no objective {objective!r} in recommendation.csv (known: {known})")
    rows = rows[rows["model"] == rows["model"].iloc[0]]
    row = rows[rows["role"] == "recommended"]
    row = strongest_baseline(rows) if role == "baseline" else row.iloc[0] if len(row) else None
    if row is None:
        raise LoadtestError(f"{objective}: no {role} configuration in recommendation.csv")
    return row, plan["configurations"][row["config"]]


# -- the instances ---------------------------------------------------------------------------------


@contextlib.contextmanager
def started(configuration: dict, job: dict, logdir: Path, timeout_s: float):
    """The ``warm.Pool`` of ``configuration``: its instances started pinned, ready, then warm
    (``WARM_STEPS`` untimed steps)."""
    group = spec_mod.deploy(job, {"c": configuration})
    ready = job_mod.prepare(group.configurations["c"], topology.current())
    if not isinstance(ready, job_mod.Ready):
        raise LoadtestError(f"cannot start it here: {getattr(ready, 'message', ready)}")
    spec = spec_mod.Spec(ready.configuration, group.settings)
    logs = [logdir / f"i{j}.log" for j in range(len(spec.instances))]
    with warm.started({"c": (spec, ready.environs, logs)}, timeout_s, WARM_STEPS) as pools:
        if pools["c"].failed is not None:
            raise LoadtestError(pools["c"].failed.message)
        yield pools["c"]
    if pools["c"].failed is not None:  # it did not exit cleanly
        raise LoadtestError(pools["c"].failed.message)


class SUT:
    """The system under test: queued samples, a thread per instance taking up to its batch of
    them per ``go`` and completing them when its reply comes. An instance that fails ends the
    serving (the rest of the queue completes at once, so LoadGen ends) and ``error`` says why."""

    def __init__(self, pool: list, timeout_s: float):
        self.queue: collections.deque = collections.deque()
        self.cv = threading.Condition()
        self.open, self.error, self.timeout_s = True, None, timeout_s
        self.threads = [threading.Thread(target=self._serve, args=p, daemon=True) for p in pool]

    def issue(self, samples) -> None:
        with self.cv:
            self.queue.extend(samples)
            self.cv.notify_all()

    def flush(self) -> None:
        """Nothing is held back: every queued sample is taken by the next idle instance."""

    def _take(self, batch: int) -> list | None:
        with self.cv:
            while not self.queue and self.open:
                self.cv.wait()
            if not self.queue:
                return None
            return [self.queue.popleft() for _ in range(min(batch, len(self.queue)))]

    def _serve(self, inst, batch: int) -> None:
        while (took := self._take(batch)) is not None:
            if self.error is None:
                try:
                    inst.send("go")
                    inst.read(time.monotonic() + self.timeout_s, self.timeout_s)
                except Exception as exc:  # (runner.Failed, supervise.Interrupted): said after
                    self.error = exc
            lg.QuerySamplesComplete([lg.QuerySampleResponse(s.id, 0, 0) for s in took])

    def __enter__(self) -> SUT:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc) -> None:
        with self.cv:
            self.open = False
            self.cv.notify_all()
        for t in self.threads:
            t.join()


# -- LoadGen ---------------------------------------------------------------------------------------


def settings(scenario: str, rate: float, bound_ms: float, opts) -> lg.TestSettings:
    """LoadGen's settings of one run: performance only, ``opts.min_duration_s`` and
    ``opts.min_queries`` (set for a small host; recorded in the provenance), and at most
    ``MAX_DURATION`` x the minimum duration (a low rate's queries would take long: LoadGen
    then says the minimum queries are not satisfied)."""
    s = lg.TestSettings()
    s.mode = lg.TestMode.PerformanceOnly
    s.min_duration_ms = int(opts.min_duration_s * 1000)
    s.max_duration_ms = int(MAX_DURATION * opts.min_duration_s * 1000)
    s.min_query_count = int(opts.min_queries)
    if scenario == OFFLINE:
        s.scenario = lg.TestScenario.Offline
        s.offline_expected_qps = rate
    else:
        s.scenario = lg.TestScenario.Server
        s.server_target_qps = rate
        s.server_target_latency_ns = int(bound_ms * 1e6)
    return s


SUMMARY = {
    "valid": r"^Result is\s*:\s*(\w+)",
    "achieved": r"^(?:Completed )?[Ss]amples per second\s*:\s*([\d.]+)",
    "p50_ns": r"^50\.00 percentile latency \(ns\)\s*:\s*(\d+)",
    "p99_ns": r"^99\.00 percentile latency \(ns\)\s*:\s*(\d+)",
}


def parse(outdir: Path) -> dict:
    """A run's result from LoadGen's own logs: the summary's validity (and the constraints it
    says are not satisfied), samples per second, p50 and p99; the detail log's query count."""
    text = (outdir / "mlperf_log_summary.txt").read_text()
    got = {k: m.group(1) if (m := re.search(p, text, re.M)) else None for k, p in SUMMARY.items()}
    num = {k: float(v) if v else math.nan for k, v in got.items() if k != "valid"}
    lines = (outdir / "mlperf_log_detail.txt").read_text().splitlines()
    detail = [
        json.loads(ln.removeprefix(":::MLLOG ")) for ln in lines if ln.startswith(":::MLLOG ")
    ]
    unmet = re.findall(r"^\s+(.+?) satisfied\s*:\s*NO", text, re.M)
    return {
        "valid": got["valid"],
        "achieved": num["achieved"],
        "p50_ms": num["p50_ns"] / 1e6,
        "p99_ms": num["p99_ns"] / 1e6,
        "queries": {e["key"]: e["value"] for e in detail}.get("result_query_count"),
        "unsatisfied": "; ".join(u.strip().lower() for u in unmet),
    }


def run(sut, scenario: str, rate: float, bound_ms: float, opts, outdir: Path) -> dict:
    """One LoadGen run at ``rate`` (Offline: the expected rate; Server: the offered one)."""
    outdir.mkdir(parents=True, exist_ok=True)
    log = lg.LogSettings()
    log.log_output.outdir = str(outdir)
    log.log_output.copy_summary_to_stdout = False
    log.enable_trace = False
    handle = lg.ConstructSUT(sut.issue, sut.flush)
    qsl = lg.ConstructQSL(SAMPLES, SAMPLES, lambda _: None, lambda _: None)
    t0 = time.monotonic()
    try:
        lg.StartTestWithLogSettings(handle, qsl, settings(scenario, rate, bound_ms, opts), log)
    finally:
        lg.DestroyQSL(qsl)
        lg.DestroySUT(handle)
    if sut.error is not None:
        raise LoadtestError(f"an instance failed under load: {sut.error}")
    got = parse(outdir) | {"scenario": scenario, "target_qps": rate, "bound_ms": bound_ms}
    got["meets_bound"] = bool(got["p99_ms"] <= bound_ms)
    return got | {"duration_s": time.monotonic() - t0, "logs": str(outdir)}


def bisect(serve, top: float, bound_ms: float, runs: int) -> list[dict]:
    """Server runs at rates bisected in (0, ``top``]: a rate whose p99 meets the bound raises
    the floor, one that does not lowers the ceiling; the highest that met is ``found``."""
    lo, hi, rows = 0.0, top, []
    for _ in range(runs):
        rate = (lo + hi) / 2
        got = serve(rate)
        rows.append(got | {"found": False})
        lo, hi = (rate, hi) if got["meets_bound"] else (lo, rate)
    met = [r for r in rows if r["meets_bound"]]
    if met:
        max(met, key=lambda r: r["target_qps"])["found"] = True
    return rows


# -- the command -----------------------------------------------------------------------------------


def bound_of(args, row: pd.Series, step_s: float) -> tuple[float, str]:
    """(latency bound ms, where it comes from): ``--bound-ms``, the config's
    ``deploy.latency_bound_ms``, else ``BOUND_FACTOR`` x the configuration's measured tail (the
    deploy run's p99, or its slowest request where it timed too few for a p99), else x its
    warm step here."""
    if args.bound_ms:
        return float(args.bound_ms), "--bound-ms"
    if args.config and Path(args.config).is_file():
        cfg = yaml.safe_load(Path(args.config).read_text()) or {}
        got = (cfg.get("deploy") or {}).get("latency_bound_ms")
        if got:
            return float(got), f"deploy.latency_bound_ms of {args.config}"
    if row.get("tail_ms", math.nan) > 0:
        said = f"{BOUND_FACTOR:g} x the deploy run's {row['tail_kind']}"
        return BOUND_FACTOR * float(row["tail_ms"]), said
    return BOUND_FACTOR * step_s * 1e3, f"{BOUND_FACTOR:g} x the warm step measured here"


def load_role(args, results: Path, role: str, bound=None) -> tuple[list[dict], dict]:
    """(rows, provenance) of one role's Offline run and Server bisection."""
    row, conf = pick(results, args.objective, role, args.model)
    out = results / OUT.format(role=role)
    head = {"model": row["model"], "objective": row["objective"], "role": role}
    head |= {"configuration": row["config"], "layout": row["layout"]}
    load = {"loadavg_before": os.getloadavg()}
    with started(conf, rerun_job(results), out / "logs", args.timeout_s) as pool:
        step_s = pool.step_s()
        bound_ms, source = bound or bound_of(args, row, step_s)
        capacity = sum(pool.batches) / step_s
        with SUT(list(zip(pool.insts, pool.batches, strict=True)), args.timeout_s) as sut:
            off = run(sut, OFFLINE, capacity, bound_ms, args, out / OFFLINE / "run")
            top = off["achieved"] if off["achieved"] > 0 else capacity

            def serve(rate: float) -> dict:
                return run(sut, SERVER, rate, bound_ms, args, out / SERVER / f"{rate:.2f}qps")

            server = bisect(serve, top, bound_ms, args.server_runs)
    rows = [head | off | {"found": False}, *(head | r for r in server)]
    prov = provenance_of(args, load, step_s, (bound_ms, source))
    (out / "provenance.json").write_text(json.dumps(prov, indent=1, default=str))
    return rows, prov


def provenance_of(args, load: dict, step_s: float, bound: tuple[float, str]) -> dict:
    return {
        "command": " ".join(["numa-effects loadtest", *args.argv]),
        "versions": provenance.versions(("torch", "torchvision", "mlcommons-loadgen")),
        "host": provenance.host(),
        **load,
        "loadavg_after": os.getloadavg(),
        "finished_at": provenance.now(),
        "warm_step_s": step_s,
        "bound_ms": bound[0],
        "bound_from": bound[1],
        "loadgen": {k: getattr(args, k) for k in ("min_duration_s", "min_queries", "server_runs")}
        | {"max_duration_s": MAX_DURATION * args.min_duration_s},
    }


def write(results: Path, rows: list[dict]) -> Path:
    """``tables/loadtest.csv``: these rows in place of earlier ones of the same model,
    objective and role."""
    path = results / TABLE
    new = pd.DataFrame(rows, columns=COLUMNS)
    if path.is_file():
        old = pd.read_csv(path)
        keys = ["model", "objective", "role"]
        same = old[keys].apply(tuple, axis=1).isin(set(new[keys].apply(tuple, axis=1)))
        new = pd.concat([old[~same], new], ignore_index=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    new.to_csv(path, index=False)
    return path


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="numa-effects loadtest", description=__doc__)
    ap.add_argument("--results", default="results", help="a results folder with a deploy answer")
    ap.add_argument("--objective", default="throughput", help="a row of recommendation.csv")
    ap.add_argument("--role", choices=[*ROLES, "both"], default="both")
    ap.add_argument("--model", default=None, help="default: the objective's first model")
    ap.add_argument("--bound-ms", type=float, default=None, help="the Server's p99 bound")
    ap.add_argument("--config", default=None, help="a config whose deploy.latency_bound_ms counts")
    ap.add_argument("--min-duration-s", type=float, default=10.0, help="per LoadGen run")
    ap.add_argument("--min-queries", type=int, default=100, help="per LoadGen run")
    ap.add_argument("--server-runs", type=int, default=4, help="Server runs of the bisection")
    ap.add_argument("--timeout-s", type=float, default=600.0, help="per instance reply")
    return ap


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    args.argv = sys.argv[1:] if argv is None else list(argv)
    results = Path(args.results)
    roles = ROLES if args.role == "both" else (args.role,)
    rows, bound = [], None
    try:
        for role in roles:  # the baseline is held to the recommendation's bound
            got, prov = load_role(args, results, role, bound)
            rows += got
            bound = bound or (prov["bound_ms"], prov["bound_from"])
    except LoadtestError as exc:
        print(f"numa-effects loadtest: {exc}", file=sys.stderr)
        return 2
    path = write(results, rows)
    shown = ["role", "configuration", "scenario", "target_qps", "achieved", "p50_ms", "p99_ms"]
    print(pd.DataFrame(rows)[[*shown, "bound_ms", "found", "valid"]].to_string(index=False))
    print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
