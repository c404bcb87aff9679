"""The warm-up and stopping rules of ``measure.run`` on synthetic latency streams (fake clock:
each step advances it by the next latency of the stream, so no real time passes)."""

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from numa_effects import stats
from numa_effects.measure import contention
from numa_effects.measure import timing as measure


class FakeTimer:
    """``clock`` and ``step`` for ``measure.run``: step i takes ``latencies[i]`` seconds."""

    def __init__(self, latencies):
        self.now = 0.0
        self.it = iter(latencies)
        self.calls = 0

    def clock(self):
        return self.now

    def step(self):
        self.now += next(self.it)
        self.calls += 1


def run(stream, **settings):
    t = FakeTimer(stream)
    settings = {"max_seconds_per_cell": 1e9, **settings}
    return measure.run(t.step, settings, clock=t.clock), t


def lognormal(rng, median, sigma):
    while True:
        yield float(rng.lognormal(np.log(median), sigma))


def test_stable_stream_reaches_target_quickly():
    rng = np.random.default_rng(0)
    m, _ = run(lognormal(rng, 0.010, 0.01))
    assert m.stop_reason == "target_ci"
    assert 6 <= len(m.latencies_s) <= 20
    s = stats.summarize(m.latencies_s)
    assert s["median_s"] == pytest.approx(0.010, rel=0.02)
    assert (
        max(s["median_s"] - s["ci_low_s"], s["ci_high_s"] - s["median_s"]) <= 0.02 * s["median_s"]
    )


def test_noisier_stream_needs_more_iterations_but_gets_there():
    rng = np.random.default_rng(1)
    quiet, _ = run(lognormal(rng, 0.010, 0.01))
    noisy, _ = run(lognormal(rng, 0.010, 0.08))
    assert noisy.stop_reason == "target_ci"
    assert len(noisy.latencies_s) > 3 * len(quiet.latencies_s)
    assert np.median(noisy.latencies_s) == pytest.approx(0.010, rel=0.02)


def test_drifting_stream_never_meets_the_target_and_a_cap_says_so():
    # 1 % slower every iteration (thermal throttling, a neighbour ramping up): the CI of the
    # median widens with n instead of shrinking, so only the cap stops it.
    rng = np.random.default_rng(2)
    stream = (0.010 * (1 + 0.01 * i) * rng.lognormal(0, 0.005) for i in itertools.count())
    m, _ = run(stream, max_iterations=300)
    assert m.stop_reason == "max_iterations"
    assert len(m.latencies_s) == 300


def test_balanced_bimodal_stream_straddles_the_gap_until_a_cap():
    # half the iterations at 10 ms, half at 13 ms: the median is not determined to 2 %
    rng = np.random.default_rng(3)
    stream = (0.010 if rng.random() < 0.5 else 0.013 for _ in itertools.count())
    m, _ = run(stream, max_iterations=400)
    assert m.stop_reason == "max_iterations"


def test_lopsided_bimodal_stream_converges_on_the_main_mode():
    rng = np.random.default_rng(4)
    stream = (
        (0.010 if rng.random() < 0.8 else 0.013) * rng.lognormal(0, 0.003)
        for _ in itertools.count()
    )
    m, _ = run(stream)
    assert m.stop_reason == "target_ci"
    assert np.median(m.latencies_s) == pytest.approx(0.010, rel=0.02)


def test_heavy_tailed_stream_median_is_robust():
    # 85 % near 10 ms, 15 % Pareto outliers (alpha 1.2: infinite variance)
    rng = np.random.default_rng(5)

    def stream():
        while True:
            base = 0.010 * rng.lognormal(0, 0.01)
            yield base * (2 + rng.pareto(1.2) * 3) if rng.random() < 0.15 else base

    m, _ = run(stream())
    assert m.stop_reason == "target_ci"
    s = stats.summarize(m.latencies_s)
    assert s["median_s"] == pytest.approx(0.010, rel=0.03)
    assert s["max_s"] > 2 * s["median_s"]  # the tail was sampled, and did not matter
    assert s["mean_s"] > s["ci_high_s"]  # the mean is dragged out of the median CI


def test_time_cap_stops_before_the_budget_is_overrun():
    # 1 s iterations, 10 s budget, noisy enough never to meet 2 %
    rng = np.random.default_rng(6)
    m, _ = run(lognormal(rng, 1.0, 0.3), max_seconds_per_cell=10, warmup=2)
    assert m.stop_reason == "max_seconds"
    assert len(m.latencies_s) >= 6  # min_iterations overrides the budget
    assert m.elapsed_s <= 10 + 1.5 or len(m.latencies_s) == 6


def test_min_iterations_is_respected_even_when_already_precise():
    m, _ = run(itertools.repeat(0.01), min_iterations=12)
    assert m.stop_reason == "target_ci"
    assert len(m.latencies_s) == 12


def test_fixed_protocol_reproduces_packrat_counts():
    m, t = run(itertools.repeat(0.01), protocol="fixed", warmup=10, fixed_iterations=100)
    assert m.stop_reason == "fixed"
    assert len(m.warmup_s) == 10 and len(m.latencies_s) == 100
    assert t.calls == 110


def test_fixed_protocol_counts_the_first_call_as_warmup():
    t = FakeTimer(itertools.repeat(0.01))
    settings = {"protocol": "fixed", "warmup": 10, "fixed_iterations": 5}
    m = measure.run(t.step, settings, clock=t.clock, first_call_s=0.5)
    assert len(m.warmup_s) == 10 and m.warmup_s[0] == 0.5
    assert t.calls == 9 + 5


def test_warmup_extends_until_the_last_three_agree():
    # slow first iterations (allocation, oneDNN primitive creation, TorchScript profiling)
    stream = itertools.chain([0.05, 0.03, 0.02, 0.01], itertools.repeat(0.01))
    m, _ = run(stream, warmup=2)
    assert m.warmup_s == pytest.approx([0.05, 0.03, 0.02, 0.01, 0.01, 0.01])
    assert m.warmup_stable is True
    assert m.latencies_s == pytest.approx([0.01] * len(m.latencies_s))


def test_warmup_is_capped_by_its_time_budget():
    stream = itertools.cycle([0.01, 0.02])  # never within 5 %
    m, _ = run(stream, warmup=2, max_seconds_per_cell=1.0, max_iterations=50)
    assert m.warmup_stable is False
    budget = measure.WARMUP_BUDGET_FRACTION * 1.0
    assert budget <= sum(m.warmup_s) <= budget + 0.02


def test_measurement_record_has_the_protocol_and_totals():
    m, _ = run(itertools.repeat(0.01))
    d = m.to_dict()
    assert d["protocol"] == "adaptive" and d["target_rel_ci"] == 0.02
    assert d["timed_s"] == pytest.approx(0.01 * len(m.latencies_s))
    assert d["warmup_total_s"] == pytest.approx(0.01 * len(m.warmup_s))


def test_unknown_protocol_is_refused():
    with pytest.raises(ValueError, match="protocol"):
        run(itertools.repeat(0.01), protocol="sometimes")


# -- contaminated iterations --------------------------------------------------------

BURST = Path(__file__).parent / "fixtures" / "proc" / "iterations-burst.json"


class RecordedProbe:
    """``contention.IterationProbe`` fed a /proc/stat sequence recorded on a real machine
    (tests/fixtures/proc/capture_iterations.py: 30 iterations pinned to CPU 0, another process
    spinning on CPU 0 during iterations 10-14): each begin()/end() pair replays one iteration's
    snapshots, cycling."""

    def __init__(self, tmp_path):
        self.data = json.loads(BURST.read_text())
        self.i = -1
        self.snap = None
        self.tmp = tmp_path / "stat"

        def read():
            self.tmp.write_text(self.snap["stat"])
            return contention.cpu_busy(self.tmp)

        self.probe = contention.IterationProbe(
            self.data["cpus"],
            read=read,
            own=lambda: self.snap["own_s"],
            clock=lambda: self.snap["t"],
            hz=self.data["hz"],
        )

    def begin(self):
        self.i += 1
        self.snap = self.it()["before"]
        self.probe.begin()

    def end(self):
        self.snap = self.it()["after"]
        return self.probe.end()

    def it(self):
        its = self.data["iterations"]
        return its[self.i % len(its)]


def test_recorded_burst_of_foreign_time_excludes_exactly_those_iterations(tmp_path):
    rec = RecordedProbe(tmp_path)
    n = len(rec.data["iterations"])
    t = FakeTimer([0.01] * (n + 5))
    settings = {"protocol": "fixed", "warmup": 0, "fixed_iterations": n}
    m = measure.run(t.step, settings, clock=t.clock, probe=rec)
    assert len(m.latencies_s) == n and len(m.foreign_pct) == n
    assert [i for i, e in enumerate(m.excluded) if e] == rec.data["burst"]
    assert len(m.clean_latencies()) == n - len(rec.data["burst"])
    assert not m.contended()


def test_excluded_iterations_do_not_count_for_the_stopping_rule():
    """A probe that reports contention on every other iteration: the rule stops only once
    min_iterations clean ones exist, and its CI is over the clean ones."""
    flags = itertools.cycle([50.0, 0.0])

    class Alternating:
        def begin(self):
            pass

        def end(self):
            return next(flags)

    # three stable warm-up iterations, then the contaminated (slow) and clean ones alternate
    t = FakeTimer(itertools.chain([0.010] * 3, itertools.cycle([0.030, 0.010])))
    m = measure.run(t.step, {"max_seconds_per_cell": 1e9}, clock=t.clock, probe=Alternating())
    assert m.stop_reason == "target_ci"
    assert len(m.clean_latencies()) >= 6
    assert np.allclose(m.clean_latencies(), 0.010)  # (fake-clock differences)
    assert sum(m.excluded) == len(m.latencies_s) - len(m.clean_latencies())


def test_a_replicate_contended_throughout_is_retried_then_flagged():
    class Busy:
        def begin(self):
            pass

        def end(self):
            return 60.0

    t = FakeTimer(itertools.repeat(0.01))
    waits = []
    settings = {"max_seconds_per_cell": 1.0, "contended_retries": 2, "contended_backoff_s": 3}
    m, attempts = measure.run_with_retries(
        t.step, settings, probe=Busy(), sleep=waits.append, clock=t.clock
    )
    assert waits == [3, 6]  # bounded, doubling back-off
    assert len(attempts) == 2 and all(a["excluded"] == a["iterations"] for a in attempts)
    assert m.contended() and m.stop_reason == "max_seconds"  # bounded by the cell's budget
    assert m.clean_latencies() == []  # never "all of them, because all were excluded"
    verdict = measure.judge(m, attempts)
    assert verdict["has_statistics"] is False and verdict["contended"] is True
    assert "no statistics" in verdict["contended_reason"]


def test_a_replicate_that_becomes_quiet_after_a_retry_is_clean():
    shares = itertools.chain(itertools.repeat(60.0, 200), itertools.repeat(0.0))

    class Burst:
        def begin(self):
            pass

        def end(self):
            return next(shares)

    t = FakeTimer(itertools.repeat(0.01))
    m, attempts = measure.run_with_retries(
        t.step, {"max_seconds_per_cell": 1.0}, probe=Burst(), sleep=lambda s: None, clock=t.clock
    )
    assert len(attempts) >= 1
    assert not m.contended() and m.stop_reason == "target_ci"


def test_minimum_warmup_and_timed_window_are_spent_before_stopping():
    rng = np.random.default_rng(3)
    m, _ = run(
        lognormal(rng, 0.010, 0.001),
        min_warmup_seconds=0.5,
        min_timed_seconds=0.5,
        max_seconds_per_cell=10,
    )
    assert sum(m.warmup_s) >= 0.5 and sum(m.latencies_s) >= 0.5
    assert m.stop_reason == "target_ci"
    quick, _ = run(lognormal(rng, 0.010, 0.001))
    assert len(quick.latencies_s) < len(m.latencies_s)


class Constant:
    """A probe reporting the same foreign share for every iteration."""

    def __init__(self, share):
        self.share = share

    def begin(self):
        pass

    def end(self):
        return self.share


@pytest.mark.parametrize("protocol", ["adaptive", "fixed"])
def test_the_contended_rule_is_one_definition_for_every_measurement(protocol):
    """min_clean: the adaptive rule needs min_iterations clean iterations, fixed needs one (its
    fixed_iterations may be fewer than min_iterations); more than half excluded is contended
    under both. The runner applies it to cells, the peak and packing groups alike (a group's
    iteration is a round), so there is nothing else to keep in step."""
    settings = {"protocol": protocol, "min_iterations": 6, "fixed_iterations": 4, "warmup": 0}
    assert measure.min_clean(settings) == (6 if protocol == "adaptive" else 1)
    m = measure.Measurement(protocol=protocol, min_clean=measure.min_clean(settings))
    m.latencies_s = [0.01] * 4
    m.excluded = [False, False, False, True]
    assert m.contended() is (protocol == "adaptive")  # 3 clean: enough only for fixed
    m.excluded = [True, True, True, False]
    assert m.contended()  # 3 of 4 excluded: more than half
    # run() records the rule it measured under
    t = FakeTimer(itertools.repeat(0.01))
    got = measure.run(t.step, {**settings, "max_seconds_per_cell": 1.0}, clock=t.clock)
    assert got.min_clean == measure.min_clean(settings) and not got.contended()


def test_every_iteration_excluded_means_no_statistics(tmp_path):
    """The recorded /proc/stat of tests/fixtures/proc/iterations-burst.json replayed so that
    only its burst iterations are timed: every timed iteration had another process on the CPU,
    so all are excluded, no clean latency is left and the verdict says there are no
    statistics (the runner then writes status contended, stats null)."""
    rec = RecordedProbe(tmp_path)
    burst = rec.data["burst"]
    order = iter(burst * 10)

    class BurstOnly(RecordedProbe):
        def begin(self):
            self.i = next(order) - 1
            super().begin()

    probe = BurstOnly(tmp_path)
    t = FakeTimer(itertools.repeat(0.01))
    settings = {"protocol": "fixed", "warmup": 0, "fixed_iterations": len(burst)}
    m, attempts = measure.run_with_retries(
        t.step,
        {**settings, "contended_retries": 1},
        probe=probe,
        sleep=lambda s: None,
        clock=t.clock,
    )
    assert len(attempts) == 1 and attempts[0]["clean_median_s"] is None
    assert all(m.excluded) and m.clean_latencies() == [] and m.contended()
    verdict = measure.judge(m, attempts)
    assert verdict["has_statistics"] is False and verdict["contended"] is True
    assert verdict["clean_foreign_pct"] is None and verdict["excluded_iterations"] == len(burst)


def test_a_step_that_times_itself_is_timed_by_its_own_clock():
    """A barrier round reports its own duration (the instances' clocks): that is the latency,
    not the caller's clock around the call (which includes the pipe)."""
    t = FakeTimer(itertools.repeat(0.05))

    def step():
        t.step()
        return 0.01  # the work itself took 10 ms of the 50

    m = measure.run(step, {"protocol": "fixed", "warmup": 1, "fixed_iterations": 5}, clock=t.clock)
    assert m.latencies_s == [0.01] * 5 and m.warmup_s == [0.01]
    assert m.elapsed_s == pytest.approx(0.05 * 6)  # caps still count the caller's time


# -- an instance's exit after its measurement (runner.Instance.close) -----------------------------
def _exiting_instance(tmp_path, seconds: float):
    """A runner.Instance around a real process that exits 0 after ``seconds`` (its own process
    group, as supervise.start makes it), without starting a cell."""
    import subprocess
    import sys
    import time

    from numa_effects.measure import runner

    inst = runner.Instance.__new__(runner.Instance)
    inst.j, inst.k, inst._buf = 0, 1, b""
    inst.member = runner.Member(None, tmp_path / "spec.json", tmp_path / "log.txt")
    inst.member.log.write_text("")
    inst.logfh = open(inst.member.log, "a")  # noqa: SIM115
    inst.command_line, inst.oom_before = "test", 0
    inst.guard = type("NoGuard", (), {"check": lambda self: None})()
    inst.proc = subprocess.Popen(
        [sys.executable, "-c", f"import sys, time; sys.stdin.read(); time.sleep({seconds})"],
        stdin=subprocess.PIPE,
        start_new_session=True,
    )
    inst.started = time.monotonic()
    return inst


def test_a_slow_exit_before_the_deadline_is_waited_for(tmp_path, monkeypatch):
    """torch's shutdown took > 30 s in a busy emulated guest and the runner killed the instance,
    which read as an interruption from outside (no result, the job failed): it now waits until
    the measurement's deadline."""
    import time

    from numa_effects.measure import runner

    monkeypatch.setattr(runner, "EXIT_TIMEOUT_S", 0.05)  # the old rule would kill it
    inst = _exiting_instance(tmp_path, 0.5)
    inst.close(time.monotonic() + 30, 30.0)
    assert inst.proc.returncode == 0


def test_an_instance_that_never_exits_fails_with_timeout_not_interrupted(tmp_path, monkeypatch):
    import time

    from numa_effects.measure import runner
    from numa_effects.measure.causes import Cause

    monkeypatch.setattr(runner, "EXIT_TIMEOUT_S", 0.2)
    inst = _exiting_instance(tmp_path, 60)
    t0 = time.monotonic()
    with pytest.raises(runner.Failed) as exc:
        inst.close(time.monotonic() - 1, 5.0)  # the deadline has passed: EXIT_TIMEOUT_S left
    assert exc.value.cause == Cause.TIMEOUT
    assert time.monotonic() - t0 < 10
    assert inst.proc.poll() is not None  # killed with its group
