"""The run's progress line (numa_effects.measure.progress): the ETA corrects the estimate by how
long the done jobs took, and every finished job counts once."""

import io
import json

from numa_effects.measure import progress


def test_the_eta_scales_the_rest_by_the_done_jobs_speed():
    estimates = [10.0, 10.0, 20.0, 20.0]
    # two jobs estimated 20 s in all took 40 s: the remaining 40 s will take 80 s
    text = progress.line(1000.0, estimates, 2, 1040.0)
    assert text.startswith("progress: 2/4 measuring jobs done in 0.7 min")
    assert "about 1.3 min left (estimated 1.0 min)" in text
    assert "about 0.0 min left" in progress.line(1000.0, estimates, 4, 1100.0)
    assert progress.line(1000.0, estimates, 5, 1100.0).startswith("progress: 5/5")


def test_each_finished_job_appends_one_line_and_prints_it(tmp_path):
    results = tmp_path / "results"
    progress.start(results, [5.0, 5.0, 5.0])
    out = results / "cells" / "m" / "r1.json"
    out.parent.mkdir(parents=True)
    stream = io.StringIO()
    first = progress.done(out, stream)
    second = progress.done(results / "peak" / "x.json", stream)
    assert first.startswith("progress: 1/3") and second.startswith("progress: 2/3")
    assert stream.getvalue().splitlines() == [first, second]
    lines = (results / progress.DONE).read_text().splitlines()
    assert [json.loads(ln)["out"] for ln in lines] == [str(out), str(results / "peak/x.json")]
    progress.start(results, [1.0])  # a new run starts its count again
    assert not (results / progress.DONE).exists()
    assert progress.done(tmp_path / "elsewhere.json", stream) is None  # no run started there
