"""The allocator axis and the Precision and runtime section in the report, drawn from the
fixture tables (no torch, no snakemake): a grid with one allocator draws exactly what it drew
before the axis existed; several allocators are told apart by line style in the per-batch
figures; the section shows each (opt, allocator) against float32 eager with glibc with its CI
(tables/precision.csv) and marks a dtype the CPU does not compute natively."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from numa_effects.report import baselines, empty, families, figures, plots, style
from numa_effects.report import data as figure_data
from numa_effects.report import page as report_html
from numa_effects.report.metrics import LATENCY
from numa_effects.tables import degradation, precision

FIX = Path(__file__).parent / "fixtures" / "tables"
NOTE = "int8 no_vnni: no VNNI or AMX, int8 dot products take 2-3 instructions"


@pytest.fixture(scope="module")
def fixture():
    return figure_data.Tables.load(FIX / "cells.csv", FIX / "skipped.csv", FIX / "degradation.csv")


def png(fig, path: Path) -> bytes:
    plots.save(fig, str(path))
    return path.read_bytes()


@pytest.mark.parametrize(
    "family", [f.name for f in families.FAMILIES if f.plan in ("sequential", "comparison")]
)
def test_one_allocator_draws_the_same_bytes_as_a_table_without_the_axis(fixture, tmp_path, family):
    """PackRat's families are unchanged for a default-only grid: the fixture (no allocator
    column, as before the axis) and the same cells with ``allocator`` default give identical
    PNGs."""
    raw = pd.read_csv(FIX / "cells.csv")
    assert "allocator" not in raw.columns
    explicit = figure_data.Tables(
        fixture.cells.assign(allocator="default"),
        fixture.skipped.assign(allocator="default"),
        fixture.degradation.assign(allocator="default"),
    )
    keys = fixture.cells[["model", "opt", "placement", "threads", "batch_size"]]
    fig = next(f for f in figures.figures(keys.to_dict("records")) if f.family == family)
    a = png(plots.draw(family, fixture, fig.wildcards), tmp_path / "a.png")
    b = png(plots.draw(family, explicit, fig.wildcards), tmp_path / "b.png")
    assert a == b


@pytest.fixture(scope="module")
def grid_run(fixture):
    """The fixture's cells measured with glibc and with jemalloc (10 % faster), plus int8
    cells (twice as fast, non-native: no VNNI); its comparison tables computed as the
    pipeline does."""
    # two replicates per cell: the two-level CI of the ratio (no samples needed)
    c = fixture.cells.assign(
        allocator="default", dtype="float32", native=True, ci_method="two-level", ci_df=3.0
    )
    je = c.assign(allocator="jemalloc")
    for col in ("latency_median_ms", "latency_ci_low_ms", "latency_ci_high_ms"):
        je[col] = je[col] * 0.9
    i8 = c[c["opt"] == "none"].assign(opt="int8", dtype="int8", native=False, precision_note=NOTE)
    for col in ("latency_median_ms", "latency_ci_low_ms", "latency_ci_high_ms"):
        i8[col] = i8[col] * 0.5
    cells = pd.concat([c, je, i8], ignore_index=True)
    bs = cells["batch_size"].astype(float)
    cells["throughput_ips"] = bs * 1000.0 / cells["latency_median_ms"]
    skipped = fixture.skipped.assign(allocator="default")
    t = figure_data.Tables(
        cells,
        skipped,
        degradation.degradation_table(cells),
        precision=precision.precision_table(cells),
    )
    return t


def test_precision_csv_compares_every_opt_and_allocator_with_float32_eager_on_glibc(grid_run):
    p = grid_run.precision
    assert set(zip(p["opt"], p["allocator"], strict=True)) == {
        ("script", "default"),
        ("none", "jemalloc"),
        ("script", "jemalloc"),
        ("int8", "default"),
    }
    assert (p["baseline"] == "none/default").all()
    je = p[(p["opt"] == "none") & (p["allocator"] == "jemalloc") & p["speedup"].notna()]
    assert np.allclose(je["speedup"], 1 / 0.9)
    assert (je["speedup_ci_low"] <= je["speedup"]).all() and (je["ci_method"] == "two-level").all()
    i8 = p[p["opt"] == "int8"]
    assert np.allclose(i8["speedup"].dropna(), 2.0) and (i8["native"] == False).all()  # noqa: E712
    assert (i8["precision_note"] == NOTE).all() and (i8["dtype"] == "int8").all()
    # the failed script/interleave/t4/bs8 cell has no row: never a speedup
    assert p[(p["opt"] == "script") & (p["placement"] == "interleave") & (p["threads"] == 4)
             & (p["batch_size"] == 8)].empty  # fmt: skip


def test_per_batch_lines_are_opt_and_allocator_and_non_native_is_marked(grid_run):
    fig = plots.draw("latency_per_batch", grid_run, {"model": "resnet50", "batch_size": 8})
    lines = {ln.get_label(): ln for ln in fig.axes[0].get_lines() if ln.get_label()[0] != "_"}
    assert "none (eager) · glibc" in lines and "none (eager) · jemalloc" in lines
    assert lines["none (eager) · glibc"].get_color() == lines["none (eager) · jemalloc"].get_color()
    assert (
        lines["none (eager) · glibc"].get_linestyle()
        != lines["none (eager) · jemalloc"].get_linestyle()
    )
    assert f"int8 (PT2E, compiled) · glibc · {style.NON_NATIVE}" in lines
    notes = " ".join(t.get_text() for t in fig.axes[0].texts)
    assert f"{style.NON_NATIVE} int8: {NOTE}" in notes


def test_the_other_families_show_glibcs_cells_only(grid_run):
    u = grid_run.universe("resnet50")
    assert set(u["allocator"]) == {"default"}
    every = grid_run.universe("resnet50", every_allocator=True)
    assert len(every) == len(u) + len(u[u["opt"] != "int8"])  # jemalloc: none and script


def test_the_precision_speedup_figure_has_cis_and_a_line_at_one(grid_run):
    fig = plots.draw("precision_speedup", grid_run, {"model": "resnet50", "batch_size": 8})
    ax = fig.axes[0]
    labels = {ln.get_label() for ln in ax.get_lines() if ln.get_label()[0] != "_"}
    assert labels == {
        "none (eager) · jemalloc",
        "script (TorchScript) · glibc",
        "script (TorchScript) · jemalloc",
        f"int8 (PT2E, compiled) · glibc · {style.NON_NATIVE}",
    }
    assert any(ln.get_ydata()[0] == 1.0 for ln in ax.get_lines() if len(ln.get_ydata()) == 2)
    assert "Speedup over float32 eager" in ax.get_ylabel()
    assert ax.collections  # error bars


def test_numa_loss_per_dtype_draws_one_line_per_opt_with_its_dtype(grid_run):
    fig = plots.draw(
        "precision_numa_loss",
        grid_run,
        {"model": "resnet50", "placement": "interleave", "batch_size": 8},
    )
    labels = [ln.get_label() for ln in fig.axes[0].get_lines() if ln.get_label()[0] != "_"]
    assert "none (eager) [float32]" in labels
    assert f"int8 (PT2E, compiled) [int8] · {style.NON_NATIVE}" in labels


def test_the_page_has_the_section_its_figures_and_the_precision_table(grid_run, tmp_path):
    keys = grid_run.cells[["model", "opt", "placement", "threads", "batch_size", "allocator"]]
    figs = figures.figures(keys.to_dict("records"))
    fams = {f.family for f in figs}
    assert {"precision_speedup", "precision_numa_loss"} <= fams
    html = report_html.render(
        [f.as_dict() for f in figs],
        grid_run.cells,
        grid_run.skipped,
        grid_run.degradation,
        {},
        page_dir=str(tmp_path),
        figure_dir=str(tmp_path / "figures"),
        placements=["sequential", "interleave", "remote"],
        precision=grid_run.precision,
    )
    section = html.split('id="precision-runtime"')[1].split('id="packing"')[0]
    assert "precision_speedup/bs8.png" in section
    assert "precision table (tables/precision.csv)" in section
    assert NOTE in section  # the precision table carries the mark
    # the cells table names the dtype and the mark of each cell
    cells = html.split('id="cells"')[1]
    assert "<th>dtype</th>" in cells and "<th>native</th>" in cells


def test_a_section_without_figures_says_why(fixture):
    """PackRat's grid: nothing beyond float32 eager and TorchScript on glibc; a grid whose bf16
    cells were all skipped (bf16: auto on a CPU without native bf16) says so, with the reason."""
    sec = families.SECTIONS["precision"]
    facts = empty.PageFacts(fixture.cells, fixture.skipped, ["sequential"], False)
    assert "only float32 eager and TorchScript" in sec.empty(facts)
    why = "bf16 aten_fallback: oneDNN refuses bf16 here; skipped under bf16: auto"
    skipped = pd.DataFrame(
        [{"model": "resnet50", "opt": "bf16", "placement": "sequential", "threads": 1,
          "batch_size": 1, "allocator": "default", "reason": why}]
    )  # fmt: skip
    facts = empty.PageFacts(fixture.cells, skipped, ["sequential"], False)
    assert sec.empty(facts).endswith(f"was skipped: {why}.")


def test_without_glibc_as_it_comes_the_grids_first_allocator_is_the_baseline(fixture, tmp_path):
    """The default grid measures glibc tuned only (config/config.yaml): its bf16 cells are
    compared with float32 eager on glibc tuned (precision.csv's ``baseline``), the section
    plans its figures and the figure says which allocator it divides by; a grid of eager and
    TorchScript on that one allocator is PackRat's question, with no section, and a skipped
    bf16 cell on it is reported as the reason."""
    tuned = fixture.cells.assign(
        allocator="glibc_tuned", dtype="float32", native=True, ci_method="two-level", ci_df=3.0
    )
    bf16 = tuned[tuned["opt"] == "none"].assign(opt="bf16", dtype="bfloat16")
    for col in ("latency_median_ms", "latency_ci_low_ms", "latency_ci_high_ms"):
        bf16[col] = bf16[col] * 0.25
    cells = pd.concat([tuned, bf16], ignore_index=True)
    p = precision.precision_table(cells)
    assert precision.baseline(cells) == ("none", "glibc_tuned")
    assert (p["baseline"] == "none/glibc_tuned").all()
    assert set(zip(p["opt"], p["allocator"], strict=True)) == {
        ("script", "glibc_tuned"),
        ("bf16", "glibc_tuned"),
    }
    assert np.allclose(p.loc[p["opt"] == "bf16", "speedup"].dropna(), 4.0)
    # the same cells with glibc as it comes beside them: that is the baseline again
    both = pd.concat([cells, tuned.assign(allocator="default")], ignore_index=True)
    assert (precision.precision_table(both)["baseline"] == "none/default").all()

    keys = cells[["model", "opt", "placement", "threads", "batch_size", "allocator"]]
    fams = {f.family for f in figures.figures(keys.to_dict("records"))}
    assert "precision_speedup" in fams
    t = figure_data.Tables(
        cells, fixture.skipped.assign(allocator="glibc_tuned"), None, precision=p
    )
    fig = plots.draw("precision_speedup", t, {"model": "resnet50", "batch_size": 8})
    labels = {ln.get_label() for ln in fig.axes[0].get_lines() if ln.get_label()[0] != "_"}
    assert labels == {"script (TorchScript) · glibc, tuned", "bf16 (compiled) · glibc, tuned"}
    assert "float32 eager, glibc, tuned" in fig.axes[0].get_ylabel()

    packrat_question = keys[keys["opt"] != "bf16"].to_dict("records")
    assert not baselines.beyond_packrat(packrat_question)
    assert "precision_speedup" not in {f.family for f in figures.figures(packrat_question)}
    sec = families.SECTIONS["precision"]
    why = "bf16 aten_fallback: oneDNN refuses bf16 here; skipped under bf16: auto"
    skipped = pd.DataFrame(
        [{"model": "resnet50", "opt": "bf16", "placement": "sequential", "threads": 1,
          "batch_size": 1, "allocator": "glibc_tuned", "reason": why}]
    )  # fmt: skip
    facts = empty.PageFacts(tuned, skipped, ["sequential"], False)
    assert sec.empty(facts) == (
        f"every cell beyond float32 eager and TorchScript with glibc, tuned was skipped: {why}."
    )


def test_an_opt_measured_only_sequential_has_no_comparison_rows(grid_run):
    # no degradation row: an empty selection of rows, not of columns (which raised KeyError)
    c = grid_run.cells
    seq = c[(c["opt"] == "none") & (c["placement"] == "sequential")]
    cells = pd.concat([c, seq.assign(opt="channels_last")], ignore_index=True)
    t = figure_data.Tables(cells, grid_run.skipped, degradation.degradation_table(cells))
    d = figure_data.comparison(t, "resnet50", "channels_last", LATENCY)
    assert d.empty and "pct" in d.columns
