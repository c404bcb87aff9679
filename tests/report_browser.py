"""Helpers of the report tests: headless Chromium (installed on demand) and page parsing."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SETUP = REPO / "tests" / "chromium" / "setup"  # idempotent: apt-get only when missing
IN_CI = os.environ.get("CI", "").lower() == "true"

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

# Marks, once the page has loaded, every image that failed to load (a broken <img> has
# naturalWidth 0 after the load event).
PROBE = """<script>
addEventListener("load", () => {
  const broken = [];
  for (const img of document.images) {
    if (!(img.complete && img.naturalWidth > 0)) broken.push(img.getAttribute("src"));
  }
  document.body.setAttribute("data-images", String(document.images.length));
  document.body.setAttribute("data-broken", JSON.stringify(broken));
});
</script>"""


def install_chromium() -> str:
    """Path of `chromium`, installed by tests/chromium/setup when missing. Without it the test
    fails under CI=true and is skipped (with the reason) elsewhere."""
    proc = subprocess.run([str(SETUP)], capture_output=True, text=True)
    exe = proc.stdout.strip().splitlines()[-1] if proc.returncode == 0 and proc.stdout else None
    if not exe or not shutil.which(exe):
        why = f"chromium could not be installed: {proc.stderr.strip()[-500:]}"
        if IN_CI:
            pytest.fail(why)
        pytest.skip(why)
    return exe


def load_page(chromium: str, page: Path, profile: Path) -> tuple[int, list[str]]:
    """Open ``page`` (file://, no server) in headless Chromium; (images, broken image srcs)."""
    probe = page.with_name(f"_probe_{page.name}")  # same folder: same relative URLs
    text = page.read_text()
    probe.write_text(text.replace("</body>", PROBE + "</body>", 1))
    try:
        proc = subprocess.run(
            [
                chromium,
                *CHROMIUM_FLAGS,
                f"--user-data-dir={profile}",
                "--virtual-time-budget=20000",
                "--dump-dom",
                probe.resolve().as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=180,
        )
    finally:
        probe.unlink()
    m = re.search(r'data-images="(\d+)"', proc.stdout)
    b = re.search(r'data-broken="([^"]*)"', proc.stdout)
    assert m and b, f"page did not finish loading: {proc.stderr[-2000:]}"
    return int(m.group(1)), json.loads(html.unescape(b.group(1)))


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.imgs: list[str] = []
        self.hrefs: list[str] = []
        self.ids: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "img":
            self.imgs.append(a.get("src", ""))
        if tag == "a" and "href" in a:
            self.hrefs.append(a["href"])
        if "id" in a:
            self.ids.append(a["id"])


def page_links(page: Path) -> _Links:
    p = _Links()
    p.feed(page.read_text())
    return p
