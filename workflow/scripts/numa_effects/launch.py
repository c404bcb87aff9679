"""``numa-effects launch``: start what a run recommends as it was measured (docs/deploy.md,
"Starting it"). One row of ``tables/recommendation.csv`` (``--objective``, ``--role``) names a
configuration of the deploy plan; its instances start side by side, each pinned, with its
threads and allocator, by the measuring stack's own builders (``plan.spec.deploy``,
``measure.job.prepare``, ``measure.runner.command``) and the interpreter that measured it. Each
runs the reference server (``measure.cell --serve``: the measured model, built as measured) or
the program given after ``--``, told its part in ``runner.LAUNCH_KEYS``. ``--print`` prints the
lines as a POSIX sh script instead; the summary's ``run:`` lines are these (``attach``)."""

from __future__ import annotations

import argparse
import csv
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

from numa_effects.measure import cell, job, provenance, runner
from numa_effects.plan import cpulist, launchers, paths
from numa_effects.plan import spec as spec_mod
from numa_effects.plan import topology as topology_mod
from numa_effects.plan.code import SCRIPTS
from numa_effects.plan.products.deploy import rerun_job
from numa_effects.tables import history

RECOMMENDED = "recommended"
SPEC = "deploy/launch/{config}.spec.json"  # the reference server's spec, in the results folder
VERSIONS = ("numa_effects", "torch", "torchvision")  # what builds the model: must match
RUN_CPU_ALLOCATOR = {"jemalloc": "--enable-jemalloc", "tcmalloc": "--enable-tcmalloc"}


class Refused(Exception):
    """Bad input: one line, nothing started."""


@dataclass(frozen=True)
class Started:
    """One instance: its command, environment and the shell line that runs the same."""

    cmd: list[str]
    env: dict
    line: str


def _json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def pick(results: Path, objective: str | None, role: str) -> dict:
    """The row of recommendation.csv of ``objective`` (``latency-b16`` = ``latency b16``;
    default ``throughput``, else the first) and ``role`` (``recommended``, a baseline's name or
    a configuration's id)."""
    path = results / paths.table("recommendation")
    try:
        with open(path, newline="") as fh:
            rows = list(csv.DictReader(fh))
    except OSError as exc:
        raise Refused(f"cannot read {path}: {exc.strerror}") from None
    names = list(dict.fromkeys(r["objective"] for r in rows))
    if not names:
        raise Refused(f"{path} recommends nothing (no configuration was placed)")
    want = (objective or ("throughput" if "throughput" in names else names[0])).replace("-", " ")
    if want not in names:
        raise Refused(f"no objective {objective!r} in {path} (it has: {', '.join(names)})")
    rows = [r for r in rows if r["objective"] == want and r["config"]]
    got = [r for r in rows if role in (r["role"], r["config"], *r["baseline"].split(" = "))]
    if not got:
        roles = {RECOMMENDED, *(b for r in rows for b in r["baseline"].split(" = ") if b)}
        roles = sorted(roles) + [r["config"] for r in rows]
        raise Refused(f"no role {role!r} for {want!r} in {path} (it has: {', '.join(roles)})")
    return got[0]


def check_here(results: Path, topo) -> None:
    """Refuse another machine's results or another code version's."""
    problem = history.machine_problem(results, topo)
    if problem:
        raise Refused(problem)
    recorded = _json(results / paths.MACHINE).get("versions") or {}
    here = provenance.versions(VERSIONS[1:])
    for name in VERSIONS:
        if recorded.get(name) and recorded[name] != here.get(name):
            raise Refused(
                f"{results / paths.MACHINE} was measured with {name} {recorded[name]}, this is "
                f"{here.get(name) or 'none'}: re-run the pipeline with this code"
            )


def prepare(results: Path, cid: str, conf: dict, topo) -> tuple[job.Ready, Path]:
    """The instances resolved here as the front door resolves them, their spec (one round of
    ``spec.deploy``, as the deploy job measured it) written."""
    s = spec_mod.deploy(rerun_job(results), {cid: conf}).measurements()[0][1]
    ready = job.prepare(s.configuration, topo)
    if not isinstance(ready, job.Ready):
        raise Refused(f"{cid} cannot start here: {getattr(ready, 'message', ready)}")
    path = results / SPEC.format(config=cid)
    path.parent.mkdir(parents=True, exist_ok=True)
    s = replace(s, configuration=ready.configuration)
    path.write_text(json.dumps(s.to_json(), indent=1))
    return ready, path


def instances(ready: job.Ready, spec_path: Path, program: list[str], serve: list[str]):
    """Each instance's ``Started``: the program, or the reference server, pinned."""
    out = []
    for j, (inst, base) in enumerate(
        zip(ready.configuration.instances, ready.environs, strict=True)
    ):
        env = runner.child_env(inst.threads, base) | {
            "NUMA_EFFECTS_INSTANCE": str(j),
            "NUMA_EFFECTS_BATCH": str(inst.cell["batch_size"]),
            "NUMA_EFFECTS_THREADS": str(inst.threads),
            "NUMA_EFFECTS_INTEROP_THREADS": str(cell.INTEROP_THREADS),
            "NUMA_EFFECTS_CPUS": cpulist.format(inst.plan.cpus),
            "NUMA_EFFECTS_OPT": inst.cell["opt"],
            "NUMA_EFFECTS_MODEL": inst.cell["model"],
        }
        if program:
            cmd = runner.pinned(inst.plan, program)
        else:
            cmd = runner.command(inst.plan, str(spec_path), j, serve)
        out.append(Started(cmd, env, runner.command_line(cmd, inst.threads, env)))
    return out


def run_cpu_line(conf: dict, ready: job.Ready, spec_path: Path, topo) -> tuple[str, str | None]:
    """(the ``run_cpu`` line that starts the same instances with the same environment, why
    none): its arguments parsed by torch's own parser and its layout (``run_cpu_layout``)
    compared with the instances' CPUs, threads and memory binding."""
    args = (conf.get("run_cpu") or "").removeprefix(f"python -m {launchers.RUN_CPU}")
    args = args.removesuffix("serve.py").strip()  # a plan of an older version
    if not args:
        return "", None
    alloc = ready.allocator or {}
    if alloc.get("library") and alloc["name"] not in RUN_CPU_ALLOCATOR:
        return "", f"run_cpu cannot preload {alloc['name']}"
    if alloc.get("library") and launchers.run_cpu_allocator()[0] != alloc["name"]:
        return "", f"run_cpu does not find {alloc['library']} where it looks"
    if alloc.get("name") == "jemalloc":
        return "", "run_cpu sets a MALLOC_CONF of its own for jemalloc"
    flag = RUN_CPU_ALLOCATOR.get(alloc.get("name"), "--use-default-allocator")
    # --no-python: run_cpu refuses a module (-m) that is not a .py file
    tail = [*shlex.split(args), flag, "--disable-iomp", "--no-python", sys.executable]
    tail += ["-m", runner.CHILD_MODULE, "--spec", str(spec_path), "--serve"]
    import torch.backends.xeon.run_cpu as rc  # its own parser: what it accepts

    parser = argparse.ArgumentParser(exit_on_error=False)
    rc.create_args(parser)
    try:
        ns = parser.parse_args(tail)
    except (argparse.ArgumentError, ValueError, SystemExit) as exc:
        return "", f"run_cpu does not accept {args!r}: {exc}"
    layout = launchers.run_cpu_layout(
        topo, ninstances=ns.ninstances, ncores_per_instance=ns.ncores_per_instance,
        skip_cross_node_cores=ns.skip_cross_node_cores,
    )  # fmt: skip
    plans = [i.plan for i in ready.configuration.instances]
    want = sorted((p.cpus, p.mem_nodes, p.threads, p.mem_policy) for p in plans)
    if sorted((s.cpus, s.mem_nodes, s.threads, "bind") for s in layout) != want:
        return "", "run_cpu would start other CPUs, threads or memory binding"
    env = {k: v for k, v in alloc.get("env", {}).items() if k != "LD_PRELOAD"}
    env["PYTHONPATH"] = str(SCRIPTS)
    shown = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    return f"env {shown} {shlex.join([sys.executable, '-m', launchers.RUN_CPU, *tail])}", None


def attach(plan: dict, results: Path) -> dict:
    """The deploy plan with each configuration's ``launch`` (the ``--print`` script as one
    line) and ``launch_run_cpu`` lines, and why one is missing in its notes (the table's
    ``command`` and ``run_cpu`` columns)."""
    topo = topology_mod.current()
    for cid, conf in plan["configurations"].items():
        try:
            ready, path = prepare(Path(results), cid, conf, topo)
        except Refused as exc:
            conf["notes"] = [*conf.get("notes", ()), f"no command here: {exc}"]
            continue
        conf["launch"] = " ".join(runner.script([s.line for s in instances(ready, path, [], [])]))
        conf["launch_run_cpu"], why = run_cpu_line(conf, ready, path, topo)
        if why:
            conf["notes"] = [*conf.get("notes", ()), f"no run_cpu line: {why}"]
    return plan


def resolve(results: Path, row: dict, program: list[str], serve: list[str]) -> list[Started]:
    """The instances of ``row``'s configuration, checked where they would start."""
    topo = topology_mod.current()
    check_here(results, topo)
    conf = _json(results / paths.DEPLOY_PLAN).get("configurations", {}).get(row["config"])
    if conf is None:
        raise Refused(f"{results / paths.DEPLOY_PLAN} has no configuration {row['config']!r}")
    if program and not (shutil.which(program[0]) or os.access(program[0], os.X_OK)):
        raise Refused(f"no program {program[0]!r} (not on PATH, not an executable file)")
    ready, path = prepare(results, row["config"], conf, topo)  # refuses CPUs not allowed here
    return instances(ready, path, program, serve)


def run(started: list[Started]) -> int:
    """Start every instance, forward SIGINT/SIGTERM to each, wait for all: the exit status of
    the first to fail (128 + its signal when killed), else 0."""
    procs = [subprocess.Popen(s.cmd, env=s.env) for s in started]

    def forward(signum, frame):
        for p in procs:
            if p.poll() is None:
                p.send_signal(signum)

    old = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
    failed: list[int] = []
    try:
        while any(p.returncode is None for p in procs):
            for p in procs:
                if p.returncode is None and p.poll() is not None and p.returncode:
                    failed.append(p.returncode if p.returncode > 0 else 128 - p.returncode)
            time.sleep(0.05)
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
    return failed[0] if failed else 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    program = argv[argv.index("--") + 1 :] if "--" in argv else []
    ap = argparse.ArgumentParser(prog="numa-effects launch", description=__doc__)
    ap.add_argument("--results", default="results", help="the run's results folder")
    ap.add_argument("--objective", help="e.g. latency-b16, throughput (default: throughput)")
    ap.add_argument("--role", default=RECOMMENDED, help="recommended, a baseline or config id")
    ap.add_argument("--print", action="store_true", help="print the sh script; start nothing")
    ap.add_argument("--requests", type=int, help="reference server: stop after N requests")
    ap.add_argument("--seconds", type=float, help="reference server: stop after S seconds")
    args = ap.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    serve = [f"--{k}={v}" for k in ("requests", "seconds") if (v := getattr(args, k)) is not None]
    results = Path(args.results)
    try:
        started = resolve(results, pick(results, args.objective, args.role), program, serve)
    except Refused as exc:
        print(f"numa-effects launch: {exc}", file=sys.stderr)
        return 2
    if args.print:
        print("\n".join(runner.script([s.line for s in started])))
        return 0
    return run(started)


if __name__ == "__main__":
    sys.exit(main())
