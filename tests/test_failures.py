"""A failing cell never sinks the grid. Real failures of real cells (out of memory under
max_memory_mb, a crash by signal, a hung cell hitting the timeout, numactl refusing the binding,
an exception applying the optimization) become failed results; the grid completes; the failures
show in cells.csv, failures.csv, the summary and the report; one command retries only them. And an
interruption is never recorded as a failure (numa_effects.measure.supervise)."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest
import robust
import supervised
from conftest import REPO, load_config

from numa_effects.measure import job, supervise
from numa_effects.plan import grid, placement, topology
from numa_effects.plan import spec as spec_mod

(ALLOC,) = load_config("one-cell")["allocators"]  # the allocator of every cell's path

# The schema's largest batch (65536): 0.8 GB of 32 x 32 input plus 4.3 GB for the first conv's
# output never fit max_memory_mb below; numa_effects.plan.memory estimates 8 GiB, so a machine with
# less memory than that would skip the cell at planning instead.
BIG = 65536
SCRIPTS = str(REPO / "workflow" / "scripts")


# -- one grid, several deliberately failing cells -------------------------------------------------
@pytest.fixture(scope="module")
def failing_grid(tmp_path_factory):
    """none/bs1 is fine; none/bs2 gets SIGSEGV while it runs; none/bs3 gets SIGSTOP (hangs, so
    the timeout kills it); bs200000 exceeds max_memory_mb; the other script cells fail applying
    the optimization (PYTORCH_JIT=0 turns torch.jit.script into a no-op, so torch.jit.freeze
    raises: a conversion error)."""
    work = tmp_path_factory.mktemp("failing")
    results = work / "results"
    cfg = {
        **load_config("one-cell"),
        "results": str(results),
        "optimizations": ["none", "script"],
        "batch_sizes": [1, 2, 3, BIG],
        "max_seconds_per_cell": 0.5,
        "cell_timeout_margin_s": 40,  # timeout = 3 x 0.5 + 40 s
        "max_memory_mb": robust.vm_peak_mb() + 1024,
    }
    proc = robust.start(work, cfg, "--cores", "2", "all", env=robust.env(PYTORCH_JIT="0"))
    robust.signal_cells(
        results,
        {
            f"none/sequential/t1/bs2/{ALLOC}/r1.spec.json": signal.SIGSEGV,
            f"none/sequential/t1/bs3/{ALLOC}/r1.spec.json": signal.SIGSTOP,
        },
        proc,
        timeout=900,
    )
    rc, out = robust.finish(proc, timeout=1800)
    return work, results, cfg, rc, out


def key(opt, bs):
    return ("resnet18", opt, "sequential", 1, bs)


EXPECTED = {
    key("none", 1): None,
    key("none", 2): "signal",
    key("none", 3): "timeout",
    key("none", BIG): "out-of-memory",
    key("script", 1): "conversion-error",
    key("script", 2): "conversion-error",
    key("script", 3): "conversion-error",
    # its 0.8 GB input and the reference of its first images fit: scripting fails first
    key("script", BIG): "conversion-error",
}


@pytest.mark.integration
def test_the_grid_completes_and_cells_csv_shows_each_failure(failing_grid):
    _, results, _, rc, out = failing_grid
    assert rc == 0, out[-5000:]
    cells = pd.read_csv(results / "tables" / "cells.csv")
    got = {
        tuple(r[k] for k in ("model", "opt", "placement", "threads", "batch_size")): (
            None if r["status"] == "ok" else r["failure_cause"]
        )
        for r in cells.to_dict("records")
    }
    assert got == EXPECTED
    failed = cells[cells["status"] == "failed"]
    assert failed["failure_message"].notna().all()
    # never shown as a zero: failed cells have no latency at all
    assert failed["latency_median_ms"].isna().all()


@pytest.mark.integration
def test_failures_csv_has_keys_cause_exit_status_and_stderr_tail(failing_grid):
    _, results, _, _, _ = failing_grid
    f = pd.read_csv(results / "tables" / "failures.csv")
    assert list(f.columns[:5]) == ["model", "opt", "placement", "threads", "batch_size"]
    assert len(f) == 7
    by = {(r["opt"], r["batch_size"]): r for r in f.to_dict("records")}
    segv = by[("none", 2)]
    assert (segv["cause"], segv["returncode"], segv["signal"]) == ("signal", -11, "SIGSEGV")
    assert "crashed: killed by SIGSEGV" in segv["message"]
    hung = by[("none", 3)]
    assert (hung["cause"], hung["returncode"], hung["signal"]) == ("timeout", -9, "SIGKILL")
    assert "no result after 42 s" in hung["message"]
    oom = by[("none", BIG)]
    assert (oom["cause"], oom["returncode"]) == ("out-of-memory", 1)
    assert "can't allocate memory" in oom["stderr_tail"]
    build = by[("script", 1)]
    assert (build["cause"], build["returncode"]) == ("conversion-error", 1)
    assert build["message"].startswith(
        "exception applying the optimization: RuntimeError: Freezing"
    )
    assert "in convert" in build["stderr_tail"]
    for r in f.to_dict("records"):
        assert Path(r["log"]).exists()
        assert r["command_line"].startswith("env OMP_NUM_THREADS=1")
        assert json.loads(Path(r["cell_json"]).read_text())["status"] == "failed"


@pytest.mark.integration
def test_summary_and_report_list_the_failed_cells(failing_grid):
    _, results, _, _, out = failing_grid
    summary = (results / "summary.txt").read_text()
    assert "1 measured, 7 failed, 0 skipped" in summary
    # the summary names a cell by its keys, the allocator only when it is not glibc as it comes
    alloc = "" if grid.DEFAULTS["allocator"] == ALLOC else f"/{ALLOC}"
    assert f"FAILED resnet18/none/sequential/t1/bs3{alloc}: timeout" in summary
    assert "make retry-failed" in summary
    assert "1 measured, 7 failed" in out  # printed at the end of the run too
    html = (results / "report" / "index.html").read_text()
    for cause in ("signal", "timeout", "out-of-memory", "conversion-error"):
        assert cause in html


@pytest.mark.integration
def test_retry_failed_reruns_only_the_failed_cells(failing_grid):
    work, results, cfg, _, _ = failing_grid
    listed = subprocess.run(
        [sys.executable, str(REPO / "workflow" / "scripts" / "failed_cells.py"), str(results)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    failures = pd.read_csv(results / "tables" / "failures.csv")
    assert sorted(listed) == sorted(failures["cell_json"])
    ok_cell = results / f"cells/resnet18/none/sequential/t1/bs1/{ALLOC}/r1.json"
    before = ok_cell.stat().st_mtime_ns
    # The documented command, without PYTORCH_JIT=0 and without signals this time.
    since = time.time_ns()
    rc, out = robust.run(
        work, cfg, "--cores", "2", "all", "--forcerun", *listed, log="retry.log", timeout=1800
    )
    assert rc == 0, out[-5000:]
    assert sorted(map(str, robust.written_since(map(Path, listed), since))) == sorted(listed)
    assert len(listed) == 7
    assert ok_cell.stat().st_mtime_ns == before
    f = pd.read_csv(results / "tables" / "failures.csv")
    assert list(zip(f["opt"], f["batch_size"], f["cause"], strict=True)) == [
        ("none", BIG, "out-of-memory"),
        ("script", BIG, "out-of-memory"),
    ]
    cells = pd.read_csv(results / "tables" / "cells.csv")
    assert (cells["status"] == "ok").sum() == 6


def test_make_retry_failed_runs_the_documented_command():
    out = subprocess.run(
        ["make", "-n", "-C", str(REPO), "retry-failed"], capture_output=True, text=True
    ).stdout
    assert "workflow/scripts/failed_cells.py" in out
    assert "all  --forcerun $failed" in out or "--forcerun $failed" in out


def test_failed_cells_prints_nothing_without_failures(tmp_path):
    ok = tmp_path / "cells" / "m" / "o" / "p" / "t1"
    ok.mkdir(parents=True)
    (ok / "bs1.json").write_text('{"status": "ok"}')
    (ok / ".bs2.json.abc.tmp").write_text('{"status": "fail')  # a write in progress
    out = subprocess.run(
        [sys.executable, str(REPO / "workflow" / "scripts" / "failed_cells.py"), str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out == ""


@pytest.mark.integration  # make runs its venv and sysdeps prerequisites
def test_retry_failed_names_a_results_folder_that_does_not_exist(tmp_path):
    missing = tmp_path / "typo"
    proc = subprocess.run(
        [sys.executable, str(REPO / "workflow" / "scripts" / "failed_cells.py"), str(missing)],
        capture_output=True,
        text=True,
    )
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == f"error: no results folder {missing} (RESULTS=folder names it)\n"
    make = subprocess.run(
        ["make", "-s", "-C", str(REPO), "retry-failed", f"RESULTS={missing}"],
        capture_output=True,
        text=True,
    )
    assert make.returncode != 0 and "nothing to retry" not in make.stdout
    assert f"no results folder {missing}" in make.stderr


# -- numactl refusing the binding -----------------------------------------------------------------
@pytest.mark.integration
def test_numactl_refusal_is_a_failed_cell_and_the_grid_goes_on(tmp_path):
    """Snakemake confined to CPU 0 (taskset, as a batch system might do): the 2-thread cell's
    binding to CPUs 0-1 is refused by numactl; the 1-thread cell is measured."""
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs 2 CPUs")
    results = tmp_path / "results"
    cfg = {**load_config("one-cell"), "results": str(results), "threads": [1, 2]}
    targets = [str(results / "tables" / "failures.csv"), str(results / "summary.txt")]
    rc, out = robust.run(tmp_path, cfg, "--cores", "1", *targets, prefix=("taskset", "-c", "0"))
    assert rc == 0, out[-5000:]
    cells = pd.read_csv(results / "tables" / "cells.csv").set_index("threads")
    assert cells.loc[1, "status"] == "ok"
    assert cells.loc[2, "status"] == "failed"
    assert cells.loc[2, "failure_cause"] in ("binding-refused", "plan-mismatch")
    f = pd.read_csv(results / "tables" / "failures.csv")
    assert len(f) == 1
    if f.loc[0, "cause"] == "binding-refused":
        assert f.loc[0, "message"].startswith("numactl refused the binding")
        assert "is invalid" in f.loc[0, "stderr_tail"]
        assert len(f.loc[0, "stderr_tail"].splitlines()) <= 3  # usage text condensed
    assert "1 measured, 1 failed" in (results / "summary.txt").read_text()


def sequential_spec(plan: placement.Plan) -> spec_mod.Spec:
    """The spec of one 1-thread sequential resnet18 cell with ``plan``."""
    cell = {"model": "resnet18", "opt": "none", "placement": "sequential", "threads": 1}
    cell |= {"batch_size": 1, "image_size": 32, "use_smt": False}
    return spec_mod.one(spec_mod.MODEL, cell, plan, {})


def test_numactl_refusal_through_the_front_door(tmp_path, monkeypatch):
    """A plan naming a CPU that does not exist reaches numactl (the re-check is bypassed here;
    normally it catches this first as plan-mismatch): numactl refuses, the cell is failed."""
    topo = topology.current()
    plan = placement.plan(topo, 1, "sequential")
    bogus = max(c.cpu for c in topo.cpus) + 5
    spec = sequential_spec(dataclasses.replace(plan, cpus=(bogus,)))
    monkeypatch.setattr(job, "unverified", lambda *_: None)
    result = job.run(spec, tmp_path / "bs1.json", tmp_path / "bs1.log", 60)
    f = result.failure
    assert (result.status, f.cause, f.returncode) == ("failed", "binding-refused", 1)
    assert f"cpu argument {bogus} is out of range" in f.message
    assert json.loads((tmp_path / "bs1.json").read_text())["failure"]["cause"] == "binding-refused"
    assert not list(tmp_path.glob(".bs1.json*"))  # no temp dir left behind


def test_a_binding_wrong_at_the_start_fails_the_cell_before_torch_is_imported(
    tmp_path, monkeypatch
):
    """numactl given another memory policy than the plan's (interleave instead of bind, on
    the same node: possible on any machine): the cell checks its CPUs and policy when it starts
    (verify.at_start) and fails at once with binding-mismatch, before its import of torch, its
    build or any timing; the record keeps what it read back."""
    from numa_effects.measure import runner

    topo = topology.current()
    planned = placement.plan(topo, 1, "sequential")
    spec = sequential_spec(planned)
    original = runner.command

    def wrong(plan, *args, **kwargs):  # what numactl is given; the spec keeps the plan
        return original(dataclasses.replace(plan, mem_policy="interleave"), *args, **kwargs)

    monkeypatch.setattr(runner, "command", wrong)
    result = job.run(spec, tmp_path / "bs1.json", tmp_path / "bs1.log", 120)
    f = result.failure
    assert (result.status, f.cause) == ("failed", "binding-mismatch"), f
    assert "at its start, before any measurement: mempolicy: memory policy is interleave:" in (
        f.message
    )
    ver = result.verification
    assert ver["stage"] == "start" and [p["check"] for p in ver["problems"]] == ["mempolicy"]
    assert result.binding["mempolicy"]["mode"] == "interleave"
    assert result.measurement == {} and result.stats is None
    log = (tmp_path / "bs1.log").read_text()
    assert "--interleave=" in log  # the command line that ran, as the log records it


# -- supervising the child: real processes, no torch ----------------------------------------------
def sleeper_alive(marker: str) -> bool:
    return any(
        robust.alive(int(d.name)) and robust.cmdline(int(d.name))[:2] == ["sleep", marker]
        for d in Path("/proc").iterdir()
        if d.name.isdigit()
    )


def test_timeout_kills_the_whole_process_group(tmp_path):
    with open(tmp_path / "log", "w") as log:
        outcome = supervised.run_child(["sh", "-c", "sleep 3001 & sleep 3001"], os.environ, log, 1)
    assert outcome.timed_out and outcome.returncode == -signal.SIGKILL
    assert supervise.classify(outcome, "", 1)[0] == "timeout"
    time.sleep(0.2)
    assert not sleeper_alive("3001")


def test_memory_limit_turns_an_allocation_into_out_of_memory(tmp_path):
    with open(tmp_path / "log", "w") as log:
        outcome = supervised.run_child(
            [sys.executable, "-c", "bytearray(2**31)"], os.environ, log, 60, max_memory_mb=256
        )
    text = (tmp_path / "log").read_text()
    assert outcome.returncode == 1 and "MemoryError" in text
    assert supervise.classify(outcome, text, 60)[0] == "out-of-memory"


LAUNCHER = textwrap.dedent(
    """
    import os, sys
    sys.path[:0] = [{scripts!r}, {tests!r}]
    import supervised
    from numa_effects.measure import supervise
    with open({log!r}, "w") as log:
        outcome = supervised.run_child(["sleep", {marker!r}], os.environ, log, 120)
    cause = supervise.classify(outcome, open({log!r}).read(), 120)
    open({result!r}, "w").write(repr(cause))  # what a cell's launcher writes: its result
    """
)


def start_launcher(tmp_path, marker, via_parent=False):
    log, result = str(tmp_path / "log"), str(tmp_path / "result")
    code = LAUNCHER.format(
        scripts=SCRIPTS, tests=str(Path(__file__).parent), log=log, marker=marker, result=result
    )
    cmd = [sys.executable, "-c", code]
    if via_parent:  # a stand-in for Snakemake between the test and the launcher
        cmd = [sys.executable, "-c", f"import subprocess; subprocess.run({cmd!r})"]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    robust.wait_for(lambda: sleeper_alive(marker), 30, what="the child")
    return proc


def test_death_of_snakemake_kills_the_cell_and_writes_nothing(tmp_path):
    # the launcher, left to end, writes its result (so the file below is where it writes)
    (tmp_path / "ends").mkdir()
    done = start_launcher(tmp_path / "ends", "3", via_parent=True)
    assert done.wait(timeout=60) == 0 and (tmp_path / "ends" / "result").is_file()
    parent = start_launcher(tmp_path, "3002", via_parent=True)
    parent.kill()  # kill -9 of "Snakemake"
    # the launcher's stderr is the pipe it inherited: it reaches its end when the launcher exits
    _, err = parent.communicate(timeout=30)
    assert "the Snakemake process that started it is gone" in err
    robust.wait_for(lambda: not sleeper_alive("3002"), 10, what="the child to die")
    assert not (tmp_path / "result").exists()


def test_sigterm_to_the_launcher_is_an_interruption(tmp_path):
    proc = start_launcher(tmp_path, "3003")
    proc.terminate()
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert "cell interrupted (the launcher received SIGTERM)" in err
    assert not sleeper_alive("3003")


def test_kill_9_of_the_cell_is_an_interruption_not_a_failure(tmp_path):
    proc = start_launcher(tmp_path, "3004")
    pid = next(
        int(d.name)
        for d in Path("/proc").iterdir()
        if d.name.isdigit() and robust.cmdline(int(d.name))[:2] == ["sleep", "3004"]
    )
    os.kill(pid, signal.SIGKILL)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert "killed by SIGKILL from outside" in err


def test_kill_9_of_the_launcher_takes_the_cell_with_it(tmp_path):
    proc = start_launcher(tmp_path, "3005")
    proc.kill()
    proc.wait()
    robust.wait_for(lambda: not sleeper_alive("3005"), 10, what="the child to die")


# -- classification (pure) ------------------------------------------------------------------------
NUMACTL_LOG = """# env ... numactl --physcpubind=7
libnuma: Warning: cpu argument 7 is out of range

usage: numactl [--all | -a]
<7> is invalid
"""
BUILD_TB = """# env ...
Traceback (most recent call last):
  File "/x/numa_effects/measure/cell.py", line 74, in start
    built = runtime.build(inst, spec.settings)
  File "/x/numa_effects/measure/workloads/model.py", line 54, in build
    fn, x, timings, caught, ref = build_for(instance, settings)
  File "/x/numa_effects/measure/workloads/model.py", line 30, in make
RuntimeError: Freezing expects a ScriptModule as input.
"""


CONVERT_TB = """# env ...
Traceback (most recent call last):
  File "/x/numa_effects/measure/workloads/model.py", line 90, in make
    fn, x, caught = convert(opt, model, x, settings)
  File "/x/numa_effects/measure/workloads/model.py", line 60, in convert
    fn, x = optimize(opt, model, x, settings)
  File "/x/numa_effects/measure/workloads/model.py", line 30, in quantize_int8
torch._dynamo.exc.Unsupported: Input partition has more than one output node
"""
COMPILE_TB = """# env ...
Traceback (most recent call last):
  File "/x/torch/_inductor/compile_fx.py", line 1, in compile_fx
torch._inductor.exc.InductorError: CppCompileError: C++ compile error
The above exception was the direct cause of the following exception:
numa_effects.measure.workloads.CompileError: InductorError: CppCompileError: C++ compile error
"""


@pytest.mark.parametrize(
    ("outcome", "log", "cause"),
    [
        (supervise.Outcome(-9, timed_out=True), "", "timeout"),
        (supervise.Outcome(-9, oom_kills=1), "", "out-of-memory"),
        (supervise.Outcome(-11), "", "signal"),
        (supervise.Outcome(-6), "terminate called after 'std::bad_alloc'", "out-of-memory"),
        (
            supervise.Outcome(3),
            "numa_effects.measure.cell: torch.get_num_threads() is 2",
            "thread-mismatch",
        ),
        (supervise.Outcome(1), NUMACTL_LOG, "binding-refused"),
        (supervise.Outcome(1), BUILD_TB, "build-error"),
        (supervise.Outcome(1), BUILD_TB.replace("in build", "in run2"), "error"),
        (supervise.Outcome(1), CONVERT_TB, "conversion-error"),
        (supervise.Outcome(4), COMPILE_TB, "compile-error"),
        (supervise.Outcome(1), "Traceback\nMemoryError\n", "out-of-memory"),
        (supervise.Outcome(0), "", "error"),
        (supervise.Outcome(127), "", "error"),
    ],
)
def test_classify(outcome, log, cause):
    assert supervise.classify(outcome, log, 60)[0] == cause


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_external_stop_signals_are_interruptions(sig):
    with pytest.raises(supervise.Interrupted, match=f"killed by {sig.name} from outside"):
        supervise.classify(supervise.Outcome(-sig), "", 60)


def test_numactl_usage_text_is_condensed_in_the_tail():
    assert supervise.tail(NUMACTL_LOG).splitlines() == [
        "libnuma: Warning: cpu argument 7 is out of range",
        "<7> is invalid",
    ]


def test_leftovers_of_a_killed_attempt_are_removed_but_not_other_cells(tmp_path):
    (tmp_path / ".bs1.json.cell-abc").mkdir()
    (tmp_path / ".bs1.json.xyz.tmp").write_text("{")
    (tmp_path / ".bs16.json.cell-abc").mkdir()
    supervise.remove_leftovers(tmp_path / "bs1.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == [".bs16.json.cell-abc"]
