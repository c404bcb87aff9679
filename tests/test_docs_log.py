"""The results log (benchmarks/results/): one dated file per run or measurement session, each with
the fields that say how its numbers were produced, all listed in the log's index."""

import re
from pathlib import Path

import pytest

LOG = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
ENTRIES = sorted(p for p in LOG.glob("*.md") if p.name != "README.md")
NAME = re.compile(r"(\d{4}-\d{2}-\d{2})(?:-(\d{2})(\d{2}))?-[a-z0-9][a-z0-9-]*\.md")
FIELDS = ("machine", "commit", "command", "load")
# a commit is a hash, or says it was not recorded and which commit recorded the entry
COMMIT = re.compile(r"[0-9a-f]{7,40}\b|not recorded \(.*[0-9a-f]{7,40}.*\)")


def fields(text: str) -> dict[str, str]:
    head = text.split("\n## ", 1)[0]
    return dict(re.findall(r"^- ([a-z]+): (.+)$", head, re.M))


def test_the_log_has_entries():
    assert len(ENTRIES) >= 50


@pytest.mark.parametrize("entry", ENTRIES, ids=[p.stem for p in ENTRIES])
def test_an_entry_says_where_when_how_and_what(entry):
    m = NAME.fullmatch(entry.name)
    assert m, f"{entry.name}: name is not YYYY-MM-DD[-HHMM]-what.md"
    date, hh, mm = m.groups()
    text = entry.read_text()
    title = text.split("\n", 1)[0]
    when = f"{date} {hh}:{mm} UTC" if hh else date
    assert title.startswith(f"# {when}: "), f"{entry.name}: title does not start with '{when}: '"
    got = fields(text)
    for key in FIELDS:
        assert got.get(key, "").strip(), f"{entry.name}: no '- {key}: ...' field"
    assert COMMIT.match(got["commit"]), f"{entry.name}: commit {got['commit']!r}"
    numbers = text.split("\n## Numbers\n", 1)
    assert len(numbers) == 2, f"{entry.name}: no '## Numbers' section"
    assert re.search(r"\d", numbers[1]), f"{entry.name}: no number in '## Numbers'"


def test_the_index_lists_every_entry_and_nothing_else():
    index = (LOG / "README.md").read_text()
    linked = set(re.findall(r"\]\((\d{4}-[^)#]+\.md)\)", index))
    assert linked == {p.name for p in ENTRIES}
