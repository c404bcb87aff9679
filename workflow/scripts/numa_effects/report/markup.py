"""What both pages (``report.page``, ``compare.page``) give their templates (``templates/`` of
``report`` and ``compare``; autoescaped): table cells as text, figure blocks, section links,
and the environment that renders them."""

from __future__ import annotations

import html
import os
import re
from pathlib import Path

import jinja2
import numpy as np
import pandas as pd
from markupsafe import Markup

from numa_effects.report import families
from numa_effects.tables.tidy import INTEGER_COLUMNS

PACKAGE = Path(__file__).resolve().parents[1]
FOLDERS = [PACKAGE / "report" / "templates", PACKAGE / "compare" / "templates"]
# a caption's inline markup: ``code``, and *emphasis* not inside a word or around a bare *
CODE = re.compile(r"``(.+?)``")
EMPHASIS = re.compile(r"(?<![\w*])\*(\S(?:.*?\S)?)\*(?![\w*])")


def _text(v) -> str:
    """How a value prints on a page: None as nothing, markup as it is, anything else escaped
    (``html.escape``: quotes as ``&quot;`` and ``&#x27;``)."""
    return v if isinstance(v, Markup) else Markup(html.escape("" if v is None else str(v)))


def inline(rst: str) -> list[tuple[str, str]]:
    """RST with ``code`` and *emphasis* only, as (kind, text) pieces: ``text``, ``code``,
    ``em`` (the ``inline`` macro of macros.html.j2 marks them up)."""
    out: list[tuple[str, str]] = []
    for i, part in enumerate(CODE.split(rst)):
        if i % 2:
            out.append(("code", part))
            continue
        for j, piece in enumerate(EMPHASIS.split(part)):
            if piece:
                out.append(("em" if j % 2 else "text", piece))
    return out


ENV = jinja2.Environment(
    loader=jinja2.FileSystemLoader(FOLDERS),
    autoescape=True,
    finalize=_text,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)
ENV.filters["inline"] = inline


def render(template: str, **data) -> str:
    """The page ``template`` with ``data``."""
    return ENV.get_template(template).render(**data)


def caption_html(rst: str) -> str:
    """A family's caption (RST with ``code`` and *emphasis* only) as HTML."""
    return ENV.get_template("macros.html.j2").module.inline(" ".join(rst.split()))


def _cell(v, column: str) -> tuple[object, str | None]:
    """A table cell: its text and class (``t``: text, left-aligned); an integer column a blank
    made float still prints integers."""
    if isinstance(v, float) and column in INTEGER_COLUMNS and v.is_integer():
        return int(v), None
    if isinstance(v, float) and np.isnan(v):
        return "", None
    if isinstance(v, float):
        return f"{v:,.{2 if abs(v) < 100 else 1}f}", None
    if isinstance(v, bool | np.bool_ | int | np.integer):
        return v, None
    return ("" if v is None or v is pd.NA else v), "t"


def data_table(df: pd.DataFrame, columns: list[str], row_class: str | None = None) -> dict:
    """``columns`` of ``df`` for the ``data_table`` macro; ``row_class``: the column naming
    each row's class."""
    rows = [
        {
            "cls": r.get(row_class) if row_class else None,
            "cells": [_cell(r.get(c), c) for c in columns],
        }
        for r in df.to_dict("records")
    ]
    return {"head": list(columns), "rows": rows}


def figure(fig, figure_dir: str, page_dir: str) -> dict:
    """A figure's PNG and SVG (relative to the page), its alt text and what it shows."""
    what = ", ".join(
        f"{k.replace('batch_size', 'BS')}={v}" for k, v in fig.wildcards.items() if k != "model"
    )
    return {
        "png": os.path.relpath(fig.path(figure_dir), page_dir),
        "svg": os.path.relpath(fig.path(figure_dir, "svg"), page_dir),
        "alt": f"{fig.spec.title}: {fig.model}{', ' + what if what else ''}",
        "what": what or fig.model,
    }


def section_links(page: str) -> list[dict]:
    """The navigation's links to the sections of ``page``; the one it is about stands out."""
    return [
        {"anchor": s.anchor, "heading": s.heading, "highlight": s.highlight}
        for s in families.page_sections(page).values()
    ]


def family_blocks(figs, anchor: str, dirs: tuple[str, str], suffix: str = "") -> list[dict]:
    """Per family with figures among ``figs``, in registry order: its heading (id
    ``<anchor>-<family>``, its title and ``suffix``), caption and figures; ``dirs``: the figure
    and page folders."""
    out = []
    for fam in families.FAMILIES:
        group = [f for f in figs if f.family == fam.name]
        if group:
            out.append(
                {
                    "id": f"{anchor}-{fam.name}",
                    "title": f"{fam.title}{suffix}",
                    "caption": " ".join(fam.caption.split()),
                    "figures": [figure(f, *dirs) for f in group],
                }
            )
    return out
