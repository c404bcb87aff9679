"""The figure-family registry is the one place a family is defined: adding one is a registry
entry + a draw function (+ its test). A throwaway family proves it: it is planned from the cells,
drawn through ``plots.draw``, laid out on the page under its section with its caption, and the
workflow's plot rules are exactly the registry's families (no hand-written rule per family)."""

import dataclasses
import re
from pathlib import Path

import pytest
from conftest import REPO, snakemake

from numa_effects.plan import grid
from numa_effects.report import data as figure_data
from numa_effects.report import page as report_html
from numa_effects.report import plots
from numa_effects.report import registry as figures

FIX = Path(__file__).parent / "fixtures" / "tables"


@pytest.fixture(scope="module")
def tables():
    return figure_data.Tables.load(FIX / "cells.csv", FIX / "skipped.csv", FIX / "degradation.csv")


def max_latency(tables, *, model, opt, metric):
    """The throwaway family's draw function: worst latency per thread count (sequential)."""
    u = figure_data.sequential(tables.universe(model))
    d = u[u["opt"] == opt].groupby("threads")[metric].max()
    fig, ax = plots.plt.subplots()
    ax.plot(d.index, d.to_numpy(), marker="o")
    ax.set_title(f"Worst latency (opt={opt})")
    return fig


@pytest.fixture
def throwaway(monkeypatch):
    fam = figures.Family(
        "max_latency",
        "latency",
        "Worst latency",
        "{model}/max_latency/{opt}",
        "plots.max_latency",
        "lat",
        "sequential",
        "One figure per optimization: the worst latency of any batch size, ``sequential``.",
    )
    monkeypatch.setattr(plots, "max_latency", max_latency, raising=False)
    monkeypatch.setattr(figures, "FAMILIES", (*figures.FAMILIES, fam))
    monkeypatch.setattr(figures, "BY_NAME", {**figures.BY_NAME, fam.name: fam})
    return fam


def test_a_new_family_is_one_registry_entry_and_one_draw_function(tables, throwaway, tmp_path):
    keys = tables.cells[list(grid.KEYS)].to_dict("records")
    mine = [f for f in figures.figures(keys) if f.family == throwaway.name]
    opts = sorted({k["opt"] for k in keys if figures.is_baseline(k["placement"])})
    assert [f.opt for f in mine] == opts and throwaway.per == "model x opt"
    f = mine[0]
    assert f.path("r") == f"r/resnet50/max_latency/{f.opt}.png"
    png, svg = f.path(str(tmp_path)), f.path(str(tmp_path), "svg")
    plots.save(plots.draw(throwaway.name, tables, f.wildcards), png, svg)
    assert Path(png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = report_html.render(
        [g.as_dict() for g in figures.figures(keys)],
        tables.cells,
        tables.skipped,
        tables.degradation,
        {},
        page_dir=str(tmp_path),
        figure_dir=str(tmp_path / "figures"),
        placements=["sequential", "interleave", "remote"],
    )
    latency = page.split('id="latency-sequential"')[1].split('id="throughput-sequential"')[0]
    assert 'id="resnet50-max_latency"' in latency
    assert "the worst latency of any batch size, <code>sequential</code>." in latency
    assert latency.count("/max_latency/") == 2 * 2 * len(opts)  # href + src of PNG, SVG link


def test_draw_functions_take_their_family_wildcards():
    import importlib

    for fam in figures.FAMILIES:
        module, name = fam.draw.split(".")
        assert callable(getattr(importlib.import_module(f"numa_effects.report.{module}"), name)), (
            fam.name
        )
        assert fam.metric in ("lat", "thr") and fam.plan in figures.PLANS
        assert set(fam.wildcards) <= set(figures.WILDCARD_CONSTRAINTS)


def test_caption_html_renders_code_and_emphasis():
    html = report_html.caption_html("a ``b < c`` and *d*, x * y")
    assert html == "a <code>b &lt; c</code> and <em>d</em>, x * y"


@pytest.mark.integration
def test_the_workflow_has_one_plot_rule_per_registry_family(tmp_path):
    out = snakemake(
        tmp_path, None, "--configfile", str(REPO / "config/config.yaml"), "--list-rules"
    )
    rules = set(out.stdout.split())
    plot_rules = {r for r in rules if r.startswith("plot_")}
    assert plot_rules == {f"plot_{f.name}" for f in figures.FAMILIES}
    smk = (REPO / "workflow/rules/report.smk").read_text()
    assert not re.search(r"^rule plot_", smk, re.M)  # generated in a loop, not copied
    assert dataclasses.is_dataclass(figures.Family)


def test_package_docstring_lists_every_module():
    import numa_effects

    pkg = Path(numa_effects.__file__).parent
    modules = {p.stem for p in pkg.glob("*.py")} - {"__init__"}
    listed = set(re.findall(r"^- ``(\w+)``", numa_effects.__doc__, re.M))
    assert modules <= listed, sorted(modules - listed)


def test_only_drawing_loads_matplotlib():
    """The page and the planner load the tables without matplotlib (issue 12); plots does."""
    import subprocess
    import sys

    probe = (
        "import sys; from numa_effects.report import data, page, registry, style; "
        "print('matplotlib' in sys.modules); from numa_effects.report import plots; "
        "print('matplotlib' in sys.modules)"
    )
    env = {"PYTHONPATH": str(REPO / "workflow" / "scripts")}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env)
    assert out.stdout.split() == ["False", "True"], out.stderr


def test_docs_table_of_families_is_the_registry():
    """docs/report.md lists the families in page order under their section headings."""
    doc = (REPO / "docs" / "report.md").read_text()
    rows = re.findall(r"^\|([^|]*)\| `(\w+)` \|", doc, re.M)
    assert [name for _, name in rows] == [f.name for f in figures.FAMILIES]
    for section, name in rows:
        if section.strip():
            assert section.strip() == figures.SECTIONS[figures.BY_NAME[name].section].heading
