"""Importing PackRat's published results (../shared/reference/packrat) as tidy tables, and the
report drawn from them (config `import: {packrat: [...]}`)."""

import csv
import importlib.util
import math
import os
import re
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO, planned, snakemake
from report_browser import install_chromium, load_page, page_links

from numa_effects.plan import grid
from numa_effects.report import figures
from numa_effects.tables import degradation, packrat

# The reference data (read-only, beside the repository); NUMA_EFFECTS_PACKRAT points elsewhere.
PACKRAT = Path(os.environ.get("NUMA_EFFECTS_PACKRAT", REPO.parent / "shared/reference/packrat"))
FOLDERS = ["cloudlab_large-batches", "skylake2x_large-batches", "skylake2x_local-vs-remote-mem"]
KEYS = list(grid.KEYS)

if not PACKRAT.is_dir():
    if os.environ.get("CI", "").lower() == "true":
        raise RuntimeError(f"PackRat reference data not found at {PACKRAT}")
    pytestmark = pytest.mark.skip(reason=f"PackRat reference data not found at {PACKRAT}")


def raw(folder: str, name: str) -> list[dict]:
    """The PackRat CSV rows as written, read without pandas or the importer."""
    with open(PACKRAT / folder / name, newline="") as fh:
        return list(csv.DictReader(fh))


def raw_cell(folder: str, benchmark: str, topology: str, threads: int, bs: int) -> tuple:
    """(latency(avg) ms, throughput images/s) of one PackRat cell."""

    def pick(rows):
        (row,) = [
            r
            for r in rows
            if r["benchmark"] == benchmark
            and r["topology"] == topology
            and int(r["intraop_threads"]) == threads
            and int(r["batch_size"]) == bs
        ]
        return row

    lat = pick(raw(folder, "resnet_latency.csv"))
    thr = pick(raw(folder, "resnet_throughput.csv"))
    return float(lat["latency(avg)"]), float(thr["throughput"])


# (folder, placement, threads, batch size) of cells checked against the raw CSV rows
HAND_CHECKED = [
    ("cloudlab_large-batches", "interleave", 16, 1024),
    ("cloudlab_large-batches", "interleave", 1, 1),
    ("cloudlab_large-batches", "interleave", 8, 64),
    ("skylake2x_large-batches", "interleave", 18, 512),
    ("skylake2x_large-batches", "interleave", 4, 1),
    ("skylake2x_local-vs-remote-mem", "remote", 17, 1),
    ("skylake2x_local-vs-remote-mem", "remote", 1, 64),
]


def benchmarks(placement: str) -> tuple[str, str, str]:
    """PackRat (compared benchmark, its topology, baseline benchmark) of a placement."""
    if placement == "remote":
        return "resnet_remote_script", "sequential", "resnet_local_script"
    return "resnet_manual_script", placement, "resnet_manual_script"


def expected_degradation(folder, placement, threads, bs) -> tuple[float, float]:
    bench, topo, base_bench = benchmarks(placement)
    lat_p, thr_p = raw_cell(folder, bench, topo, threads, bs)
    lat_s, thr_s = raw_cell(folder, base_bench, "sequential", threads, bs)
    return (lat_p - lat_s) / lat_s * 100, (thr_s - thr_p) / thr_s * 100


def check_degradation(deg: pd.DataFrame, case) -> None:
    folder, place, t, bs = case
    bench, topo, base_bench = benchmarks(place)
    lat_pct, thr_pct = expected_degradation(folder, place, t, bs)
    row = deg[
        (deg.model == "resnet50")
        & (deg.opt == "script")
        & (deg.placement == place)
        & (deg.threads == t)
        & (deg.batch_size == bs)
    ]
    assert len(row) == 1, case
    r = row.iloc[0]
    assert r.baseline == "sequential" and r.latency_statistic == "mean"
    lat_p, thr_p = raw_cell(folder, bench, topo, t, bs)
    lat_s, thr_s = raw_cell(folder, base_bench, "sequential", t, bs)
    assert r.latency_baseline_ms == pytest.approx(lat_s, rel=1e-12)
    assert r.latency_compared_ms == pytest.approx(lat_p, rel=1e-12)
    assert r.throughput_baseline_ips == pytest.approx(thr_s, rel=1e-9)
    assert r.throughput_compared_ips == pytest.approx(thr_p, rel=1e-9)
    assert r.latency_degradation_pct == pytest.approx(lat_pct, rel=1e-9, abs=1e-9)
    assert r.throughput_degradation_pct == pytest.approx(thr_pct, rel=1e-9, abs=1e-9)
    # no samples, no CI, no significance: never invented
    assert math.isnan(r.latency_degradation_ci_low_pct)
    assert pd.isna(r.significant)


# -- the importer ---------------------------------------------------------------------------


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_row_becomes_one_cell_with_the_documented_mapping(folder):
    cells = packrat.read(PACKRAT / folder)
    lat = raw(folder, "resnet_latency.csv")
    thr = raw(folder, "resnet_throughput.csv")
    assert len(cells) == len(lat) == len(thr)
    assert not cells.duplicated(KEYS).any()
    assert set(cells.model) == {"resnet50"}
    assert set(cells.status) == {"ok"}
    assert set(cells.source) == {"imported from PackRat"}
    for stat in ("median", "p10", "p90", "p99", "std", "iqr"):
        assert cells[f"latency_{stat}_ms"].isna().all(), stat  # not invented
    assert cells["n"].isna().all()
    by_key = cells.set_index(["packrat_benchmark", "packrat_topology", "threads", "batch_size"])
    for i, r in enumerate(lat):
        c = by_key.loc[
            (r["benchmark"], r["topology"], int(r["intraop_threads"]), int(r["batch_size"]))
        ]
        assert c.opt == r["benchmark"].rsplit("_", 1)[1]
        if "_remote_" in r["benchmark"]:
            assert c.placement == "remote"
        elif "_local_" in r["benchmark"]:
            assert c.placement == "sequential"
        else:
            assert c.placement == r["topology"]
        assert c.latency_min_ms == float(r["latency(min)"])
        assert c.latency_mean_ms == float(r["latency(avg)"])
        assert c.latency_max_ms == float(r["latency(max)"])
        flops = float(r["flops"])
        assert math.isnan(c.hw_gflop_per_s) if flops == 0 else c.hw_gflop_per_s == flops
        assert f"resnet_latency.csv:{i + 2}" in c.source_file
        assert str(PACKRAT / folder) in c.source_file
    for r in thr:
        c = by_key.loc[
            (r["benchmark"], r["topology"], int(r["intraop_threads"]), int(r["batch_size"]))
        ]
        assert c.throughput_ips == c.throughput_total_ips == float(r["throughput"])


def test_placements_per_folder():
    got = {
        f: packrat.read(PACKRAT / f).groupby(["opt", "placement"]).size().to_dict() for f in FOLDERS
    }
    none_seq, script_seq = ("none", "sequential"), ("script", "sequential")
    assert got == {
        "cloudlab_large-batches": {none_seq: 176, ("script", "interleave"): 176, script_seq: 176},
        "skylake2x_large-batches": {("script", "interleave"): 198, script_seq: 198},
        "skylake2x_local-vs-remote-mem": {("script", "remote"): 90, script_seq: 90},
    }


def test_packrats_allocator_is_the_axis_so_the_tcmalloc_twin_lines_up():
    """cloudlab_large-batches-tcmalloc is PackRat's TorchScript grid of cloudlab_large-batches
    with tcmalloc: imported together, each of its cells is the twin's cell with allocator
    tcmalloc (files without the column ran with glibc: default), and the precision table
    compares them with float32 eager on glibc."""
    from numa_effects.tables import precision

    twin = PACKRAT / "cloudlab_large-batches-tcmalloc"
    if not twin.is_dir():
        pytest.skip(f"{twin} not found")
    cells = packrat.cells_table([PACKRAT / "cloudlab_large-batches", twin])
    assert set(zip(cells["opt"], cells["allocator"], strict=True)) == {
        ("none", "default"), ("script", "default"), ("script", "tcmalloc")
    }  # fmt: skip
    tc = cells[cells["allocator"] == "tcmalloc"]
    glibc = cells[(cells["allocator"] == "default") & (cells["opt"] == "script")]
    on = ["placement", "threads", "batch_size"]
    assert len(tc.merge(glibc, on=on)) == len(tc)  # every tcmalloc cell has its glibc twin
    assert set(packrat.read(PACKRAT / "skylake2x_large-batches")["allocator"]) == {"default"}
    p = precision.precision_table(cells)
    assert set(zip(p["opt"], p["allocator"], strict=True)) == {
        ("script", "default"), ("script", "tcmalloc")
    }  # fmt: skip
    assert (p["speedup"] > 0).all() and (p["latency_statistic"] == "mean").all()


def test_benchmark_names():
    assert packrat.parse_benchmark("resnet_manual_none") == ("resnet50", "manual", "none")
    assert packrat.parse_benchmark("resnet_remote_script") == ("resnet50", "remote", "script")
    assert packrat.parse_benchmark("resnet_manual_channels_last")[2] == "channels_last"
    with pytest.raises(packrat.PackratError):
        packrat.parse_benchmark("resnet")
    assert packrat.placement("interleave", "manual") == "interleave"
    assert packrat.placement("sequential", "local") == "sequential"
    with pytest.raises(packrat.PackratError, match="topology"):
        packrat.placement("scatter", "manual")
    with pytest.raises(packrat.PackratError, match="remote"):
        packrat.placement("interleave", "remote")


def test_a_csv_path_names_its_folder_and_a_missing_file_is_an_error(tmp_path):
    f = PACKRAT / FOLDERS[2] / "resnet_throughput.csv"
    assert len(packrat.read(f)) == 180
    (tmp_path / "resnet_latency.csv").write_text(
        (PACKRAT / FOLDERS[2] / "resnet_latency.csv").read_text()
    )
    with pytest.raises(packrat.PackratError, match=r"resnet_throughput\.csv not found"):
        packrat.read(tmp_path)


def test_a_repeated_row_keeps_the_last_and_sources_must_not_overlap(tmp_path):
    for name in ("resnet_latency.csv", "resnet_throughput.csv"):
        lines = (PACKRAT / FOLDERS[2] / name).read_text().splitlines()
        again = lines[1].replace(",1,1,1,", ",1,1,1,").rsplit(",", 1)[0] + ",123.0"
        (tmp_path / name).write_text("\n".join([*lines, again]) + "\n")
    cells = packrat.read(tmp_path)
    assert len(cells) == 180
    first = cells[(cells.placement == "remote") & (cells.threads == 1) & (cells.batch_size == 1)]
    assert first.iloc[0].throughput_ips == 123.0
    with pytest.raises(packrat.PackratError, match="same cell in several sources"):
        packrat.cells_table([PACKRAT / FOLDERS[1], PACKRAT / FOLDERS[2]])


def test_cli_writes_the_tables_and_machine_and_names_a_source_it_cannot_read(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location(
        "import_packrat", REPO / "workflow" / "scripts" / "import_packrat.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = tmp_path / "res"
    assert mod.main([str(PACKRAT / FOLDERS[0]), "--results", str(out), "--machine", "c6420"]) == 0
    cells = pd.read_csv(out / "tables" / "cells.csv")
    assert len(cells) == 528
    assert pd.read_csv(out / "tables" / "samples.csv").empty
    assert pd.read_csv(out / "tables" / "skipped.csv").empty
    assert '"cpu_model": "c6420"' in (out / "machine.json").read_text()
    assert capsys.readouterr().err == f"imported 528 cells into {out}/tables/cells.csv\n"
    missing = tmp_path / "typo"
    assert mod.main([str(missing), "--results", str(out)]) == 2
    err = capsys.readouterr().err
    assert (
        err == f"error: PackRat import: {missing}/resnet_latency.csv, "
        f"{missing}/resnet_throughput.csv not found\n"
    )


@pytest.mark.parametrize("case", HAND_CHECKED, ids=lambda c: f"{c[0]}-{c[1]}-t{c[2]}-bs{c[3]}")
def test_degradation_of_imported_cells_by_hand(case):
    cells = packrat.read(PACKRAT / case[0])
    check_degradation(degradation.degradation_table(cells, None), case)


# -- the workflow: import, then the same report ---------------------------------------------


@pytest.fixture(scope="session")
def chromium():
    return install_chromium()


# The report is drawn for two folders: CloudLab's (both optimizations) and Skylake's local vs
# remote memory (its own placements). Skylake's large batches have CloudLab's figure families
# (72 figures against 76, one optimization fewer): its run stops at the tables, and its report
# is checked as planned (test_the_report_of_an_undrawn_folder_is_planned_from_its_keys).
# Drawing it too cost ~110 s of the suite on a 2-core machine (docs/development.md).
DRAWN = ["cloudlab_large-batches", "skylake2x_local-vs-remote-mem"]
UNDRAWN = [f for f in FOLDERS if f not in DRAWN]


@pytest.fixture(scope="module")
def imported(request, tmp_path_factory):
    """(folder, workdir, config) of one folder imported by the workflow: ``all`` for the
    folders in DRAWN, else up to the tables (cells, skipped, degradation)."""
    folder = request.param
    wd = tmp_path_factory.mktemp(f"import-{folder}")
    config = {
        "models": ["resnet50"],
        "batch_sizes": [1],
        "optimizations": ["none"],
        "threads": [1],
        "placements": ["sequential"],
        "import": {"packrat": [str(PACKRAT / folder)], "machine": f"PackRat {folder}"},
    }
    targets = ["all"] if folder in DRAWN else ["results/tables/degradation.csv"]
    snakemake(wd, config, "--cores", "2", *targets, timeout=3600)
    return folder, wd, config


@pytest.mark.integration
@pytest.mark.parametrize("imported", FOLDERS, indirect=True)
def test_import_builds_the_tables_without_measuring(imported):
    folder, wd, _ = imported
    res = wd / "results"
    assert not (res / "cells").exists()  # no cell ran
    cells = pd.read_csv(res / "tables" / "cells.csv")
    assert len(cells) == len(raw(folder, "resnet_latency.csv"))
    assert set(cells.source) == {"imported from PackRat"}


@pytest.mark.integration
@pytest.mark.parametrize("imported", UNDRAWN, indirect=True)
def test_the_report_of_an_undrawn_folder_is_planned_from_its_keys(imported):
    """What is left of ``all`` after the tables: one job per figure family the registry
    selects for the folder's keys, drawing exactly the registry's figures, then the page;
    nothing measured and nothing imported again."""
    folder, wd, config = imported
    want = figures.figures(packrat.keys([PACKRAT / folder]))
    jobs = planned(wd, config)
    assert {r for r in jobs if r.startswith("plot_")} == {f"plot_{f.spec.name}" for f in want}
    assert jobs["report_page"] == 1
    assert not {"cell", "peak", "memory", "import_packrat", "degradation"} & set(jobs), jobs
    dry = snakemake(wd, config, "-n", "all").stdout
    outputs = {
        o.strip() for line in re.findall(r"^\s*output: (.*)$", dry, re.M) for o in line.split(",")
    }
    pngs = {o for o in outputs if o.endswith(".png")}
    figures_dir = wd / "results" / "report" / "figures"
    assert pngs == {os.path.relpath(f.path(str(figures_dir)), wd) for f in want}


@pytest.mark.integration
@pytest.mark.parametrize("imported", DRAWN, indirect=True)
def test_import_builds_the_report_without_measuring(imported):
    """The report drawn from the import. Its tables are checked on every folder by
    test_import_builds_the_tables_without_measuring."""
    folder, wd, config = imported
    res = wd / "results"
    page = res / "report" / "index.html"
    want = figures.figures(packrat.keys([PACKRAT / folder]))
    assert {f.spec.section for f in want} == {"latency", "throughput", "numa"}
    folder_ = res / "report" / "figures"
    assert set(folder_.rglob("*.png")) == {Path(f.path(str(folder_))) for f in want}
    imgs = {(page.parent / s).resolve() for s in page_links(page).imgs}
    assert imgs == {Path(f.path(str(folder_))).resolve() for f in want}
    text = page.read_text()
    assert f"PackRat {folder}" in text  # the machine description
    assert "Imported from PackRat" in text and "latency is the mean" in text.lower()
    packing = text.find('<h2 id="packing"')  # packing measures, so an import has none
    # PackRat's grid is float32 eager and TorchScript with glibc: nothing to compare with it
    precision = text.index('<h2 id="precision-runtime"')
    assert "No figures" not in text[:precision]
    assert "No figures: the imported results have only float32 eager" in text[precision:packing]
    assert "No figures: imported results" in text[packing:]
    # a second run has nothing to do
    assert planned(wd, config) == {}


@pytest.mark.integration
@pytest.mark.parametrize("imported", FOLDERS, indirect=True)
def test_imported_degradation_table_by_hand(imported):
    folder, wd, _ = imported
    deg = pd.read_csv(wd / "results" / "tables" / "degradation.csv")
    cases = [c for c in HAND_CHECKED if c[0] == folder]
    assert cases
    for case in cases:
        check_degradation(deg, case)
    assert len(deg) == len(raw(folder, "resnet_latency.csv")) // (
        3 if folder.startswith("cloud") else 2
    )


@pytest.mark.integration
@pytest.mark.parametrize("imported", DRAWN, indirect=True)
def test_imported_report_renders_in_chromium(imported, chromium, tmp_path):
    folder, wd, _ = imported
    page = wd / "results" / "report" / "index.html"
    n, broken = load_page(chromium, page, tmp_path / "profile")
    assert n == len(figures.figures(packrat.keys([PACKRAT / folder])))
    assert broken == []


def test_the_import_config_key_is_validated():
    from numa_effects.config import schema as schema_mod

    schema = schema_mod.load()
    base = {
        "models": ["resnet50"],
        "batch_sizes": [1],
        "optimizations": ["script"],
        "threads": [1],
        "placements": ["sequential"],
    }
    ok = {**base, "import": {"packrat": [str(PACKRAT / FOLDERS[0])], "machine": "c6420"}}
    assert schema_mod.problems(ok, schema) == []
    assert schema_mod.problems({**base, "import": None}, schema) == []
    bad = schema_mod.problems({**base, "import": {"packrat": ["x"], "bogus": 1}}, schema)
    assert any("bogus" in str(p) for p in bad)
    assert schema_mod.problems({**base, "import": {"machine": "x"}}, schema)
    assert schema_mod.problems({**base, "import": {"packrat": []}}, schema)
