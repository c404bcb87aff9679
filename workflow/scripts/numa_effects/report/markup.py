"""The HTML both pages (``report.page``, ``compare.page``) are made of: the style sheet,
escaping, captions, tables, section links, figure blocks and the document around a body."""

from __future__ import annotations

import html
import os
import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from numa_effects.report import families
from numa_effects.tables.tidy import INTEGER_COLUMNS

HIGHLIGHT = ' class="numa"'  # the section the page is about stands out in the navigation

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#222;
background:#fafafa;line-height:1.45}
header,main{max-width:1400px;margin:0 auto;padding:0 1.2rem}
header{padding-top:1rem}
h1{margin:.4rem 0}
h2{border-bottom:2px solid #ddd;padding-bottom:.2rem;margin-top:2.2rem}
nav{position:sticky;top:0;background:#fafafa;border-bottom:1px solid #ddd;padding:.5rem 1.2rem;
z-index:1}
nav a{margin-right:1.2rem;text-decoration:none;color:#0b5394;font-weight:600}
nav a.numa{background:#0b5394;color:#fff;padding:.15rem .6rem;border-radius:.3rem}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));gap:1rem}
figure{margin:0;background:#fff;border:1px solid #ddd;border-radius:.3rem;padding:.4rem}
figure img{width:100%;height:auto;display:block}
figcaption{font-size:.85rem;color:#555;margin-top:.2rem}
.why{background:#fff8e1;border-left:4px solid #f0b400;padding:.6rem .9rem}
.emulated{background:#fde2e1;border-left:6px solid #b00020;padding:.6rem .9rem;font-weight:600}
.facts{border-collapse:collapse}
.facts th{text-align:left;padding:.15rem 1rem .15rem 0;color:#555;font-weight:600}
.scroll{overflow-x:auto;max-width:100%}
table.data{border-collapse:collapse;font-size:.82rem;background:#fff}
table.data td{white-space:nowrap}
table.data th,table.data td{border:1px solid #ddd;padding:.15rem .45rem;text-align:right}
table.data th{background:#f0f0f0}
table.data td.t{text-align:left}
table.data tr.rec td{background:#e8f4e8}
tr.failed td{background:#fde2e1}
tr.skipped td,tr.missing td{background:#eee;color:#666}
tr.contended td{background:#fff3e0}
.status-failed{color:#b00020;font-weight:600}
.small{font-size:.85rem;color:#555}
details{margin:.6rem 0}
summary{cursor:pointer;font-weight:600}
"""


def escape(v) -> str:
    return html.escape("" if v is None else str(v))


def caption_html(rst: str) -> str:
    """A family's caption (RST with ``code`` and *emphasis* only) as HTML."""
    out = escape(" ".join(rst.split()))
    out = re.sub(r"``(.+?)``", r"<code>\1</code>", out)
    return re.sub(r"(?<![\w*])\*(\S(?:.*?\S)?)\*(?![\w*])", r"<em>\1</em>", out)


def facts_table(rows: Sequence[tuple[str, object]]) -> str:
    body = "".join(
        f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in rows if v not in (None, "")
    )
    return f'<table class="facts">{body}</table>'


def data_table(df: pd.DataFrame, columns: list[str], row_class: str | None = None) -> str:
    """``columns`` of ``df``; an integer column a blank made float still prints integers."""
    head = "".join(f"<th>{escape(c)}</th>" for c in columns)
    body = []
    for r in df.to_dict("records"):
        cls = f' class="{escape(r.get(row_class))}"' if row_class else ""
        tds = []
        for c in columns:
            v = r.get(c)
            if isinstance(v, float) and c in INTEGER_COLUMNS and v.is_integer():
                tds.append(f"<td>{int(v)}</td>")
            elif isinstance(v, float) and np.isnan(v):
                tds.append("<td></td>")
            elif isinstance(v, float):
                tds.append(f"<td>{v:,.{2 if abs(v) < 100 else 1}f}</td>")
            elif isinstance(v, bool | np.bool_ | int | np.integer):
                tds.append(f"<td>{escape(v)}</td>")
            else:
                tds.append(f'<td class="t">{escape("" if v is None or v is pd.NA else v)}</td>')
        body.append(f"<tr{cls}>{''.join(tds)}</tr>")
    return (
        f'<div class="scroll"><table class="data"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def figure_html(fig, figure_dir: str, page_dir: str) -> str:
    png = os.path.relpath(fig.path(figure_dir), page_dir)
    svg = os.path.relpath(fig.path(figure_dir, "svg"), page_dir)
    what = ", ".join(
        f"{k.replace('batch_size', 'BS')}={v}" for k, v in fig.wildcards.items() if k != "model"
    )
    alt = f"{fig.spec.title}: {fig.model}{', ' + what if what else ''}"
    return (
        f'<figure><a href="{escape(png)}"><img src="{escape(png)}" alt="{escape(alt)}"></a>'
        f'<figcaption>{escape(what or fig.model)} · <a href="{escape(png)}">PNG</a> · '
        f'<a href="{escape(svg)}">SVG</a></figcaption></figure>'
    )


def section_links(page: str) -> str:
    """The navigation's links to the sections of ``page``; the one it is about stands out."""
    return "".join(
        f'<a{HIGHLIGHT if s.highlight else ""} href="#{s.anchor}">{escape(s.heading)}</a>'
        for s in families.page_sections(page).values()
    )


def family_blocks(figs, anchor: str, dirs: tuple[str, str], suffix: str = "") -> list[str]:
    """Per family with figures among ``figs``, in registry order: its heading (id
    ``<anchor>-<family>``, its title and ``suffix``), caption and figures; ``dirs``: the figure
    and page folders."""
    out = []
    for fam in families.FAMILIES:
        group = [f for f in figs if f.family == fam.name]
        if group:
            out.append(
                f'<h3 id="{escape(anchor)}-{fam.name}">{escape(fam.title)}{suffix}</h3>'
                f'<p class="small">{caption_html(fam.caption)}</p><div class="grid">'
                + "".join(figure_html(f, *dirs) for f in group)
                + "</div>"
            )
    return out


def document(title: str, body: Sequence[str], css: str = "") -> str:
    """A self-contained page: ``body``'s parts (empty ones left out) under ``title``, with the
    style sheet and ``css``."""
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{CSS}{css}</style></head><body>"
        + "\n".join(b for b in body if b)
        + "</body></html>\n"
    )
