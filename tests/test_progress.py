"""The run's progress line (numa_effects.measure.progress): the ETA corrects the estimate by the
square root of how long the done jobs took against theirs, each done job against its own
estimate whatever order the jobs run in, and every finished job counts once."""

import io
import json
from pathlib import Path

from numa_effects.measure import progress

FIXTURES = Path(__file__).parent / "fixtures" / "progress"

ESTIMATES = {"a": 10.0, "b": 10.0, "c": 20.0, "d": 20.0}


def test_the_eta_scales_the_rest_by_the_done_jobs_speed():
    # two jobs estimated 20 s in all took 40 s: the remaining 40 s will take 40 x sqrt(2) = 57 s
    text = progress.line(1000.0, ESTIMATES, ["a", "b"], 1040.0)
    assert text.startswith("progress: 2/4 measuring jobs done in 0.7 min")
    assert "about 0.9 min left (estimated 1.0 min)" in text
    assert "about 0.0 min left" in progress.line(1000.0, ESTIMATES, list("abcd"), 1100.0)


def test_each_done_job_is_matched_to_its_own_estimate_not_to_the_order_of_the_list():
    # the long job is listed first but runs last (Snakemake's order): the two short ones took
    # twice their estimate, so the 300 s left take 300 x sqrt(2) = 424 s
    estimates = {"deploy": 300.0, "cell1": 10.0, "cell2": 10.0}
    text = progress.line(0.0, estimates, ["cell1", "cell2"], 40.0)
    assert text == (
        "progress: 2/3 measuring jobs done in 0.7 min; about 7.1 min left (estimated 5.3 min)"
    )
    # the long job done first, in half its estimate: the 20 s left take 20 x sqrt(0.5) = 14 s
    assert "about 0.2 min left" in progress.line(0.0, estimates, ["deploy"], 150.0)


def test_a_job_the_start_did_not_know_counts_at_the_median_and_a_repeat_once():
    # a replicate added by the two-stage checkpoint: one more job, priced like a typical one
    text = progress.line(0.0, ESTIMATES, ["a", "a", "extra"], 30.0)
    assert text.startswith("progress: 2/5 measuring jobs done")
    # a (10 s) + extra (the median, 15 s) took 30 s: c, d and b (50 s) take 50 x sqrt(1.2) = 55 s
    assert "about 0.9 min left" in text


def test_each_finished_job_appends_one_line_and_prints_it(tmp_path):
    results = tmp_path / "results"
    out = results / "cells" / "m" / "r1.json"
    peak = results / "peak" / "x.json"
    progress.start(results, {str(peak): 5.0, str(out): 5.0, str(results / "y.json"): 5.0})
    out.parent.mkdir(parents=True)
    stream = io.StringIO()
    first = progress.done(out, stream)
    second = progress.done(peak, stream)
    assert first.startswith("progress: 1/3") and second.startswith("progress: 2/3")
    assert stream.getvalue().splitlines() == [first, second]
    lines = (results / progress.DONE).read_text().splitlines()
    assert [json.loads(ln)["out"] for ln in lines] == ["cells/m/r1.json", "peak/x.json"]
    progress.start(results, {str(out): 1.0})  # a new run starts its count again
    assert not (results / progress.DONE).exists()
    assert progress.done(tmp_path / "elsewhere.json", stream) is None  # no run started there


def test_a_job_names_its_record_relative_to_where_it_runs(tmp_path, monkeypatch):
    # the run plans with relative paths; the job may name its record otherwise: one key
    monkeypatch.chdir(tmp_path)
    progress.start("results", {"results/cells/r1.json": 60.0, "results/cells/r2.json": 60.0})
    (tmp_path / "results" / "cells").mkdir()
    text = progress.done(tmp_path / "results" / "cells" / "r2.json", io.StringIO())
    assert text.startswith("progress: 1/2 measuring jobs done")


def test_on_a_real_run_the_eta_follows_the_time_left_and_the_listed_order_does_not():
    # a default run's jobs as they ended (tests/fixtures/progress): Snakemake ran the 5.5 min
    # deploy job last, though the start listed it third
    run = json.loads((FIXTURES / "default-run-epyc.json").read_text())
    started, end, listed = run["started"], run["done"][-1][0], run["listed"]
    for i, (t, _) in enumerate(run["done"][:-1], 1):
        text = progress.line(started, run["estimates"], [o for _, o in run["done"][:i]], t)
        said, real = float(text.split("about ")[1].split(" min")[0]), (end - t) / 60
        assert 0.6 < said / real < 1.6, text
        # the same line by the listed order: the deploy job counted as done from the third on
        naive = sum(listed[i:]) * (t - started) / sum(listed[:i]) / 60
        assert i < 3 or naive < 1.5 < 4 < real
    everything = [o for _, o in run["done"]]
    assert "about 0.0 min left" in progress.line(started, run["estimates"], everything, end)


def test_on_the_newcomer_xeon_run_the_eta_is_within_25_pct_of_the_time_left():
    # the run's lines (tests/fixtures/progress/README.md): 40 jobs, Snakemake's 20.2 min; the
    # time left at each line is the end less its time. The full ratio of taken to estimated
    # (the rule before the root) said 10.8 min at 12.0 min, where 8.2 remained
    run = json.loads((FIXTURES / "newcomer-xeon.json").read_text())
    done, end = run["done"], run["end"]
    checked = 0
    for i, (t, _) in enumerate(done[:-1], 1):
        text = progress.line(run["started"], run["estimates"], [o for _, o in done[:i]], t)
        said, real = float(text.split("about ")[1].split(" min")[0]), (end - t) / 60
        if i > len(done) // 5:
            assert 0.75 <= said / real <= 1.25, text
            checked += 1
        if t == 12.0 * 60:  # the old rule, from the same (0.1 min) times: 10.8 min said
            gone = {o for _, o in done[:i]}
            rest = sum(s for o, s in run["estimates"].items() if o not in gone)
            full = rest * t / sum(run["estimates"][o] for o in gone) / 60
            assert abs(full - 10.8) < 0.15 and round(real, 1) == 8.2 and said < 10
    assert checked == 31


def test_a_run_of_hours_is_told_in_hours():
    estimates = {f"cells/{i}.json": 180.0 for i in range(1000)}  # 50 h, as PackRat's grid on 2 x 32
    text = progress.line(0.0, estimates, ["cells/0.json", "cells/1.json"], 330.0)
    # 998 x 180 s x sqrt(330 / 360) = 171,993 s
    assert text == (
        "progress: 2/1000 measuring jobs done in 5.5 min; about 47 h 47 min left "
        "(estimated 50 h 00 min)"
    )
