"""No pointer into the manual dangles: every `file.md#anchor` and `file.md, "Section"` (or
`README, 'Section'`) in the manual, the workflow's code and rules, the configs, the requirements
and the Makefile names a file that exists and a heading in it (a quoted section may be the
start of a longer heading, or a bold paragraph lead)."""

import re
from pathlib import Path

import pytest
from conftest import REPO
from test_docs import anchors

SOURCES = sorted(
    {
        REPO / "README.md",
        REPO / "Makefile",
        *REPO.glob("requirements*.txt"),
        *(REPO / "docs").glob("*.md"),
        *(p for p in (REPO / "config").rglob("*") if p.is_file()),
        *(p for p in (REPO / "workflow").rglob("*") if p.suffix in (".py", ".smk", ".rst", ".j2")),
    }
)
ANCHORED = re.compile(r"([\w./-]*\w\.md)#([\w-]+)")
QUOTED = re.compile(r"""([\w./-]*\w\.md|\bREADME),\s+(["'])([^\n]{3,}?)\2""")


def headings(page: Path) -> list[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.S | re.M)
    found = re.findall(r"^#{1,6} (.+)$", text, re.M) + re.findall(r"^\*\*(.+?)\*\*", text, re.M)
    return [h.replace("`", "").strip().lower() for h in found]  # headings, bold paragraph leads


def target(source: Path, name: str) -> Path | None:
    name = "README.md" if name == "README" else name
    for base in (source.parent, REPO, REPO / "docs"):
        if (base / name).is_file():
            return base / name
    return None


def dangling(source: Path) -> list[str]:
    # a pointer may wrap: join lines, dropping comment marks and indentation
    text = re.sub(r"\s*\n\s*(?:#+ ?|//\s*)?", " ", source.read_text(errors="replace"))
    bad = []
    for name, anchor in ANCHORED.findall(text):
        page = target(source, name)
        if page is None or anchor not in anchors(page):
            bad.append(f"{name}#{anchor}")
    for name, _, section in QUOTED.findall(text):
        page = target(source, name)
        wanted = " ".join(section.split()).lower()
        if page is None or not any(h.startswith(wanted) for h in headings(page)):
            bad.append(f'{name}, "{section}"')
    return bad


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: str(p.relative_to(REPO)))
def test_no_pointer_dangles(source):
    assert dangling(source) == [], source.relative_to(REPO)


def test_the_pointer_check_can_fail(tmp_path):
    (tmp_path / "a.md").write_text("# Installing\n\n## The grid: `x`\n")
    src = tmp_path / "s.py"
    src.write_text(
        '"""(a.md, "Installing"), (a.md, "The grid"), a.md#the-grid-x, (a.md, "Installing\n'
        '    PyTorch"), a.md#gone, (b.md, "Installing")"""\n'
    )
    assert dangling(src) == ["a.md#gone", 'a.md, "Installing PyTorch"', 'b.md, "Installing"']


# -- commands the manual names ---------------------------------------------------------------------
MANUAL = [REPO / "README.md", REPO / "config" / "README.md", *sorted((REPO / "docs").glob("*.md"))]
MAKE_TARGETS = set(re.findall(r"^([\w-]+):", (REPO / "Makefile").read_text(), re.M))


def named(pattern: str) -> set[tuple[str, str]]:
    """(page, name) of every `make X` / `numa-effects X` in the manual's code (spans and blocks)."""
    found = set()
    for page in MANUAL:
        code = re.findall(r"```.*?```|`[^`\n]+`", page.read_text(), re.S)
        found |= {(page.name, n) for c in code for n in re.findall(pattern, c)}
    return found


def test_every_make_target_the_manual_names_exists():
    assert {"run", "test", "venv", "docs-img"} <= MAKE_TARGETS
    missing = {(p, t) for p, t in named(r"\bmake ([a-z][\w-]*)") if t not in MAKE_TARGETS}
    assert missing == set()


def test_every_numa_effects_command_the_manual_names_exists():
    from numa_effects import cli

    used = named(r"\bnuma-effects ([a-z][\w-]*)")
    assert {"launch", "compare", "check-config"} <= {n for _, n in used}
    assert {(p, n) for p, n in used if n not in cli.COMMANDS} == set()
