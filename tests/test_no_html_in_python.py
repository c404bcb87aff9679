"""The pages' HTML is in their templates (report/templates, compare/templates), never built in
Python: no module of report/ or compare/ holds an HTML tag."""

import re
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "workflow" / "scripts" / "numa_effects"
TAGS = "a|b|body|code|details|div|em|figure|h[1-6]|head|html|img|li|main|nav|p|span|table|t[dhr]|ul"
# a tag's start, opening or closing, its name followed by an attribute, its end or an f-string's
# field: not a placeholder such as <name>
TAG = re.compile(rf"</?(?:{TAGS})(?=[\s>/{{])", re.IGNORECASE)


def test_the_pattern_finds_a_tag_and_passes_a_placeholder():
    found = ['"<td class=\\"t\\">"', "f'<tr{cls}>'", "'</table></div>'", "'<p>'", "<h2 id=x>"]
    assert all(TAG.search(s) for s in found)
    assert not TAG.search("compare/<name>/index.html, ``<anchor>-<family>``, a < b > c")


def test_no_module_of_the_pages_holds_html():
    modules = sorted((PKG / "report").rglob("*.py")) + sorted((PKG / "compare").rglob("*.py"))
    assert len(modules) > 20  # the two folders, not an empty glob
    hits = [
        f"{p.relative_to(PKG)}:{n}: {line.strip()}"
        for p in modules
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if TAG.search(line)
    ]
    assert not hits, "\n".join(hits)
