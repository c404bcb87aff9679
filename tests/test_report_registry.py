"""The figure-family registry is the one place a family is defined: adding one is a registry
entry + a ``@drawer`` function (+ its test). A throwaway family proves it: it is planned from the
cells, drawn through ``plots.draw``, laid out on the page under its section with its caption, and
the workflow's plot rules are exactly the registry's families (no hand-written rule per family).
A throwaway section proves that a section is one entry too."""

import dataclasses
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import REPO, snakemake

from numa_effects.plan import grid
from numa_effects.report import (
    baselines,
    drawers,
    empty,
    families,
    figures,
    markup,
    metrics,
    plots,
    sequential_plots,
)
from numa_effects.report import data as figure_data
from numa_effects.report import page as report_html

FIX = Path(__file__).parent / "fixtures" / "tables"


@pytest.fixture(scope="module")
def tables():
    return figure_data.Tables.load(FIX / "cells.csv", FIX / "skipped.csv", FIX / "degradation.csv")


def max_latency(tables, *, model, opt, metric):
    """The throwaway family's draw function: worst latency per thread count (sequential)."""
    u = figure_data.sequential(tables.universe(model))
    d = u[u["opt"] == opt].groupby("threads")[metric.key].max()
    fig, ax = plots.plt.subplots()
    ax.plot(d.index, d.to_numpy(), marker="o")
    ax.set_title(f"Worst latency (opt={opt})")
    return fig


@pytest.fixture
def throwaway(monkeypatch):
    fam = families.Family(
        name="max_latency",
        section="latency",
        title="Worst latency",
        pattern="{model}/max_latency/{opt}",
        metric=metrics.LATENCY,
        plan="sequential",
        caption="One figure per optimization: the worst latency of any batch size, ``sequential``.",
    )
    monkeypatch.setattr(families, "FAMILIES", (*families.FAMILIES, fam))
    monkeypatch.setattr(families, "BY_NAME", {**families.BY_NAME, fam.name: fam})
    monkeypatch.setattr(drawers, "DRAWERS", dict(drawers.DRAWERS))
    drawers.drawer(fam.name)(max_latency)
    return fam


def test_a_new_family_is_one_registry_entry_and_one_draw_function(tables, throwaway, tmp_path):
    keys = tables.cells[list(grid.KEYS)].to_dict("records")
    mine = [f for f in figures.figures(keys) if f.family == throwaway.name]
    opts = sorted({k["opt"] for k in keys if baselines.is_sequential(k["placement"])})
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


def test_every_family_has_exactly_one_draw_function_taking_its_wildcards():
    import inspect

    assert set(drawers.DRAWERS) == set(families.BY_NAME)  # plots (and packing_plots) register
    for fam in families.FAMILIES:
        params = inspect.signature(drawers.DRAWERS[fam.name]).parameters
        assert {*fam.wildcards, "metric"} <= set(params), fam.name
        assert fam.metric in metrics.METRICS and fam.plan in figures.PLANS
        assert set(fam.wildcards) <= {f.name for f in dataclasses.fields(figures.Figure)}
    with pytest.raises(ValueError, match="two draw functions"):
        drawers.drawer("speedup")(max_latency)  # a second one is refused
    assert drawers.DRAWERS["speedup"] is sequential_plots.speedup


def test_families_name_their_metric_and_sections_say_why_they_are_empty():
    """``Metric`` records replace the metric strings; every section has its empty text."""
    assert {f.metric.name for f in families.FAMILIES if "throughput" in f.name} == {"throughput"}
    assert {f.metric.name for f in families.FAMILIES if "latency" in f.name} == {"latency"}
    lat, thr = metrics.LATENCY, metrics.THROUGHPUT
    assert lat.column("median") == "latency_median_ms" and thr.column("mean") == "throughput_ips"
    assert lat.ci_columns("mean") is None and lat.ci_columns("median") == lat.ci
    assert lat.degradation("remote", "sequential", "median") == (
        "(remote − sequential) / sequential × 100 of the median latency"
    )
    assert thr.degradation("n0m1", "n0m0", "median").startswith("(n0m0 − n0m1) / n0m0")
    assert thr.degradation_columns["throughput_degradation_ci_low_pct"] == "pct_lo"
    facts = empty.PageFacts(
        pd.DataFrame(), pd.DataFrame(), ["sequential", "interleave"], imported=False
    )
    for sec in families.SECTIONS.values():
        assert sec.empty(facts)


def test_caption_html_renders_code_and_emphasis():
    html = markup.caption_html("a ``b < c`` and *d*, x * y")
    assert html == "a <code>b &lt; c</code> and <em>d</em>, x * y"


@pytest.mark.integration
def test_the_workflow_has_one_plot_rule_per_registry_family_with_figures(tmp_path):
    """One rule per family that has figures in the run (one job draws all of them), generated
    from the registry; a family without figures here (the NUMA ones on one node) has none."""
    from numa_effects import config as config_mod
    from numa_effects.plan import build, cost, host

    out = snakemake(
        tmp_path, None, "--configfile", str(REPO / "config/config.yaml"), "--list-rules"
    )
    rules = set(out.stdout.split())
    plot_rules = {r for r in rules if r.startswith("plot_")}
    cfg = yaml.safe_load((REPO / "config/config.yaml").read_text())
    # planned as common.smk plans it: what this machine offers decides the cells (bf16: auto
    # skips bf16 where it is not native), so the same families as the workflow's
    here = host.current(cfg.get("allocators") or ())
    topo = config_mod.check(cfg).topology
    plan = build.build(cfg, topo, host=here)
    # and narrowed to what the budget keeps, as common.smk does (it may drop packing)
    fitted, _ = cost.fit(cfg, topo, plan, caps=here.capabilities if here else None)
    plan = plan.narrowed({**cfg, **fitted})
    drawn = {f.family for f in figures.figures(plan.figure_keys(), packed=plan.packed())}
    # the load test's figure is the deploy answer's own rule (deploy.smk), not a family's
    own = {"plot_loadtest"} if plan.deploy["loadtest"] else set()
    assert plot_rules == {f"plot_{name}" for name in drawn} | own and plot_rules
    smk = (REPO / "workflow/rules/report.smk").read_text()
    assert not re.search(r"^rule plot_", smk, re.M)  # generated in a loop, not copied
    assert dataclasses.is_dataclass(families.Family)


def test_package_docstring_lists_every_module():
    """Every module of every layer, as ``layer.module`` (top-level ones by name, a sub-package's
    as ``layer.package.module``), and nothing that no longer exists."""
    import numa_effects

    pkg = Path(numa_effects.__file__).parent
    modules = {
        ".".join(p.relative_to(pkg).with_suffix("").parts)
        for p in pkg.rglob("*.py")
        if p.stem not in ("__init__", "__main__") and "__pycache__" not in p.parts
    }
    # a layer's sub-package (its __init__ is a module of its own: measure.workloads' registry)
    modules |= {".".join(p.parent.relative_to(pkg).parts) for p in pkg.glob("*/*/__init__.py")}
    listed = set(re.findall(r"``([a-z_]+(?:\.[a-z_]+)*)``", numa_effects.__doc__))
    assert modules <= listed, sorted(modules - listed)
    layers = {p.name for p in pkg.iterdir() if (p / "__init__.py").is_file()}
    dotted = {name for name in listed if name.split(".")[0] in layers and "." in name}
    assert dotted <= modules, sorted(dotted - modules)


def test_only_drawing_loads_matplotlib():
    """The page and the planner load the tables without matplotlib; plots does."""
    import subprocess
    import sys

    probe = (
        "import sys; from numa_effects.report import data, families, figures, page, style; "
        "print('matplotlib' in sys.modules); from numa_effects.report import plots; "
        "print('matplotlib' in sys.modules)"
    )
    env = {"PYTHONPATH": str(REPO / "workflow" / "scripts")}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env)
    assert out.stdout.split() == ["False", "True"], out.stderr


def test_docs_table_of_families_is_the_registry():
    """docs/report.md lists the families in page order under their section headings."""
    doc = (REPO / "docs" / "report.md").read_text()
    rows = re.findall(r"^\|([^|]*)\| `(\w+)`(?:<br>[^|]*)? \|", doc, re.M)  # a thumbnail after
    assert [name for _, name in rows] == [f.name for f in families.FAMILIES]
    for section, name in rows:
        if section.strip():
            assert section.strip() == families.SECTIONS[families.BY_NAME[name].section].heading


def test_a_new_section_is_one_registry_entry(tables, throwaway, monkeypatch, tmp_path):
    """A section is its ``Section`` entry: heading, anchor, navigation and what the page says
    when it has no figure; ``page.render`` has no case of its own for any section."""
    extra = families.Section(
        heading="Worst case",
        anchor="worst-case",
        empty=lambda facts: f"no worst case among {len(facts.placements)} placements.",
    )
    monkeypatch.setattr(families, "SECTIONS", {**families.SECTIONS, "worst": extra})
    fam = dataclasses.replace(throwaway, section="worst")
    monkeypatch.setattr(families, "FAMILIES", (*families.FAMILIES[:-1], fam))
    monkeypatch.setattr(families, "BY_NAME", {**families.BY_NAME, fam.name: fam})
    keys = tables.cells[list(grid.KEYS)].to_dict("records")

    def page(figs):
        return report_html.render(
            [g.as_dict() for g in figs],
            tables.cells,
            tables.skipped,
            tables.degradation,
            {},
            page_dir=str(tmp_path),
            figure_dir=str(tmp_path / "figures"),
            placements=["sequential", "interleave", "remote"],
        )

    html = page(figures.figures(keys))
    nav = html[html.index("<nav>") : html.index("</nav>")]
    assert '<a href="#worst-case">Worst case</a>' in nav
    worst = html.split('<h2 id="worst-case">Worst case</h2>')[1].split("<h2")[0]
    assert 'id="resnet50-max_latency"' in worst and "/max_latency/" in worst
    html = page([f for f in figures.figures(keys) if f.family != fam.name])
    worst = html.split('<h2 id="worst-case">Worst case</h2>')[1].split("<h2")[0]
    assert "No figures: no worst case among 3 placements." in worst
