"""Helpers for the robustness tests (failures, resume, contention): start a real snakemake in
the background, find and signal its cell processes, wait for things to happen."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import yaml
from conftest import REPO, dag_jobs, proc_stat


def env(**extra: str) -> dict:
    e = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    e.update(extra)
    return e


def own_tmp(workdir: Path) -> dict:
    """``env()`` with TMPDIR inside ``workdir``: a Snakemake killed with SIGKILL cannot remove
    its temporary folder, which then stays in the test's folder instead of /tmp."""
    tmp = workdir / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    return env(TMPDIR=str(tmp))


def command(workdir: Path, config: dict | None, *args: str, snakefile: Path | None = None):
    workdir.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(snakefile or REPO / "Snakefile")]
    cmd += ["--directory", str(workdir)]
    if config is not None:
        (workdir / "config.yaml").write_text(yaml.safe_dump(config))
        cmd += ["--configfile", str(workdir / "config.yaml")]
    return cmd + list(args)


def start(workdir: Path, config: dict | None, *args: str, prefix=(), log="smk.log", **kw):
    """Start snakemake in the background, output to workdir/log."""
    workdir.mkdir(parents=True, exist_ok=True)
    out = open(workdir / log, "w")  # noqa: SIM115 - closed with the process
    cmd = [*prefix, *command(workdir, config, *args, snakefile=kw.pop("snakefile", None))]
    proc = subprocess.Popen(
        cmd,
        cwd=workdir,
        stdout=out,
        stderr=subprocess.STDOUT,
        env=kw.pop("env", env()),
        start_new_session=kw.pop("new_session", False),  # its own group, as in a terminal
    )
    proc.log_path = workdir / log
    return proc


def finish(proc: subprocess.Popen, timeout: float = 900) -> tuple[int, str]:
    rc = proc.wait(timeout=timeout)
    return rc, proc.log_path.read_text()


def run(workdir: Path, config: dict | None, *args: str, timeout: float = 900, **kw):
    """Run snakemake to the end: (returncode, output)."""
    return finish(start(workdir, config, *args, **kw), timeout)


def wait_for(cond, timeout: float, interval: float = 0.1, what: str = "condition"):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = cond()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def parent(pid: int) -> int | None:
    try:
        return int(proc_stat(pid)[1])
    except (OSError, IndexError, ValueError):
        return None


def cell_processes(root: Path) -> dict[str, int]:
    """{spec file name: pid} of the pinned cell processes (python, after numactl's exec)
    whose spec lies under ``root``. A child the cell forks or vforks shows the cell's command
    line until it execs (a library's helper); it is not the cell, and killing it instead of
    the cell would test nothing, so a match whose parent matches too is left out."""
    found = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        argv = cmdline(int(d.name))
        if "numa_effects.measure.cell" not in argv or "--spec" not in argv:
            continue
        if "numactl" in Path(argv[0]).name:
            continue  # not exec'd into python yet
        ppid = parent(int(d.name))
        if ppid is None or argv == cmdline(ppid):
            continue  # gone, or a cell's not yet exec'd child
        spec = argv[argv.index("--spec") + 1]
        if spec.startswith(str(root)):
            found[spec] = int(d.name)
    return found


def alive(pid: int) -> bool:
    try:
        state = proc_stat(pid)[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def signal_cells(root: Path, plan: dict[str, signal.Signals], proc: subprocess.Popen, timeout):
    """Send each cell whose spec path ends with a key of ``plan`` its signal, once, as soon as
    it runs; return when all were sent or snakemake ended."""
    pending = dict(plan)
    end = time.monotonic() + timeout
    while pending and proc.poll() is None and time.monotonic() < end:
        for spec, pid in cell_processes(root).items():
            for suffix, sig in list(pending.items()):
                if spec.endswith(suffix):
                    os.kill(pid, sig)
                    del pending[suffix]
        time.sleep(0.05)
    assert not pending, f"never saw the cells {list(pending)}"


def planned(workdir: Path, config: dict | None, *targets: str, log="dag.log", **kw) -> Counter:
    """{rule: jobs a run would execute} from Snakemake's DAG (``--dag dot``: jobs that need not
    run are drawn dashed), not from its log text."""
    rc, out = run(workdir, config, "--dag", "dot", *targets, log=log, **kw)
    assert rc == 0, out[-3000:]
    return dag_jobs(out)


def written_since(paths, since_ns: int) -> list[Path]:
    """The files among ``paths`` written (created or replaced) at or after ``since_ns``: the
    cells a run measured, read from its outputs rather than its log."""
    return [p for p in paths if p.stat().st_mtime_ns >= since_ns]


def copy_workflow(dst: Path) -> Path:
    """A private copy of the workflow (to edit a script without touching the repository)."""
    dst.mkdir(parents=True, exist_ok=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copy2(REPO / "Snakefile", dst / "Snakefile")
    for sub in ("workflow", "config", "envs"):
        if (REPO / sub).exists():
            shutil.copytree(REPO / sub, dst / sub, ignore=ignore)
    shutil.copytree(REPO / "profiles" / "default", dst / "profiles" / "default")
    return dst / "Snakefile"


def vm_peak_mb() -> int:
    """VmPeak of a process that builds and runs the tiny resnet18 cell as a cell would."""
    code = (
        "import numa_effects.measure.workloads.model as m, torch, re\n"
        "fn, x, *_ = m.make('resnet18', 'none', 1, 32, 0, {})\n"
        "with torch.inference_mode(): fn(x)\n"
        "print(re.search(r'VmPeak:\\s+(\\d+)', open('/proc/self/status').read()).group(1))\n"
    )
    out = subprocess.run(
        ["numactl", "--physcpubind=0", sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env=env(OMP_NUM_THREADS="1", PYTHONPATH=str(REPO / "workflow" / "scripts")),
    ).stdout
    return int(out.split()[-1]) // 1024
