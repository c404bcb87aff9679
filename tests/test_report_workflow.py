"""The report rules on the fixture tables: real snakemake, no torch, no cell runs.

Only the report rules (and `degradation`) are allowed, so the copied fixture tables are inputs.
Checks: every planned figure file is made (and no other), index.html references each of them and
no missing one, opens in headless Chromium with no broken image, and `snakemake --report` works.
"""

import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
from conftest import snakemake
from report_browser import install_chromium, load_page, page_links

from numa_effects.plan import grid, topology
from numa_effects.report import families, figures
from numa_effects.tables import cells as tidy

pytestmark = pytest.mark.integration

HERE = Path(__file__).parent
FIX = HERE / "fixtures" / "tables"
RULES = ["report_page", "degradation", *(f"plot_{f.name}" for f in families.FAMILIES)]
CONFIG_2NODE = {
    "models": ["resnet50"],
    "batch_sizes": [1, 8, 64],
    "optimizations": ["none", "script"],
    "threads": [1, 2, 4, 8],
    "placements": ["sequential", "interleave", "remote"],
    "topology": str(FIX / "topology-2node-4core.lscpu"),
    "packing": {"enabled": False},  # the Packing section has its own tests (test_packing*.py)
    "deploy": {"enabled": False},  # and What to deploy its own (test_deploy*.py)
}
CONFIG_1NODE = {
    "models": ["resnet50"],
    "batch_sizes": [1, 8],
    "optimizations": ["script"],
    "threads": [1, 2],
    "placements": ["sequential", "interleave"],
    "topology": str(HERE / "fixtures" / "topology" / "this-vm-2cpu-1node.lscpu"),
    "packing": {"enabled": False},
    "deploy": {"enabled": False},
}
KEYS = list(grid.KEYS)


def table(name: str) -> pd.DataFrame:
    """A fixture table as the pipeline writes it now (an axis added since: its default; the
    cells' replicate columns: one process each, its own CI, as the fixture was measured)."""
    df = grid.fill_keys(pd.read_csv(FIX / name))
    if name == "cells.csv":
        for col, value in (("replicates", 1), ("ci_method", "within-process")):
            if col not in df:
                df[col] = value
    return df


def expected_figures(config) -> list[figures.Figure]:
    return figures.figures(grid.expand(config, topology.load(config["topology"])).drawn())


def build(workdir: Path, config: dict, cells: pd.DataFrame, samples, skipped) -> Path:
    tables = workdir / "results" / "tables"
    tables.mkdir(parents=True)
    cells.to_csv(tables / "cells.csv", index=False)
    samples.to_csv(tables / "samples.csv", index=False)
    skipped.to_csv(tables / "skipped.csv", index=False)
    failed = cells[cells["status"] != "ok"]
    failures = failed[KEYS].assign(cause=failed["failure_cause"], message=failed["failure_message"])
    failures.to_csv(tables / "failures.csv", index=False)
    shutil.copy(FIX / "machine.json", workdir / "results" / "machine.json")
    snakemake(
        workdir,
        config,
        "--cores",
        "2",
        "--allowed-rules",
        *RULES,
        "--",
        "results/report/index.html",
    )
    return workdir / "results" / "report" / "index.html"


@pytest.fixture(scope="session")
def chromium():
    return install_chromium()


@pytest.fixture(scope="module")
def two_node(tmp_path_factory):
    wd = tmp_path_factory.mktemp("report-2node")
    page = build(
        wd,
        CONFIG_2NODE,
        table("cells.csv"),
        table("samples.csv"),
        table("skipped.csv"),
    )
    return wd, page


@pytest.fixture(scope="module")
def one_node(tmp_path_factory):
    """The fixture's script/sequential cells on threads 1-2 as a 1-node machine would run them:
    its interleave cells bind like them and are reported from them (``plan.binding``)."""
    wd = tmp_path_factory.mktemp("report-1node")
    cfg = CONFIG_1NODE
    g = grid.expand(cfg, topology.load(cfg["topology"]))
    run = pd.DataFrame([k.as_dict() for k in g.cells])
    cells = table("cells.csv").merge(run, on=KEYS)
    samples = table("samples.csv").merge(run, on=KEYS)
    same = [{**k.as_dict(), "same_binding_as": m.placement} for k, m in g.same.items()]
    cells = tidy.with_same_bindings(cells, same)
    skipped = tidy.skipped_table([{**k.as_dict(), "reason": w} for k, w in g.skipped.items()])
    assert len(run) == 4 and len(cells) == 8 and skipped.empty
    return wd, build(wd, cfg, cells, samples, skipped)


def figure_files(workdir: Path, ext: str) -> set[Path]:
    return set((workdir / "results" / "report" / "figures").rglob(f"*.{ext}"))


def test_every_planned_figure_is_drawn_and_nothing_else(two_node):
    wd, _ = two_node
    want = expected_figures(CONFIG_2NODE)
    assert len(want) == 46  # 42 + the remote heatmaps
    folder = str(wd / "results" / "report" / "figures")
    assert figure_files(wd, "png") == {Path(f.path(folder)) for f in want}
    assert figure_files(wd, "svg") == {Path(f.path(folder, "svg")) for f in want}
    assert all(p.stat().st_size > 10_000 for p in figure_files(wd, "png"))


def test_page_references_every_figure_and_no_missing_one(two_node):
    wd, page = two_node
    links = page_links(page)
    imgs = {(page.parent / src).resolve() for src in links.imgs}
    assert imgs == {p.resolve() for p in figure_files(wd, "png")}
    assert len(links.imgs) == len(imgs)  # each figure once
    for href in links.hrefs:
        if not href.startswith("#"):
            assert (page.parent / href).is_file(), href
        else:
            assert href[1:] in links.ids, href


def test_page_has_the_reference_sections_machine_run_and_cells(two_node):
    _, page = two_node
    text = page.read_text()
    links = page_links(page)
    for anchor in ("latency-sequential", "throughput-sequential", "numa-effects"):
        assert anchor in links.ids
    # the NUMA Effects link comes before the first section
    assert text.index('href="#numa-effects"') < text.index('id="latency-sequential"')
    assert "Fixture CPU (2 x 4 cores)" in text and "2.14.1" in text
    assert re.search(r"cells measured</th><td>64<", text)
    assert re.search(r"cells failed</th><td>1<", text)
    assert re.search(r"cells skipped</th><td>6<", text)
    assert "resnet50/script/interleave/4/8" in text and "timeout" in text
    assert "wall-clock time of the run" in text
    assert "failures.csv (1 rows)" in text
    assert text.count('<tr class="failed">') == 1
    assert text.count('<tr class="skipped">') == 6
    # packing is off in this config and the grid is PackRat's (float32 eager and TorchScript
    # with glibc): those two sections say why they have no figure, the others have figures
    precision = text.index('<h2 id="precision-runtime"')
    assert "No figures" not in text[:precision]
    assert "No figures: the grid measures only float32 eager" in text[precision:]


def test_page_renders_in_chromium_without_broken_images(two_node, chromium, tmp_path):
    _, page = two_node
    n, broken = load_page(chromium, page, tmp_path / "profile")
    assert n == 46
    assert broken == []


def test_a_broken_image_is_detected(two_node, chromium, tmp_path):
    """The rendering check itself: a page pointing at a missing file is caught."""
    _, page = two_node
    bad = page.with_name("broken.html")
    bad.write_text('<html><body><img src="figures/nope.png"></body></html>')
    try:
        assert load_page(chromium, bad, tmp_path / "profile") == (1, ["figures/nope.png"])
    finally:
        bad.unlink()


def test_snakemake_report_groups_figures_by_section(two_node):
    wd, _ = two_node
    snakemake(
        wd,
        CONFIG_2NODE,
        "--allowed-rules",
        *RULES,
        "--report",
        "report.html",
        "--",
        "results/report/index.html",
    )
    html = (wd / "report.html").read_text()
    for section in ("Latency (Sequential)", "Throughput (Sequential)", "NUMA Effects"):
        assert section in html
    assert "% latency degradation (heatmap)" in html
    # the caption is the registry's, rendered through workflow/report/figure.rst
    assert "Diverging scale centred on 0" in html


def test_one_node_run_has_no_numa_figures_and_says_why(one_node, chromium, tmp_path):
    wd, page = one_node
    want = expected_figures(CONFIG_1NODE)
    assert want and all(f.spec.section != "numa" for f in want)
    assert {p.name for p in figure_files(wd, "png")} == {Path(f.path("x")).name for f in want}
    text = page.read_text()
    numa = text[text.index('id="numa-effects"') :]
    assert "No figures" in numa[:600]
    assert "Every cell of interleave binds like its baseline" in numa[:600]
    n, broken = load_page(chromium, page, tmp_path / "profile")
    assert (n, broken) == (len(want), [])
