"""The report page (numa_effects.report.page) on the fixture tables, without snakemake: the
cells whose timing was disturbed are listed, and an emulated machine gets a banner."""

import json
from pathlib import Path

import numpy as np
import pytest

from numa_effects.plan import grid
from numa_effects.report import data as figure_data
from numa_effects.report import families, figures, markup
from numa_effects.report import page as report_html

FIX = Path(__file__).parent / "fixtures" / "tables"
MACHINE = json.loads((FIX / "machine.json").read_text())


def page(cells_csv: str, machine: dict, tmp_path) -> str:
    t = figure_data.Tables.load(FIX / cells_csv, FIX / "skipped.csv", FIX / "degradation.csv")
    figs = figures.figures(t.cells[list(grid.KEYS)].to_dict("records"))
    return report_html.render(
        [f.as_dict() for f in figs],
        t.cells,
        t.skipped,
        t.degradation,
        machine,
        page_dir=str(tmp_path),
        figure_dir=str(tmp_path / "figures"),
        placements=["sequential", "interleave", "remote"],
        latency_stat=t.latency_stat,
    )


def test_contended_and_noisy_cells_are_listed(tmp_path):
    html = page("cells_contended.csv", MACHINE, tmp_path)
    run = html[html.index('<h2 id="run">') : html.index('<h2 id="cells">')]
    assert "<th>cells contended or noisy</th><td>2</td>" in run
    listed = run[run.index('id="disturbed"') :]
    assert "<code>resnet50/none/interleave/2/8</code>: contended</li>" in listed
    assert "<code>resnet50/script/sequential/4/1</code>: noisy</li>" in listed
    clean = page("cells.csv", MACHINE, tmp_path)
    assert 'id="disturbed"' not in clean and "contended or noisy" not in clean


@pytest.mark.parametrize("reason", ["no KVM: QEMU TCG", None])
def test_an_emulated_machine_gets_a_banner_above_the_figures(tmp_path, reason):
    machine = {**MACHINE, "emulated": True, "emulated_reason": reason}
    html = page("cells.csv", machine, tmp_path)
    banner = html.index('class="emulated"')
    assert banner < html.index('id="latency-sequential"')
    text = html[banner : html.index("</p>", banner)]
    assert "mean nothing as performance" in text
    assert (reason in text) if reason else text.endswith("real).")
    assert 'class="emulated"' not in page("cells.csv", MACHINE, tmp_path)


def test_sections_and_navigation_follow_the_registry(tmp_path):
    html = page("cells.csv", MACHINE, tmp_path)
    nav = html[html.index("<nav>") : html.index("</nav>")]
    anchors = [s.anchor for s in families.page_sections().values()]
    assert "comparison" not in anchors  # the comparison page's (compare.page)
    assert [a for a in anchors if f'href="#{a}"' in nav] == anchors
    pos = [html.index(f'<h2 id="{a}">') for a in anchors]
    assert pos == sorted(pos)
    for fam in families.page_families():
        # packing: planned from the config key packing (packing.smk); precision: PackRat's
        # grid (these cells) has nothing beyond float32 eager and TorchScript with glibc;
        # node_pairs: these cells have no node-pair placement (tests/test_node_pair_report.py)
        if fam.section not in ("packing", "precision", "node_pairs"):
            assert markup.caption_html(fam.caption) in html


def test_a_cell_contended_without_a_clean_iteration_is_listed_apart(tmp_path):
    """The measuring side's contract: ``status`` contended, no values, ``contended`` true. The
    run section counts and lists it apart (not failed, not "ringed"), the table marks its row."""
    t = figure_data.Tables.load(FIX / "cells.csv", FIX / "skipped.csv", FIX / "degradation.csv")
    cells = t.cells.assign(contended=False)
    hit = (cells["placement"] == "interleave") & (cells["threads"] == 2) & (cells["opt"] == "none")
    hit &= cells["batch_size"] == 8
    cells.loc[hit, ["status", "contended", "contended_reason"]] = [
        "contended",
        True,
        "other tasks used 40 % of the cell's CPUs",
    ]
    cells.loc[hit, ["latency_median_ms", "throughput_ips"]] = np.nan
    html = report_html.render(
        [f.as_dict() for f in figures.figures(cells[list(grid.KEYS)].to_dict("records"))],
        cells,
        t.skipped,
        t.degradation,
        MACHINE,
        page_dir=str(tmp_path),
        figure_dir=str(tmp_path / "figures"),
        placements=["sequential", "interleave", "remote"],
    )
    run = html[html.index('<h2 id="run">') : html.index('<h2 id="cells">')]
    failed = int((t.cells["status"] != "ok").sum())
    assert f"<th>cells failed</th><td>{failed}</td>" in run
    assert "<th>cells contended, no clean iteration</th><td>1</td>" in run
    listed = run[run.index('id="contended"') :]
    assert "<code>resnet50/none/interleave/2/8</code>: other tasks used 40 %" in listed
    assert 'id="disturbed"' not in run  # a cell with no value is not ringed anywhere
    assert '<tr class="contended">' in html


def test_the_screenshot_tool_explains_itself_and_names_a_missing_report(tmp_path):
    """tools/report-screenshot (docs/development.md): --help prints its usage; a folder without
    a report is one line, before any Chromium is installed or started."""
    import subprocess

    tool = Path(__file__).parents[1] / "tools" / "report-screenshot"
    usage = subprocess.run([tool, "--help"], capture_output=True, text=True, check=True).stdout
    assert "tools/report-screenshot [RESULTS] [OUT]" in usage
    proc = subprocess.run([tool, str(tmp_path)], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr == f"error: no report at {tmp_path}/report/index.html\n"
