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
