#!/usr/bin/env python3
"""docs/report.md's thumbnails and the README's screenshot, from a multi-node run
(`make docs-thumbs RUN=... MORE=...`; tests/numa_vm/README.md, "Thumbnails", has the run):

- docs/img/thumbs/<family>.png: one per figure family of the report's registry
  (report.families.FAMILIES), WIDTH px wide, its top MAX_HEIGHT px, 32 colours (a few KiB),
  from one figure of that family: the first folder given that has one (the figure under a
  `figures` folder whose path matches the family's `pattern`; of several, a `remote` one,
  else the fullest);
- docs/img/thumbs/sources.txt: the folder and figure each thumbnail came from, and the families
  no folder had (docs/report.md's caption names the runs);
- docs/img/report-4node.png: the first folder's report page from its NUMA Effects section on
  (tools/report-screenshot: headless Chromium, 64 colours).

Usage: tools/docs_thumbs.py RESULTS [MORE_RESULTS]...  (RESULTS: a drawn run's results folder;
the others, e.g. a comparison's, fill the families it lacks)
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "workflow" / "scripts"))

from numa_effects.report.families import FAMILIES, SECTIONS  # noqa: E402

THUMBS = REPO / "docs" / "img" / "thumbs"
SCREENSHOT = REPO / "docs" / "img" / "report-4node.png"
WIDTH = 320
MAX_HEIGHT = 240  # a taller figure (a forest of many cells) is shown from its top
COLOURS = 32


def pattern_re(pattern: str) -> re.Pattern:
    """A family's figure path (below `figures/`, no extension) with each field one segment."""
    parts = re.split(r"\{\w+\}", pattern)
    return re.compile("[^/]+".join(re.escape(p) for p in parts) + r"\.png")


def figures(folder: Path) -> list[tuple[Path, str]]:
    """Every figure below a `figures` folder of `folder`: (file, its path below `figures`)."""
    return sorted(
        (p, p.relative_to(d).as_posix())
        for d in folder.rglob("figures")
        if d.is_dir()
        for p in d.rglob("*.png")
    )


def pick(pattern: str, found: list[tuple[Path, str]]) -> Path | None:
    """The figure of the family: a `remote` one first (the NUMA effect), then the fullest (the
    largest file: the most lines or cells drawn), then by name."""
    rx = pattern_re(pattern)
    hits = [(p, rel) for p, rel in found if rx.fullmatch(rel)]

    def key(hit: tuple[Path, str]) -> tuple[bool, int]:
        return "remote" not in hit[1].removesuffix(".png").split("/"), -hit[0].stat().st_size

    return min(hits, key=key)[0] if hits else None


def thumbnail(src: Path, dst: Path, width: int = WIDTH) -> None:
    from PIL import Image

    img = Image.open(src).convert("RGB")
    height = max(1, round(img.height * width / img.width))
    small = img.resize((width, height), Image.LANCZOS).crop((0, 0, width, min(height, MAX_HEIGHT)))
    small.quantize(colors=COLOURS).save(dst, optimize=True)


def make_thumbs(folders: list[Path]) -> list[str]:
    """Writes a thumbnail per family found; returns the lines of sources.txt."""
    THUMBS.mkdir(parents=True, exist_ok=True)
    found = [(folder, figures(folder)) for folder in folders]
    lines = ["# docs/img/thumbs/<family>.png: drawn from (tools/docs_thumbs.py)"]
    for fam in FAMILIES:
        src = next((f for _, fs in found if (f := pick(fam.pattern, fs))), None)
        if src is None:
            lines.append(f"{fam.name}: none of the folders has it")
            continue
        thumbnail(src, THUMBS / f"{fam.name}.png")
        lines.append(f"{fam.name}: {src}")
    return lines


def screenshot(results: Path) -> None:
    tool = REPO / "tools" / "report-screenshot"
    anchor = SECTIONS["numa"].anchor
    subprocess.run([str(tool), str(results), str(SCREENSHOT), anchor], check=True)


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    folders = [Path(a).resolve() for a in argv]
    lines = make_thumbs(folders)
    (THUMBS / "sources.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines), file=sys.stderr)
    screenshot(folders[0])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
