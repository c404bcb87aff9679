"""Noise and concurrency guards (numa_effects.measure.contention): the machine's load before a
cell and whether other tasks used the cell's CPUs while it was timed. The busy loop (``hog``,
tests/conftest.py) is only used once it has really run on its CPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest
from conftest import REPO, foreign_share_pct, load_config

from numa_effects.measure import contention, job
from numa_effects.measure.record import Record
from numa_effects.plan import placement, topology
from numa_effects.plan import spec as spec_mod
from numa_effects.tables import cells as tidy

SCRIPTS = str(REPO / "workflow" / "scripts")

STAT = """cpu  100 0 50 1000 10 0 0 0 0 0
cpu0 60 0 30 500 5 0 0 0 0 0
cpu1 40 0 20 500 5 1 2 3 0 0
intr 12345
procs_running 3
procs_blocked 0
"""


def test_cpu_busy_counts_user_nice_system_irq_softirq_steal(tmp_path, monkeypatch):
    monkeypatch.setattr(contention, "clock_ticks", lambda: 100)
    (tmp_path / "stat").write_text(STAT)
    assert contention.cpu_busy(tmp_path / "stat") == {0: 0.9, 1: 0.66}
    assert contention.stat_counter("procs_running", tmp_path / "stat") == 3


def stat_lines(busy_ticks: dict[int, int]) -> str:
    """A /proc/stat whose CPUs were busy (user) this many ticks."""
    rows = [f"cpu{c} {t} 0 0 1000000 0 0 0 0 0 0" for c, t in busy_ticks.items()]
    return "\n".join(["cpu  0 0 0 0 0 0 0 0 0 0", *rows, "procs_running 1", ""])


def test_the_window_records_how_busy_the_other_cpus_were(tmp_path, monkeypatch):
    """The second signal: the CPUs beside the cell's (and its siblings') share over the window,
    recorded without making the window contended."""
    monkeypatch.setattr(contention, "clock_ticks", lambda: 100)
    stat = tmp_path / "stat"
    stat.write_text(stat_lines({0: 0, 1: 0, 2: 0, 3: 0}))
    clock = iter([100.0, 102.0])
    monkeypatch.setattr(contention.time, "monotonic", lambda: next(clock))
    watch = contention.Watch([0], proc_stat=stat, own=lambda: 0.0)
    stat.write_text(stat_lines({0: 0, 1: 100, 2: 200, 3: 0}))  # 1 s and 2 s of 2 s windows
    got = watch.stop()
    others = sorted({0, 1, 2, 3} - {0, *contention.siblings_of([0])})
    busy = {1: 1.0, 2: 2.0, 3: 0.0}
    expected = 100 * sum(busy[c] for c in others) / (2.0 * len(others))
    assert got["other_cpus_busy_pct"] == pytest.approx(expected)
    # (an SMT sibling of CPU 0 that was busy makes it contended: they share the core)
    assert got["contended"] is any(busy.get(c, 0) > 0 for c in contention.siblings_of([0]))


def test_a_quiet_window_is_not_contended():
    v = contention.assess(cpus_busy_s=2.0, own_cpu_s=1.99, window_s=1.0, ncpus=2)
    assert v["contended"] is False and v["foreign_cpu_pct"] == 0.5


def test_another_process_on_the_cells_cpus_is_contention():
    v = contention.assess(cpus_busy_s=2.0, own_cpu_s=1.5, window_s=1.0, ncpus=2)
    assert v["contended"] is True
    assert v["foreign_cpu_pct"] == 25.0
    assert "other tasks used 0.50 CPU-s" in v["contended_reason"]


def test_tick_resolution_is_not_contention():
    """/proc/stat counts 10 ms ticks: in a 30 ms window one tick is 33 % but means nothing."""
    v = contention.assess(cpus_busy_s=0.04, own_cpu_s=0.03, window_s=0.03, ncpus=1)
    assert v["contended"] is False


def test_a_busy_smt_sibling_is_contention():
    v = contention.assess(1.0, 1.0, 1.0, 1, sibling_busy_s=0.9, nsiblings=1)
    assert v["contended"] is True and "SMT siblings" in v["contended_reason"]


def test_preflight_records_load_and_runnable_tasks():
    pre = contention.preflight()
    assert isinstance(pre["load_1m"], float)
    assert isinstance(pre["runnable_others"], int) and pre["runnable_others"] >= 0
    assert isinstance(pre["runnable_processes"], list)


def test_contention_columns_in_cells_csv():
    row = tidy.cell_row(
        Record(
            status="ok",
            cell={"model": "m", "opt": "none", "placement": "sequential", "threads": 1}
            | {"batch_size": 1},
            contention={"load_1m": 1.5, "runnable_others": 2, "contended": True}
            | {"foreign_cpu_pct": 40.0, "contended_reason": "x"},
        )
    )
    assert {k: row[k] for k in ("load_1m", "runnable_others", "contended", "foreign_cpu_pct")} == {
        "load_1m": 1.5,
        "runnable_others": 2,
        "contended": True,
        "foreign_cpu_pct": 40.0,
    }


# -- real processes -------------------------------------------------------------------------------
def first_cpu() -> int:
    """The CPU a 1-thread sequential cell gets on this machine (the planner's choice)."""
    return placement.plan(topology.current(), 1, "sequential").cpus[0]


WORKER = textwrap.dedent(
    """
    import json, sys, time
    sys.path.insert(0, {scripts!r})
    from numa_effects.measure import contention
    w = contention.Watch([{cpu}])
    end = time.monotonic() + 1.5
    while time.monotonic() < end:
        pass
    print(json.dumps(w.stop()))
    """
)


def test_a_busy_loop_on_the_same_cpu_is_detected(hog):
    cpu = first_cpu()
    assert foreign_share_pct([cpu]) > 50  # the hog runs there, seen from outside
    out = subprocess.run(
        ["taskset", "-c", str(cpu), sys.executable, "-c", WORKER.format(scripts=SCRIPTS, cpu=cpu)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    verdict = json.loads(out)
    assert verdict["contended"] is True, verdict
    assert verdict["foreign_cpu_pct"] > 20  # the hog got a good share of that CPU


@pytest.mark.integration
def test_a_real_cell_beside_a_busy_loop_is_flagged_contended(tmp_path, hog):
    topo = topology.current()
    plan = placement.plan(topo, 1, "sequential")
    assert plan.cpus == (first_cpu(),)  # the CPU the hog is pinned to
    cell = {"model": "resnet18", "opt": "none", "placement": "sequential", "threads": 1}
    settings = {k: v for k, v in load_config("one-cell").items() if k in ("protocol", "warmup")}
    settings |= {"fixed_iterations": 100_000, "max_seconds_per_cell": 1.5, "seed": 0}
    cell |= {"batch_size": 1, "image_size": 32, "use_smt": False}
    spec = spec_mod.one(spec_mod.MODEL, cell, plan, settings)
    assert foreign_share_pct(plan.cpus) > 50  # the hog really runs on the cell's CPU
    result = job.run(spec, tmp_path / "bs1.json", tmp_path / "bs1.log", 600)
    assert result.status in ("ok", "contended"), result.failure
    noise = result.contention
    assert noise["runnable_others"] >= 1  # the hog, at least
    cell_cpus = {*plan.cpus, *contention.siblings_of(plan.cpus)}
    others = bool(set(contention.cpu_busy()) - cell_cpus)  # CPUs beside the cell's
    assert (noise["other_cpus_busy_pct"] is not None) is others
    assert noise["other_cpus_busy_pct"] is None or 0 <= noise["other_cpus_busy_pct"] <= 100.5
    assert noise["load_1m"] is not None
    # The whole window saw the hog (it took a good share of the cell's CPU) ...
    assert noise["contended_window"] is True, noise
    # ... and the iterations it interrupted are kept out of the statistics. Whether enough
    # clean ones remain (short iterations fit between the scheduler's switches) decides the
    # replicate's own verdict: contended, or clean iterations that are clean.
    assert noise["excluded_iterations"] >= 1, noise
    assert noise["contended"] or noise["clean_foreign_pct"] <= 100 * contention.FOREIGN_SHARE_LIMIT
    row = tidy.cell_row(result, str(tmp_path / "bs1.json"))
    assert row["contended"] is noise["contended"]
    m = result.measurement
    # the run-queue delay of the instance's thread, read by the runner from its schedstat
    delays = m["run_delay_pct"]
    assert len(delays) == len(m["latencies_s"]) and None not in delays
    assert max(delays) > 10 and all(f >= d for f, d in zip(m["foreign_pct"], delays, strict=True))
    if result.status == "contended":  # no iteration was clean: not a number
        assert all(m["excluded"]) and result.stats is None and result.throughput is None
        assert "latency_median_ms" not in row and noise["contended"] is True
    else:
        assert result.stats["n"] == m["excluded"].count(False) < len(m["latencies_s"])
    assert row["foreign_cpu_pct"] > 100 * contention.FOREIGN_SHARE_LIMIT  # the window's share
    assert os.path.exists(tmp_path / "bs1.json")


def test_iteration_probe_on_a_recorded_burst(tmp_path):
    """The /proc/stat sequence of tests/fixtures/proc/iterations-burst.json (another process
    spinning on CPU 0 during iterations 10-14): about half of CPU 0 went to it during the burst,
    nothing outside (one tick of resolution allowed)."""
    data = json.loads((REPO / "tests/fixtures/proc/iterations-burst.json").read_text())
    snap = {}
    stat = tmp_path / "stat"

    def read():
        stat.write_text(snap["stat"])
        return contention.cpu_busy(stat)

    probe = contention.IterationProbe(
        data["cpus"], read=read, own=lambda: snap["own_s"], clock=lambda: snap["t"], hz=data["hz"]
    )
    shares = []
    for it in data["iterations"]:
        snap.update(it["before"])
        probe.begin()
        snap.update(it["after"])
        shares.append(probe.end())
    burst = set(data["burst"])
    assert all(30 < s < 70 for i, s in enumerate(shares) if i in burst)
    assert all(s < 5 for i, s in enumerate(shares) if i not in burst)


def test_foreign_share_allows_one_tick_per_cpu():
    assert contention.foreign_share_pct(0.05, 0.04, 0.05, 1, hz=100) == pytest.approx(0.0, abs=1e-9)
    assert contention.foreign_share_pct(0.10, 0.04, 0.10, 1, hz=100) == pytest.approx(50.0)


# -- the run-queue delay (/proc/<pid>/task/*/schedstat) ------------------------------------------
# Lines as this machine's kernel writes them: run time (ns), run-queue delay (ns), time slices.
SCHEDSTAT = ("290089320 52944842 1090\n", "628225653 1829624860 11169\n")


def fake_proc(root, tasks: dict[int, dict[int, str]], children: dict[int, str] | None = None):
    """A /proc with ``tasks`` {pid: {tid: schedstat line}} and ``children`` {pid: "pid pid"}."""
    for pid, threads in tasks.items():
        for tid, line in threads.items():
            d = root / str(pid) / "task" / str(tid)
            d.mkdir(parents=True)
            (d / "schedstat").write_text(line)
            (d / "children").write_text((children or {}).get(pid, "") if tid == pid else "")
    return root


def test_run_delay_sums_every_thread_of_the_processes(tmp_path):
    proc = fake_proc(tmp_path, {10: {10: SCHEDSTAT[0], 11: SCHEDSTAT[1]}, 20: {20: SCHEDSTAT[0]}})
    assert contention.run_delay_s([10], proc) == pytest.approx((52944842 + 1829624860) / 1e9)
    assert contention.run_delay_s([10, 20], proc) == pytest.approx(
        (2 * 52944842 + 1829624860) / 1e9
    )
    assert contention.run_delay_s([99], proc) is None  # no such process: no signal, not 0


def test_descendants_follow_a_wrapper_to_its_measured_child(tmp_path):
    proc = fake_proc(
        tmp_path,
        {10: {10: SCHEDSTAT[0]}, 11: {11: SCHEDSTAT[1]}, 12: {12: SCHEDSTAT[0]}},
        children={10: "11", 11: "12"},
    )
    assert sorted(contention.descendants([10], proc)) == [10, 11, 12]
    assert contention.descendants([12], proc) == (12,)


def test_a_disturbance_shorter_than_a_tick_is_seen_only_by_the_run_queue_delay():
    """A 25 ms iteration that lost 9 ms of its CPU to another task: /proc/stat's busy time,
    less one 10 ms tick of resolution, reads 0 %; the run-queue delay reads 9 / 34 = 26 %, and
    the probe returns the larger."""
    window, own, foreign = 0.034, 0.025, 0.009
    assert contention.foreign_share_pct(own + foreign, own, window, 1, hz=100) == 0.0
    assert contention.run_delay_pct(foreign, window, 1) == pytest.approx(26.47, abs=0.01)
    snap = {"busy": 0.0, "own": 0.0, "delay": 0.0, "t": 0.0}
    probe = contention.IterationProbe(
        [0],
        read=lambda: {0: snap["busy"]},
        own=lambda: snap["own"],
        clock=lambda: snap["t"],
        hz=100,
        delay=lambda: snap["delay"],
    )
    probe.begin()
    snap.update(busy=own + foreign, own=own, delay=foreign, t=window)
    assert probe.end() == pytest.approx(26.47, abs=0.01)
    assert probe.last_run_delay_pct == pytest.approx(26.47, abs=0.01)
    # without the delay signal (no pids, or a kernel without schedstat) the tick share alone
    blind = contention.IterationProbe(
        [0], read=lambda: {0: snap["busy"]}, own=lambda: snap["own"], clock=lambda: snap["t"]
    )
    snap.update(busy=0.0, own=0.0, delay=0.0, t=0.0)
    blind.begin()
    snap.update(busy=own + foreign, own=own, delay=foreign, t=window)
    assert blind.end() == 0.0 and blind.last_run_delay_pct is None


DUTY_LOOP = textwrap.dedent(
    """
    import time
    while True:
        t = time.monotonic()
        while time.monotonic() - t < 0.025:
            pass
        time.sleep(0.075)
    """
)


def test_a_duty_cycle_load_on_the_cpu_shows_in_the_run_queue_delay():
    """Real: a loop busy 25 ms of every 100 ms (the noise benchmark's load) pinned to the CPU of
    this process, which times 15 ms CPU-bound iterations there. While the loop runs the two
    share the CPU, so the iterations it overlaps wait runnable: the run-queue delay of this
    process marks a good share of them above the exclusion threshold."""
    from conftest import cpu_seconds, last_cpu

    cpu = first_cpu()
    load = subprocess.Popen(["taskset", "-c", str(cpu), sys.executable, "-c", DUTY_LOOP])
    affinity = os.sched_getaffinity(0)
    try:
        end = time.monotonic() + 120
        while not (cpu_seconds(load.pid) >= 0.1 and last_cpu(load.pid) == cpu):
            assert load.poll() is None and time.monotonic() < end, "the loop never ran"
            time.sleep(0.05)
        os.sched_setaffinity(0, {cpu})
        probe = contention.IterationProbe([cpu], pids=[os.getpid()])
        delays = []
        for _ in range(80):
            probe.begin()
            t = time.thread_time()
            while time.thread_time() - t < 0.015:
                pass
            probe.end()
            delays.append(probe.last_run_delay_pct)
    finally:
        os.sched_setaffinity(0, affinity)
        load.kill()
        load.wait()
    assert None not in delays
    # the loop holds the CPU a quarter of the time, half of it shared: >= 1 in 5 iterations
    assert sum(d > 10 for d in delays) >= 16, sorted(delays)
