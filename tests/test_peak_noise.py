"""A peak that holds under noise: a real Snakemake run of ResNet-50 in TorchScript (the cells
whose efficiency came out 1.16 and 1.20 on a 2-vCPU EPYC, tests/fixtures/peak_windows) at every
thread count the planner gives this machine, with two noise loads beside the first window of
every peak (``plan.peaks`` runs the first windows before any cell):

- a busy loop on every CPU of the peaks, started before Snakemake (each has run on its CPU:
  ``conftest.start_busy_loop``) and killed once every first window's record is written: noise
  the contention probe sees (``exclude_foreign_pct: 100`` keeps its steps, as if unseen);
- steal (``Steal``): the first windows' instances stopped half of every 2 ms, as a hypervisor
  deschedules its guest: every kernel call runs slower and the probe sees nothing.

Each first window is then a peak under-measured by noise, more than 5 % below the best window:
against it alone a cell running near the peak would print an efficiency above 1.05. The run must
keep the best window instead: every cell's efficiency known and at most 1.05, the windows and
their spread in ``peak.csv``."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
from conftest import load_config, snakemake

from numa_effects import config as config_mod
from numa_effects.plan import build, paths, peaks, topology
from numa_effects.tables import flops

pytestmark = pytest.mark.integration


def noisy_config() -> dict:
    return {
        **load_config("tiny"),
        "models": ["resnet50"],
        "batch_sizes": [4],
        "optimizations": ["script"],
        "threads": "auto",
        "image_size": 224,
        "replicates": 2,
        "max_seconds_per_cell": 3,
        "exclude_foreign_pct": 100,
    }


def planned(cfg: dict, results: Path) -> build.Plan:
    """The plan this machine's workflow makes (``plan.build`` on the checked config)."""
    checked = config_mod.check({**cfg, "results": str(results)})
    return build.build(checked.config, checked.topology or topology.current())


class Steal:
    """Steal time as a hypervisor takes it from its guest: every process whose command line
    holds each of ``markers`` is stopped for ``stop_s`` out of every ``stop_s + run_s``
    (SIGSTOP, then SIGCONT) until ``done()``. Every call of its longer than the period runs
    slower, and no other task runs on its CPUs meanwhile, so the contention probe sees nothing
    (the failure of tests/fixtures/peak_windows: a peak measured low, its steps clean).
    ``stops``: how often the processes of each command line's last word (the spec) were
    stopped."""

    def __init__(self, markers, cwd: Path, done, stop_s: float = 0.001, run_s: float = 0.001):
        self.markers, self.cwd, self.done = markers, str(cwd), done
        self.stop_s, self.run_s = stop_s, run_s
        self.stops: dict[str, int] = {}
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def targets(self) -> dict[int, str]:
        """{pid: its command line's last word} of the processes to stop."""
        found = {}
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                text = cmdline.read_bytes().replace(b"\0", b" ").decode()
                ours = os.readlink(cmdline.parent / "cwd") == self.cwd
                if ours and all(m in text for m in self.markers):
                    found[int(cmdline.parent.name)] = text.split()[-1]
            except OSError:
                continue
        return found

    def signal(self, pids, sig) -> None:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)

    def loop(self) -> None:
        pids, seen, rescan = {}, set(), 0.0
        try:
            while not self.done():
                if time.monotonic() > rescan:  # a new first window's instance
                    pids, rescan = self.targets(), time.monotonic() + 0.05
                    seen.update(pids)
                if not pids:
                    time.sleep(0.01)
                    continue
                self.signal(pids, signal.SIGSTOP)
                for spec in pids.values():
                    self.stops[spec] = self.stops.get(spec, 0) + 1
                time.sleep(self.stop_s)
                self.signal(pids, signal.SIGCONT)
                time.sleep(self.run_s)
        finally:
            self.signal(seen, signal.SIGCONT)


def kill_after(procs, records: list[Path], timeout: float = 600.0) -> threading.Thread:
    """A thread that kills ``procs`` once every file of ``records`` exists."""

    def watch():
        end = time.monotonic() + timeout
        while not all(r.is_file() for r in records) and time.monotonic() < end:
            time.sleep(0.05)
        for proc in procs:
            proc.kill()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


# the first windows' instance processes (numactl runs python in their place)
FIRST_WINDOWS = ("numa_effects.measure.cell", "logs/peak/", "/w1.spec.json")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """The run, with busy loops and steal beside the first windows of every peak: (results,
    plan, how often each first window's instance was stopped)."""
    from conftest import start_busy_loop

    workdir = tmp_path_factory.mktemp("peak_noise")
    cfg = noisy_config()
    p = planned(cfg, workdir / "results")
    assert p.peak and len(p.grid.cells) >= 1
    cpus = sorted({c for plan in p.peak.values() for c in plan.cpus})
    firsts = [
        workdir / "results" / paths.PEAK.format(placement=w, threads=t, dtype=d, window=1)
        for w, t, d in p.peak
    ]
    hogs = []
    steal = Steal(FIRST_WINDOWS, workdir, lambda: all(r.is_file() for r in firsts))
    try:
        for cpu in cpus:  # each returned once it has really run on its CPU
            start_busy_loop(cpu, hogs)
        watcher = kill_after(hogs, firsts)
        steal.thread.start()
        snakemake(workdir, cfg, "--cores", str(len(p.topology.cpus)), "results/tables/cells.csv")
        watcher.join(timeout=5)
        steal.thread.join(timeout=5)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    return workdir / "results", p, steal.stops


def test_every_cell_has_an_efficiency_of_at_most_1_05_against_the_best_window(run):
    results, p, _ = run
    cells = pd.read_csv(results / "tables/cells.csv")
    assert len(cells) == len(p.grid.cells) and (cells["status"] == "ok").all()
    assert cells["efficiency"].notna().all(), cells[["threads", "efficiency_note"]]
    assert (cells["efficiency"] <= flops.EFFICIENCY_MAX).all(), cells[["threads", "efficiency"]]


def test_peak_csv_has_each_peaks_windows_and_the_noise_in_their_spread(run):
    """Every window measured and quoted; the peak is the best clean window and the spread is
    theirs. The noise starts beside the first windows only, and what it guarantees is that each
    first window is under-measured: it gave no rate (no clean step under the noise; a 2-vCPU
    Xeon had one such window) or one more than 5 % below the peak, so a cell running near the
    peak would have printed an efficiency above 1.05 against it alone. The later windows ran
    without it: each gave a rate."""
    results, p, _ = run
    peak = pd.read_csv(results / "tables/peak.csv")
    assert len(peak) == len(p.peak) and (peak["status"] == "ok").all()
    assert (peak["windows"] == peaks.WINDOWS).all()
    # each window's rate, or its status where it gave none (tables.peak.combine)
    quoted = peak["window_gflop_per_s"].str.split("; ")
    assert quoted.str.len().eq(peaks.WINDOWS).all()

    def rate(text: str) -> float | None:
        try:
            return float(text)
        except ValueError:
            return None

    rates = quoted.apply(lambda ws: [rate(w) for w in ws])
    for windows, best in zip(rates, peak["peak_gflop_per_s"], strict=True):
        first, later = windows[0], windows[1:]
        assert None not in later, windows
        assert first is None or first < best / flops.EFFICIENCY_MAX, windows
    clean = rates.apply(lambda ws: [w for w in ws if w is not None])
    assert peak["windows_clean"].tolist() == clean.str.len().tolist()
    assert peak["peak_gflop_per_s"].round(1).tolist() == [max(r) for r in clean]
    spread = [100 * (max(r) - min(r)) / max(r) for r in clean]  # >= 2 clean windows each
    assert peak["spread_pct"].to_numpy() == pytest.approx(spread, abs=0.2)


def test_the_noise_ran_beside_the_first_windows_and_each_window_ran_in_its_slot(run):
    """The contention probe of each first window saw the busy loops, and its instance was
    stopped again and again; each window ran where the plan put it (``plan.peaks.slots``):
    after the cells before its slot, before the others."""
    results, p, stops = run

    def span(path: Path) -> tuple[str, str]:
        prov = json.loads(path.read_text())["provenance"]
        return prov["launcher_started_at"], prov["finished_at"]

    cells = [span(Path(k.path(str(results), r))) for k, r in p.order]
    slots = peaks.slots(p.order, p.replicates)
    for where, t, d in p.peak:
        for w, slot in enumerate(slots, start=1):
            rec = results / paths.PEAK.format(placement=where, threads=t, dtype=d, window=w)
            start, end = span(rec)
            assert all(c_end <= start for _, c_end in cells[:slot]), (w, slot)
            assert all(c_start >= end for c_start, _ in cells[slot:]), (w, slot)
        first = json.loads(
            (results / paths.PEAK.format(placement=where, threads=t, dtype=d, window=1)).read_text()
        )
        assert first["contention"]["foreign_cpu_pct"] > 20, first["contention"]
    # each first window's instance was stopped, many times
    specs = {paths.PEAK_LOG.format(placement=w, threads=t, dtype=d, window=1) for w, t, d in p.peak}
    assert {k.removeprefix("results/").replace(".spec.json", ".log") for k in stops} == specs
    assert min(stops.values()) >= 100, stops
