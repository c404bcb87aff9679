"""The load test in the default run (plan.deploy.LOADTEST, plan.cost._loadtest, the budget's
step ``_no_loadtest``, Plan.loadtest_*): planned for a measured throughput answer, priced by its
LoadGen runs' durations, dropped by a tight budget, and said in one line where it is not run.
Plans for the default config on the fixture topology of a 1-node, 2-CPU VM (no machine facts)."""

import copy

import pytest
import yaml
from conftest import FIXTURES, REPO

from numa_effects import config as config_mod
from numa_effects.plan import build, cost
from numa_effects.plan.deploy import LOADTEST

ONE_NODE = FIXTURES / "topology" / "this-vm-2cpu-1node.lscpu"


def checked(**over) -> tuple[dict, object]:
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    got = config_mod.check({**cfg, "topology": str(ONE_NODE), **over})
    return copy.deepcopy(got.config), got.topology


def plan_of(**over):
    cfg, topo = checked(**over)
    return build.build(cfg, topo, code={"measure": "m", "tables": "t", "report": "r"})


def test_the_default_plan_load_tests_the_throughput_answer_and_draws_it():
    plan = plan_of(budget=None)
    assert plan.deploy["loadtest"] is True
    assert plan.table("loadtest") in plan.targets()
    args = plan.loadtest_args()
    # the throughput row of the grid's first model, both roles, runs of deploy.max_seconds
    said = dict(zip(args[::2], args[1::2], strict=True))
    assert said["--objective"] == "throughput" and said["--model"] == plan.config["models"][0]
    assert said["--role"] == "both"
    assert float(said["--min-duration-s"]) == plan.deploy["max_seconds"]
    assert plan.loadtest_note() is None
    # the latency objective alone, or the key off: no load test, and the reason in one line
    for over in ({"objectives": ["latency"]}, {"loadtest": False}):
        p = plan_of(budget=None, deploy=over)
        assert not p.deploy["loadtest"] and p.table("loadtest") not in p.targets()
    off = plan_of(budget=None, deploy={"loadtest": False})
    assert off.loadtest_note() == "Not tested under load (deploy.loadtest is false): make " + (
        "loadtest runs it."
    )
    assert plan_of(budget=None, deploy={"objectives": ["latency"]}).loadtest_note() is None


def test_its_price_lies_between_its_loadgen_runs_shortest_and_longest():
    """Each LoadGen run lasts at least its minimum duration (deploy.max_seconds) and at most
    ``max_duration`` x it; per role an Offline run and ``server_runs`` Server runs. So the part
    is at least roles x (1 + server_runs) x max_seconds, and at most that x max_duration plus
    the fixed costs of two jobs and two warm starts (under a minute at the constants)."""
    plan = plan_of(budget=None)
    est = cost.estimate(plan)
    runs = LOADTEST["roles"] * (1 + LOADTEST["server_runs"])
    least = runs * plan.deploy["max_seconds"]
    assert least <= est.parts["loadtest"] <= LOADTEST["max_duration"] * least + 60
    # without it, the rest of the estimate is the same and the part is gone
    off = cost.estimate(plan_of(budget=None, deploy={"loadtest": False}))
    assert "loadtest" not in off.parts
    assert off.total_s == pytest.approx(est.total_s - est.parts["loadtest"])
    # it follows the deploy job: the job's allowance leaves it its time
    allowance = cost.deploy_allowance(est, 15, "results")
    assert allowance["after_s"] >= est.parts["loadtest"] + est.parts["tables and report"]


def test_a_tight_budget_drops_it_after_packing_and_says_so():
    cfg, topo = checked(budget=1)
    plan = build.build(copy.deepcopy(cfg), topo, code={})
    fitted, est = cost.fit(cfg, topo, plan)
    said = "loadtest dropped (deploy.loadtest: false)"
    assert said in est.shrunk
    assert est.shrunk.index("packing.enabled: false") < est.shrunk.index(said)
    assert fitted["deploy"]["loadtest"] is False and "loadtest" not in est.parts
    narrowed = plan.narrowed(fitted)
    assert narrowed.table("loadtest") not in narrowed.targets()
    assert narrowed.loadtest_note(est.shrunk) == (
        "Not tested under load (the budget dropped it): make loadtest runs it."
    )
    # a budget the whole plan fits in keeps it
    _, roomy = cost.fit(checked(budget=10_000)[0], topo, plan)
    assert not any(s.startswith("loadtest") for s in roomy.shrunk) and "loadtest" in roomy.parts


def test_what_to_deploy_shows_the_figure_or_says_why_in_one_line(tmp_path):
    import pandas as pd

    from numa_effects.report import deploy_section, families, markup

    answer = pd.read_csv(FIXTURES / "deploy" / "recommendation.csv")
    page_dir = tmp_path / "report"
    png = page_dir / "figures" / "resnet18" / "latency_under_load" / "throughput.png"
    shown = deploy_section.under_load(str(png), None, str(page_dir))
    html = markup.render("deploy.html.j2", deploy=deploy_section.section(answer, shown))
    assert 'src="figures/resnet18/latency_under_load/throughput.png"' in html
    assert 'href="figures/resnet18/latency_under_load/throughput.svg"' in html
    assert "MLPerf LoadGen" in html and "MLPerf LoadGen" in families.UNDER_LOAD
    note = "Not tested under load (the budget dropped it): make loadtest runs it."
    said = deploy_section.under_load(None, note, str(page_dir))
    html = markup.render("deploy.html.j2", deploy=deploy_section.section(answer, said))
    assert [ln for ln in html.splitlines() if "Not tested under load" in ln] == [
        f'<p class="why">{note}</p>'
    ]
    assert "<img" not in html.split('id="under-load"')[1]
    assert deploy_section.under_load(None, None, str(page_dir)) is None
