"""The load test in the workflow: the default plan runs it after the deploy job and draws its
figure into the report, a tight budget drops it and says so (dry runs), and the session's quick
run (conftest.quick_run, which measures its throughput answer) ends with LoadGen's rows, logs
and the figure on the page."""

import re

import pandas as pd
import pytest
import yaml
from conftest import REPO, planned, quick_config, snakemake

from numa_effects import loadtest

pytestmark = pytest.mark.integration


def test_the_default_plan_load_tests_the_answer_and_the_page_shows_it(tmp_path):
    default = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    jobs = planned(tmp_path / "all", {**default, "budget": None}, "--cores", "2")
    assert jobs["deploy_run"] == jobs["loadtest"] == jobs["plot_loadtest"] == 1
    # the page needs the figure, the figure the load test
    page = planned(
        tmp_path / "page",
        {**default, "budget": None},
        "--cores",
        "2",
        target="results/report/index.html",
    )
    assert page["plot_loadtest"] == page["loadtest"] == 1
    # under the default budget it runs unless the budget says it dropped it
    proc = snakemake(tmp_path / "budget", default, "-n", "--cores", "2")
    dropped = "budget: loadtest dropped (deploy.loadtest: false)" in proc.stderr
    assert dropped != bool(re.search(r"^loadtest\s+1$", proc.stdout, re.M)), proc.stderr[-2000:]


def test_a_tight_budget_drops_the_load_test_and_says_so(tmp_path):
    proc = snakemake(tmp_path, {**quick_config(), "budget": 1}, "-n", "--cores", "2")
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("budget: ")]
    assert "budget: loadtest dropped (deploy.loadtest: false)" in lines
    # dropped after packing, the documented order (docs/deploy.md)
    assert lines.index("budget: packing.enabled: false") < lines.index(
        "budget: loadtest dropped (deploy.loadtest: false)"
    )
    jobs = planned(tmp_path, {**quick_config(), "budget": 1}, "--cores", "2")
    assert jobs["deploy_run"] == 1 and not jobs["loadtest"] and not jobs["plot_loadtest"]


def test_the_quick_run_ends_with_loadgen_rows_and_the_figure(quick_run):
    results = quick_run.results
    table = pd.read_csv(results / loadtest.TABLE)
    rec = pd.read_csv(results / "tables" / "recommendation.csv")
    throughput = rec[rec["objective"] == "throughput"]
    assert set(table["objective"]) == {"throughput"}
    # the recommendation and, where the answer has baselines, the one it gains least over
    roles = {"recommended"} | ({"baseline"} if (throughput["role"] == "baseline").any() else set())
    assert set(table["role"]) == roles
    for _, g in table.groupby("role"):
        off = g[g["scenario"] == loadtest.OFFLINE]
        assert len(off) == 1 and off["achieved"].iloc[0] > 0
        assert len(g[g["scenario"] == loadtest.SERVER]) == 3  # deploy.LOADTEST's server runs
        for r in g.itertuples():  # each row is LoadGen's own verdict of its run
            logs = quick_run.workdir / r.logs  # as Snakemake ran it: from its working directory
            summary = (logs / "mlperf_log_summary.txt").read_text()
            assert re.search(rf"^Result is : {r.valid}$", summary, re.M), r.logs
            assert logs.is_relative_to(results / "loadtest")
    figure = results / "report/figures/resnet18/latency_under_load/throughput.png"
    assert figure.stat().st_size > 0 and figure.with_suffix(".svg").stat().st_size > 0
    page = (results / "report/index.html").read_text()
    deploy = page[page.index('<h2 id="what-to-deploy">') :]
    deploy = deploy[: deploy.index("<h2", 5)]
    assert '<h3 id="under-load">Under load</h3>' in deploy
    assert 'src="figures/resnet18/latency_under_load/throughput.png"' in deploy
    assert "Not tested under load" not in (results / "summary.txt").read_text()
