"""The manual (README.md, docs/*.md, config/README.md) is true to the repository: every link and
anchor inside it resolves; it describes how things are (no dates, issue numbers, commit hashes or
lab-diary phrases: those live in the results log, benchmarks/results/); it stays short; the
figures it takes from code are the code's; and the files that repeat a fact (the version, the
environments' pins, the report's sections) agree with its one source."""

import csv
import re
import tomllib
from collections import Counter
from pathlib import Path

import pytest
import yaml
from conftest import REPO

import benchmarks.__main__ as bench_main
import numa_effects
from numa_effects.config import check, files
from numa_effects.plan import allocators, build, optimizations, placement
from numa_effects.report import families

MANUAL = sorted([REPO / "README.md", REPO / "config" / "README.md", *(REPO / "docs").glob("*.md")])
TOPOLOGIES = REPO / "tests" / "fixtures" / "topology"
LINK = re.compile(r"!?\[(?:[^\]]|\][^(])*?\]\(([^)\s]+)\)")


def prose(text: str) -> str:
    """The text without fenced code blocks and inline code (quoted program output and commands
    may say anything)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: Counter = Counter()
    found = set()
    for heading in re.findall(r"^#{1,6} (.+)$", re.sub(r"^```.*?^```", "", path.read_text(),
                                                          flags=re.S | re.M), re.M):  # fmt: skip
        base = slug(heading)
        found.add(base if not seen[base] else f"{base}-{seen[base]}")
        seen[base] += 1
    return found


def links(path: Path) -> list[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.S | re.M)
    return LINK.findall(re.sub(r"`[^`\n]*`", "", text))


def test_the_slug_is_githubs():
    assert slug("The node-pair matrix: `n{cpu}m{mem}` and `node_pairs`") == (
        "the-node-pair-matrix-ncpummem-and-node_pairs"
    )
    assert slug("A cell that fails is a result, and the grid goes on") == (
        "a-cell-that-fails-is-a-result-and-the-grid-goes-on"
    )


def broken_links(page: Path) -> list[str]:
    bad = []
    for target in links(page):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        name, _, anchor = target.partition("#")
        dest = (page.parent / name).resolve() if name else page
        if not dest.exists():
            bad.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            bad.append(f"{target}: no heading with that anchor in {dest.name}")
    return bad


@pytest.mark.parametrize("page", MANUAL, ids=lambda p: str(p.relative_to(REPO)))
def test_every_link_and_anchor_resolves(page):
    assert links(page) or page.name == "glossary.md" or page.parent.name == "config"
    assert broken_links(page) == [], page.relative_to(REPO)


def test_the_link_check_can_fail(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("# A title\n\n[a](p.md#a-title) [b](#nothing) [c](missing.md) [d](https://x)\n"
                    "`[e](not-a-link.md)`\n")  # fmt: skip
    assert broken_links(page) == [
        "#nothing: no heading with that anchor in p.md",
        "missing.md: no such file",
    ]


# no dates, times, issue numbers, commit hashes or diary phrases outside code and link targets
DIARY = re.compile(
    r"\b20\d\d-\d\d-\d\d\b|\b\d\d:\d\d UTC\b|\bissues? \d+|\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)"
    r"[0-9a-f]{7,40}\b|this machine|this session|this host|the quiet Xeon|of mine|tonight"
    r"|\bsince (?:this|the) (?:change|commit)",
    re.I,
)


def diary(text: str) -> list[str]:
    text = LINK.sub(lambda m: m.group(0).split("](")[0], prose(text))
    return [m.group(0) for m in DIARY.finditer(text)]


@pytest.mark.parametrize("page", MANUAL, ids=lambda p: str(p.relative_to(REPO)))
def test_the_manual_is_not_a_lab_diary(page):
    assert diary(page.read_text()) == [], page.relative_to(REPO)


def test_the_diary_check_can_fail():
    found = diary("On 2026-12-05 (issue 23, commit 9aad2e5) this machine ran; `9aad2e5` in code.")
    assert found == ["2026-12-05", "issue 23", "9aad2e5", "this machine"]
    assert diary("[the log](../benchmarks/results/2026-12-05-0810-x.md) at 4294967295") == []


# config/README.md's key tables, generated from the schema (numa_effects.config.cli)
KEY_TABLES = re.compile(r"<!-- config-keys: [^>]*-->.*?<!-- /config-keys -->", re.S)


def words(path: Path, tables: bool = False) -> int:
    """The words of a page's prose, or with ``tables`` those of its generated key tables."""
    text = path.read_text()
    if tables:
        return sum(len(t.split()) for t in KEY_TABLES.findall(text))
    return len(KEY_TABLES.sub("", text).split())


def test_the_manual_is_short():
    total = sum(words(p) for p in MANUAL)
    assert total <= 20_000, f"the manual has {total} words (README.md, docs/, config/README.md)"
    assert words(REPO / "docs" / "performance.md") <= 4_000
    assert words(REPO / "docs" / "quickstart.md") <= 1_500
    # the key tables grow with the keys, not with the prose: a cap of their own
    assert 0 < words(REPO / "config" / "README.md", tables=True) <= 3_000


# -- files that repeat a fact ----------------------------------------------------------------------
def pins(lines) -> dict[str, str]:
    out = {}
    for line in lines:
        line = line.split("#")[0].strip().lstrip("- ").strip()
        if m := re.fullmatch(r"([A-Za-z0-9_.\-]+)\s*(?:==|=)\s*([0-9][\w.]*)", line):
            out[m.group(1).lower()] = m.group(2)
    return out


def env_pins(path: Path) -> dict[str, str]:
    deps = yaml.safe_load(path.read_text())["dependencies"]
    flat = [d for d in deps if isinstance(d, str)]
    flat += [p for d in deps if isinstance(d, dict) for p in d.get("pip", [])]
    return {k: v for k, v in pins(flat).items() if k not in ("python", "pip")}


def test_the_environments_pin_what_requirements_txt_pins():
    req = pins((REPO / "requirements.txt").read_text().splitlines())
    assert {"torch", "torchvision", "torchao", "snakemake"} <= set(req)
    # the cells' environment is all of requirements.txt; the analysis one a subset of it
    assert env_pins(REPO / "envs" / "benchmark.yaml") == req
    analysis = env_pins(REPO / "envs" / "analysis.yaml")
    assert analysis and {k: req.get(k) for k in analysis} == analysis


def test_the_version_has_one_value():
    version = numa_effects.__version__
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert pyproject["project"]["version"] == version
    changelog = re.search(r"^## \[([^\]]+)\]", (REPO / "CHANGELOG.md").read_text(), re.M)
    assert changelog and changelog.group(1) == version
    assert f"Version {version} " in (REPO / "README.md").read_text()
    assert (REPO / "LICENSE").read_text().startswith("MIT License")


def test_workflow_rst_lists_the_report_pages_sections_in_order():
    rst = (REPO / "workflow" / "report" / "workflow.rst").read_text()
    listed = re.findall(r"^- \*\*(.+?)\*\*", rst, re.M)
    assert listed == [s.heading for s in families.page_sections().values()]


# -- figures from code -----------------------------------------------------------------------------
def marked(page: str, name: str) -> list[str]:
    text = (REPO / page).read_text()
    found = re.findall(rf"<!-- {name}(?:: ([^>]*?))? -->(.*?)<!-- /{name} -->", text, re.S)
    assert found, f"{page} has no <!-- {name} --> block"
    return found


def plan_of(*configfiles: str, topology: Path):
    cfg = files.load([REPO / "config" / "config.yaml", *(REPO / "config" / f for f in configfiles)])
    cfg["topology"] = str(topology)
    checked = check(cfg, workdir=REPO)
    return build.build(checked.config, checked.topology)


def test_the_benchmark_table_is_the_registry():
    (_, table), = marked("docs/performance.md", "benchmarks")  # fmt: skip
    assert re.findall(r"^\| `(\w+)` \|", table, re.M) == list(bench_main.BENCHMARKS)


def test_packrats_grid_size_on_a_2x16_server():
    plan = plan_of("packrat.yaml", topology=REPO / "benchmarks" / "data" / "topology-2x16.lscpu")
    for page in ("docs/usage.md", "docs/performance.md"):
        assert [v for _, v in marked(page, "packrat-cells")] == [str(len(plan.grid.reported()))]
    # interleave at one thread is sequential's binding: measured once (plan.binding)
    assert [v for _, v in marked("docs/usage.md", "packrat-measured")] == [
        str(len(plan.grid.cells))
    ]


def test_the_precision_grid_on_a_2_core_machine():
    plan = plan_of("precision.yaml", topology=TOPOLOGIES / "this-vm-2cpu-1node.lscpu")
    cells = plan.grid.cells
    compiled = sum(optimizations.OPTIMIZATIONS[k.opt].graph != "eager" for k in cells) - sum(
        optimizations.OPTIMIZATIONS[k.opt].graph == "torchscript" for k in cells
    )
    first, cap = plan.two_stage["first_stage"], plan.two_stage["cap"]
    want = (
        f"{len(cells)} cells, {first * len(cells)} - {cap * len(cells)} processes, "
        f"{first * compiled} - {cap * compiled} of them compiled"
    )
    assert [v for _, v in marked("docs/precision.md", "precision-grid")] == [want]


def test_the_interference_profiles_cost():
    for fixture, text in marked("docs/packing.md", "profile-cost"):
        c = plan_of(topology=TOPOLOGIES / fixture).profile_cost()
        jobs = f"{c['jobs']} profile job{'s' if c['jobs'] != 1 else ''}"
        assert text == (
            f"{jobs}, {c['configurations']} configurations, {c['processes']} instance processes, "
            f"at most {c['max_timed_s']:.0f} s of timing"
        ), fixture


def test_the_registry_tables_of_the_pages():
    prec = (REPO / "docs" / "precision.md").read_text()
    names = re.findall(r"^\| `([\w]+)` \| (?:float32|bfloat16|int8) \|", prec, re.M)
    assert names == list(optimizations.OPTIMIZATIONS)
    assert re.findall(r"^\| `([\w]+)` \| (?:glibc|`lib)", prec, re.M) == list(allocators.ALLOCATORS)
    text = (REPO / "docs" / "placements.md").read_text()
    first_table = re.search(r"^\| placement \|.*?\n\n", text, re.S | re.M).group(0)
    assert re.findall(r"^\| `([^`]+)`", first_table, re.M) == list(placement.PLACEMENTS)


def test_the_readme_describes_the_default_grid():
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    readme = (REPO / "README.md").read_text()
    assert cfg["models"] == ["resnet50"] and "ResNet-50" in readme
    sizes = cfg["batch_sizes"]
    assert f"batch {', '.join(map(str, sizes[:-1]))} and {sizes[-1]}" in readme
    assert cfg["optimizations"] == ["none", "script", "bf16"] and cfg["threads"] == "auto"
    assert cfg["placements"] == ["sequential", "interleave"]
    assert cfg["allocators"] == ["glibc_tuned"] and "glibc tuned" in readme


PACKRAT_LATENCY = REPO.parent / "shared/reference/packrat/cloudlab_large-batches"


def test_packrats_full_grid_duration_from_its_own_latencies():
    """docs/usage.md's estimate of config/packrat.yaml: PackRat's 10 + 100 iterations of every
    cell at PackRat's own mean latency (CloudLab c6420), its eager cells measured sequential only
    taken as long interleaved; then the default two to four processes per cell."""
    import os

    folder = Path(os.environ.get("NUMA_EFFECTS_PACKRAT", PACKRAT_LATENCY.parent)) / (
        "cloudlab_large-batches"
    )
    if not folder.is_dir():
        pytest.skip(f"PackRat reference data not found at {folder}")
    plan = plan_of("packrat.yaml", topology=REPO / "benchmarks" / "data" / "topology-2x16.lscpu")
    # a cell measured once for two placements (plan.binding) counts once
    measured = {(k.opt, k.placement, k.threads, k.batch_size) for k in plan.grid.cells}
    hours: Counter = Counter()
    with open(folder / "resnet_latency.csv") as f:
        for row in csv.DictReader(f):
            opt = row["benchmark"].removeprefix("resnet_manual_")
            where = (int(row["intraop_threads"]), int(row["batch_size"]))
            h = float(row["latency(avg)"]) * 110 / 3.6e6
            hours[opt, row["topology"]] += h * ((opt, row["topology"], *where) in measured)
            if opt == "none":  # measured sequential only: taken as long interleaved
                hours[opt, "interleave"] += h * ((opt, "interleave", *where) in measured)
    total = sum(hours.values())
    (_, h), = marked("docs/usage.md", "packrat-hours")  # fmt: skip
    (_, d), = marked("docs/usage.md", "packrat-days")  # fmt: skip
    first, cap = plan.two_stage["first_stage"], plan.two_stage["cap"]
    assert h == f"{total:.0f}"
    assert d == f"{first * total / 24:.0f} - {cap * total / 24:.0f}"
