"""The report page (numa_effects.report.page) on the fixture tables, without snakemake: the
cells whose timing was disturbed are listed, an emulated machine gets a banner, the header
links only the sections with content ("What to deploy" first) and the page escapes text."""

import json
import re
from html import escape as html_escape
from pathlib import Path

import numpy as np
import pytest

from numa_effects.plan import grid
from numa_effects.report import data as figure_data
from numa_effects.report import families, figures, markup
from numa_effects.report import page as report_html

FIX = Path(__file__).parent / "fixtures" / "tables"
DEPLOY = Path(__file__).parent / "fixtures" / "deploy"
MACHINE = json.loads((FIX / "machine.json").read_text())


def page(cells_csv: str, machine: dict, tmp_path, **kw) -> str:
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
        **kw,
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


@pytest.mark.parametrize("reason", ["no KVM: QEMU TCG", "no KVM: QEMU TCG.", None])
def test_an_emulated_machine_gets_a_banner_above_the_figures(tmp_path, reason):
    machine = {**MACHINE, "emulated": True, "emulated_reason": reason}
    html = page("cells.csv", machine, tmp_path)
    banner = html.index('class="emulated"')
    assert banner < html.index('id="latency-sequential"')
    text = html[banner : html.index("</p>", banner)]
    assert "mean nothing as performance" in text
    assert (reason in text) if reason else text.endswith("real).")
    assert text.endswith(".") and not text.endswith("..")  # a reason's own full stop is not doubled
    assert 'class="emulated"' not in page("cells.csv", MACHINE, tmp_path)


def _nav(html: str) -> list[str]:
    """The anchors the header's navigation links to, in order."""
    return re.findall(r'href="#([^"]+)"', html[html.index("<nav>") : html.index("</nav>")])


def test_sections_and_navigation_follow_the_registry(tmp_path):
    html = page("cells.csv", MACHINE, tmp_path)
    sections = families.page_sections()
    anchors = [s.anchor for s in sections.values()]
    assert "comparison" not in anchors  # the comparison page's (compare.page)
    pos = [html.index(f'<h2 id="{a}">') for a in anchors]
    assert pos == sorted(pos)  # every section, in registry order, with figures or without
    # the navigation: the sections the planner gives figures, in registry order
    t = figure_data.Tables.load(FIX / "cells.csv", FIX / "skipped.csv")
    drawn = {f.spec.section for f in figures.figures(t.cells[list(grid.KEYS)].to_dict("records"))}
    with_figures = [s.anchor for key, s in sections.items() if key in drawn]
    assert _nav(html) == [*with_figures, "machine", "run", "cells"]
    for fam in families.page_families():
        # packing: planned from the config key packing (packing.smk); precision: PackRat's
        # grid (these cells) has nothing beyond float32 eager and TorchScript with glibc;
        # node_pairs: these cells have no node-pair placement (tests/test_node_pair_report.py)
        if fam.section not in ("packing", "precision", "node_pairs"):
            assert markup.caption_html(fam.caption) in html


def test_the_header_points_first_to_the_answer_never_to_an_empty_section(tmp_path):
    """Sequential cells only (as on a one-node host): the NUMA section has no figure, so the
    header neither jumps nor links to it; with an answer, "What to deploy" comes first."""
    t = figure_data.Tables.load(FIX / "cells.csv", FIX / "skipped.csv", FIX / "degradation.csv")
    cells = t.cells[t.cells["placement"] == "sequential"]
    figs = figures.figures(cells[list(grid.KEYS)].to_dict("records"))
    numa = families.SECTIONS["numa"]
    assert figs and not [f for f in figs if f.spec.section == "numa"]

    def render(**kw):
        return report_html.render(
            [f.as_dict() for f in figs],
            cells,
            t.skipped,
            t.degradation,
            MACHINE,
            page_dir=str(tmp_path),
            figure_dir=str(tmp_path / "figures"),
            placements=["sequential"],
            **kw,
        )

    html = render()
    header = html[html.index("<header>") : html.index("</header>")]
    assert "Jump to" not in header and numa.anchor not in _nav(html)
    assert f'<h2 id="{numa.anchor}">' in html  # the section stays, saying why it is empty
    rec = figure_data.read_csv(DEPLOY / "recommendation.csv")
    html = render(recommendation=rec)
    assert _nav(html)[0] == "what-to-deploy" and numa.anchor not in _nav(html)
    assert 'href="#what-to-deploy">Jump to What to deploy</a>' in html
    # no answer: the section says why, and the header does not point to it
    html = render(recommendation=rec.iloc[:0])
    assert '<h2 id="what-to-deploy">' in html and "what-to-deploy" not in _nav(html)


def test_the_deploy_section_has_one_table_per_objective(tmp_path):
    """tests/fixtures/deploy/recommendation.csv: per (model, objective) its rows, the
    recommended one marked, each with its command."""
    rec = figure_data.read_csv(DEPLOY / "recommendation.csv")
    html = page("cells.csv", MACHINE, tmp_path, recommendation=rec)
    section = html[html.index('<h2 id="what-to-deploy">') : html.index('<h2 id="latency-')]
    objectives = rec.drop_duplicates(["model", "objective"])
    assert section.count("<table") == len(objectives)
    for r in objectives.itertuples():
        assert f"<h3>{r.model}: {r.objective} ({r.unit})</h3>" in section
    assert section.count('<tr class="rec">') == (rec["role"] == "recommended").sum()
    assert section.count("<b>recommended</b>") == (rec["role"] == "recommended").sum()
    for command in rec["command"]:
        assert f"<code>{html_escape(command)}</code>" in section


def test_the_deploy_sections_factor_rows_name_their_cause(tmp_path):
    """recommendation-xeon.csv: the newcomer Xeon run's plan and job judged by tables.deploy
    (../shared/measurements/newcomer-2core-xeon-2026-12-07). Its plan predates the allocator
    factor, so that row is "not measured"; no number is in scientific notation."""
    rec = figure_data.read_csv(DEPLOY / "recommendation-xeon.csv")
    html = page("cells.csv", MACHINE, tmp_path, recommendation=rec)
    section = html[html.index('<h2 id="what-to-deploy">') : html.index('<h2 id="latency-')]
    factors = rec[rec["role"] == "factor"]
    for f in factors.itertuples():
        name = f"layout vs {f.baseline}" if f.factor == "layout" else f.factor
        assert f"factor: {name}</td>" in section
    unmeasured = factors["value"].isna().sum()
    assert unmeasured and section.count('<td class="t">not measured</td>') == unmeasured
    assert not re.search(r"\d\.\d+e[+-]\d", section)
    assert "1208 [" in section  # the all-cores baseline at batch 16: 1208 ms, not 1.21e+03


def test_text_from_the_tables_is_escaped(tmp_path):
    """Autoescaping: a machine's text with markup in it is shown, never interpreted."""
    reason = 'QEMU <script>alert("x")</script> & TCG'
    html = page("cells.csv", {**MACHINE, "emulated": True, "emulated_reason": reason}, tmp_path)
    assert "<script>" not in html
    assert "QEMU &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; TCG" in html


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
