"""What to deploy, end to end: a real Snakemake run of a tiny grid with the deploy answer on
(the search after the cells, the configurations measured side by side in blocks of ABBA slices,
the table, the summary's first lines, the report's first section), and the estimate a dry run
prints, here and for a synthesized 2 x 32-core server under a budget."""

import json
from itertools import accumulate

import pandas as pd
import pytest
import yaml
from conftest import FIXTURES, REPO, snakemake
from test_packrat import PACKRAT

from numa_effects.measure import deploy, record
from numa_effects.plan import cpulist, slices
from numa_effects.plan import deploy as deploy_plan

pytestmark = pytest.mark.integration


@pytest.fixture
def run(quick_run):
    """The session's quick grid with the deploy answer (conftest.quick_run): (results, the dry
    run before it, the run)."""
    return quick_run.results, quick_run.dry, quick_run.done


def test_a_dry_run_prints_the_estimate(run):
    _, dry, done = run
    for proc in (dry, done):
        assert "numa-effects: the whole run is estimated at" in proc.stderr


def test_every_objective_has_one_recommendation_measured_beside_the_baselines(run):
    results, _, _ = run
    plan = json.loads((results / "deploy/plan.json").read_text())
    df = pd.read_csv(results / "tables/recommendation.csv")
    assert set(df["objective"]) == {r["name"] for r in plan["objectives"]}
    for name, g in df.groupby("objective"):
        assert (g["role"] == "recommended").sum() == 1, name
        assert set(g["source"]) == {"measured"}
        rec = g[g["role"] == "recommended"].iloc[0]
        assert rec["value"] > 0 and rec["rounds"] >= 1
        assert "numactl --physcpubind=" in rec["command"]
        for b in g[g["role"] == "baseline"].itertuples():
            assert b.baseline  # named by every rule that gives this layout
            if b.rounds >= 2 and rec["rounds"] >= 2:
                assert b.gain_ci_low <= b.gain <= b.gain_ci_high
    # the run_cpu layouts, all-cores among the baselines of every latency row
    lat = df[df["objective"].str.startswith("latency")]
    names = " = ".join(lat["baseline"].dropna())
    for want in ("all-cores", "run_cpu-latency", "run_cpu-throughput"):
        assert want in names


def test_the_recommendation_is_not_measured_slower_than_another_by_more_than_the_margin(
    quick_run,
):
    """The answer never recommends a configuration measured slower than another of its
    objective row by more than the equivalence margin (deploy.equivalence_pct) unless it says
    it is undecided: the recommended value is within the margin of the best measured value."""
    margin = deploy_plan.settings(quick_run.config, measured=True)["equivalence_pct"] / 100
    df = pd.read_csv(quick_run.results / "tables/recommendation.csv")
    rows = df[df["role"].isin(["recommended", "candidate", "baseline"]) & df["value"].notna()]
    assert not rows.empty
    for name, g in rows.groupby("objective"):
        (rec,) = g[g["role"] == "recommended"].itertuples()
        if "undecided" in str(rec.notes):
            continue
        # latency in ms: lower is better; throughput in images/s: higher is better
        slower = g["value"] / rec.value if rec.unit == "images/s" else rec.value / g["value"]
        assert slower.max() <= (1 + margin) * (1 + 1e-9), (name, g[["config", "value"]])


def test_configurations_are_measured_in_blocks_of_abba_slices_with_their_binding(run):
    results, _, _ = run
    result = record.read_group(results / "deploy/run.json")
    plan = json.loads((results / "deploy/plan.json").read_text())
    ids = list(plan["configurations"])
    assert deploy.rounds(result) == 2 and result.kind == "deploy"
    assert result.job["design"] == "slices"
    # a block is one part, or two halves one after the other where memory is short
    # (deploy.halves says so in the job's "memory")
    h = len(ids) // 2
    parts = [ids[:h], ids[h:]] if result.job.get("memory") else [ids]
    for b in (1, 2):  # each part's slices in ABBA order over its cycles (plan.slices.order)
        starts, expected = [], []  # (the first step's start, configuration) of every slice
        for part in parts:
            done = [c for c in part if result.runs[c][b - 1].status == "ok"]
            for c in done:
                m = result.runs[c][b - 1].measurement
                starts += [(m["t0_s"][k], c) for k in accumulate([0, *m["slice_steps"][:-1]])]
            expected += slices.order(done, result.runs[done[0]][b - 1].measurement["cycles"])
        assert [c for _, c in sorted(starts)] == expected
    for cid, recs in result.runs.items():
        config = plan["configurations"][cid]
        for rec in recs:
            if rec.status != "ok":
                continue
            got = [i["binding"]["cpus_allowed_list"] for i in rec.instances]
            assert got == [cpulist.format(i["cpus"]) for i in config["instances"]]
            assert [i["batch"] for i in rec.instances] == [i["batch"] for i in config["instances"]]
            assert rec.cell["opt"] == config["opt"]
            assert rec.cell["allocator"] == config["allocator"]


def test_the_run_ends_with_the_answer(run):
    results, _, done = run
    summary = (results / "summary.txt").read_text()
    assert summary.startswith("What to deploy (measured")
    page = (results / "report/index.html").read_text()
    first = page.index("<h2")
    assert page[first:].startswith('<h2 id="what-to-deploy">What to deploy</h2>')
    assert "What to deploy (measured" in done.stderr
    assert "progress: 1/" in done.stderr and "min left" in done.stderr


def test_a_budget_on_a_2x32_server_is_planned_within_it(tmp_path):
    topo = FIXTURES / "topology" / "synthetic-2x32-smt-offset64.lscpu-p.txt"
    default = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    proc = snakemake(
        tmp_path, default, "-n", "--config", f"topology={topo}", "budget=60", "--cores", "1"
    )
    assert "budget: threads: " in proc.stderr  # 1..32 is too many there
    assert "within the budget of 60 min" in proc.stderr


@pytest.mark.skipif(not PACKRAT.is_dir(), reason=f"no PackRat data at {PACKRAT}")
def test_packrats_cloudlab_import_gets_a_predicted_answer_with_intervals(tmp_path):
    topo = FIXTURES / "topology" / "2x16-nosmt-alternating.lscpu-p.txt"  # CloudLab's c6420
    cfg = {
        "models": ["resnet50"],
        "batch_sizes": [1],
        "optimizations": ["none"],
        "threads": [1],
        "placements": ["sequential"],
        "topology": str(topo),
        "import": {
            "packrat": [str(PACKRAT / "cloudlab_large-batches-tcmalloc")],
            "interference": str(PACKRAT / "cloudlab_multiinstance-interference"),
            "machine": "CloudLab c6420",
        },
    }
    snakemake(tmp_path, cfg, "--cores", "2", "all")
    results = tmp_path / "results"
    df = pd.read_csv(results / "tables/recommendation.csv")
    assert set(df["source"]) == {"predicted"}
    rec = df[df["role"] == "recommended"]
    assert (rec["predicted"] > 0).all() and len(rec) == rec["objective"].nunique()
    spread = rec[rec["predicted_low"] < rec["predicted_high"]]  # interference's uncertainty
    assert not spread.empty
    assert (
        (spread["predicted_low"] < spread["predicted"])
        & (spread["predicted"] < spread["predicted_high"])
    ).all()
    assert (results / "tables/interference.csv").is_file()
    assert (results / "summary.txt").read_text().startswith("What to deploy (predicted")
    assert not (results / "deploy/run.json").exists()  # nothing is measured
