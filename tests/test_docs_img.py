"""The manual's generated pictures are current: the text each is drawn from, stored beside it
(docs/img/placements.txt, rulegraph.dot), is what tools/docs_img.py makes now from the planner
and from Snakemake. Pixels are never compared. `make docs-img` redraws both."""

import importlib.util
import re

import pytest
from conftest import REPO

IMG = REPO / "docs" / "img"
spec = importlib.util.spec_from_file_location("docs_img", REPO / "tools" / "docs_img.py")
docs_img = importlib.util.module_from_spec(spec)
spec.loader.exec_module(docs_img)
STALE = "stale: redraw with `make docs-img` and commit docs/img/"


def test_the_placements_drawing_is_current():
    assert (IMG / "placements.svg").is_file()
    assert (IMG / "placements.txt").read_text() == docs_img.placements_text(), STALE


def test_the_drawing_shows_what_the_placements_mean():
    # independent of the planner: placements.md's definitions on 2 sockets of cores 0-3, 4-7
    text = docs_img.placements_text()
    assert "sequential, 4 threads [0]: numactl --physcpubind=0-3 --membind=0\n" in text
    assert "interleave, 4 threads [0]: numactl --physcpubind=0-1,4-5 --membind=0-1\n" in text
    assert "remote, 2 threads [0]: numactl --physcpubind=0-1 --membind=1\n" in text
    two = re.findall(r"^2x\(t1\).*--physcpubind=(\d+) --membind=(\d+)$", text, re.M)
    assert len(two) == 2 and len({cpu for cpu, _ in two}) == 2  # two instances, own cores


@pytest.mark.integration
def test_the_rule_graph_is_current():
    assert (IMG / "rulegraph.svg").is_file()
    assert (IMG / "rulegraph.dot").read_text() == docs_img.rulegraph_dot(), STALE


def test_the_pictures_are_shown():
    assert "img/placements.svg" in (REPO / "docs" / "placements.md").read_text()
    assert "img/rulegraph.svg" in (REPO / "docs" / "architecture.md").read_text()


# -- docs/report.md's thumbnails (tools/docs_thumbs.py) --------------------------------------------

spec = importlib.util.spec_from_file_location("docs_thumbs", REPO / "tools" / "docs_thumbs.py")
docs_thumbs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(docs_thumbs)
FAMILIES = docs_thumbs.FAMILIES  # the report's registry (numa_effects.report.families)


def example(pattern: str) -> str:
    """A figure path of a family, each field filled as the figures rules fill it."""
    return pattern.format_map(_Fill(batch_size=4, placement="remote")) + ".png"


class _Fill(dict):
    def __missing__(self, key):
        return f"x{key}"


def test_report_md_shows_a_thumbnail_per_family():
    text = (REPO / "docs" / "report.md").read_text()
    lacking = [f.name for f in FAMILIES if f"(img/thumbs/{f.name}.png)" not in text]
    assert lacking == [], "docs/report.md lacks their thumbnails: tools/docs_thumbs.py"
    from PIL import Image

    for fam in FAMILIES:
        png = IMG / "thumbs" / f"{fam.name}.png"
        assert png.stat().st_size < 24 * 1024, png
        assert Image.open(png).width == docs_thumbs.WIDTH, png


def test_each_family_is_told_apart_by_its_pattern():
    # each family's figure path matches its own pattern and no other family's
    for fam in FAMILIES:
        path = example(fam.pattern)
        assert [f.name for f in FAMILIES if docs_thumbs.pattern_re(f.pattern).fullmatch(path)] == [
            fam.name
        ]


def test_thumbnails_come_from_the_first_folder_with_the_family(tmp_path, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5), dpi=100)  # 800 px wide, as the report's figures
    ax.plot([1, 2, 4], [3, 1, 2])
    run, other = tmp_path / "run" / "results", tmp_path / "cmp"
    heatmap = "resnet18/latency_degradation_heatmap/none"
    made = {
        run / "report/figures" / heatmap / "interleave.png",
        run / "report/figures" / heatmap / "remote.png",  # the one picked: remote
        other / "report/figures" / heatmap / "mem-interleave.png",  # the second folder's: not
        other / "compare/a-vs-b/figures/b/resnet18/compare_forest/none.png",
    }
    for png in made:
        png.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(png)
    monkeypatch.setattr(docs_thumbs, "THUMBS", tmp_path / "thumbs")
    lines = docs_thumbs.make_thumbs([run, other])
    assert f"latency_degradation_heatmap: {run}/report/figures/{heatmap}/remote.png" in lines
    assert any(line.startswith("compare_forest: ") and str(other) in line for line in lines)
    assert len([line for line in lines if "none of the folders" in line]) == len(FAMILIES) - 2
    from PIL import Image

    thumb = Image.open(tmp_path / "thumbs" / "compare_forest.png")
    assert thumb.size == (320, 200) and thumb.mode == "P"  # 800 x 500 scaled to 320 wide
    assert len(thumb.getcolors()) <= docs_thumbs.COLOURS
