"""The report's first section, "What to deploy" (templates/deploy.html.j2): one table per
objective of ``tables/recommendation.csv``, and the throughput answer under load (its figure, or
the line saying why there is none)."""

from __future__ import annotations

import os

import pandas as pd

from numa_effects.report import families
from numa_effects.tables import deploy

HEADING, ANCHOR = "What to deploy", "what-to-deploy"
HEAD = ("", "optimization", "allocator", "instances", "CPUs", "value", "gain", "command", "notes")


def _s(v) -> str:
    return "" if v is None or (isinstance(v, float) and v != v) else str(v)


def _n(v) -> str:
    return f"{v:.3g}" if isinstance(v, float) and v == v else _s(v)


def _value(r) -> str:
    v, lo, hi, measured = deploy.shown(r)
    if v == "?":  # a factor's configuration the job did not measure
        return "not measured"
    ci = f" [{_n(lo)}, {_n(hi)}]" if lo == lo and hi == hi else ""
    return f"{_n(v)}{ci}" + ("" if measured else " (predicted)")


def _row(r, objective: str) -> dict:
    recommended = r["role"] == "recommended"
    return {
        "cls": "rec" if recommended else None,
        "role": r["role"],
        "baseline": _s(r["baseline"]),
        "factor": _s(r.get("factor")),
        "same": deploy.text(r["baseline"]),
        "where": [_s(r[k]) for k in ("opt", "allocator", "layout", "cpus")],
        "value": _value(r),
        "gain": "" if recommended else deploy.gain_words(r, objective),
        "command": _s(r["command"]),
        "notes": _s(r["notes"]),
    }


def under_load(png: str | None, note: str | None, page_dir: str) -> dict | None:
    """The load test's figure (``png`` and its SVG, relative to the page) with its caption, else
    ``note``, why there is none (``Plan.loadtest_note``); None: neither."""
    if not png:
        return {"png": None, "note": note} if note else None
    rel = os.path.relpath(png, page_dir)
    return {"png": rel, "svg": rel.removesuffix(".png") + ".svg", "caption": families.UNDER_LOAD}


def section(df: pd.DataFrame | None, loaded: dict | None = None) -> dict:
    """The section's data: its heading and anchor, its tables (none: the page says why) and
    ``loaded``, the answer under load (``under_load``)."""
    groups = [] if df is None else df.groupby(["model", "objective"], sort=False)
    tables = [
        {
            "model": model,
            "objective": objective,
            "unit": g["unit"].iloc[0],
            "head": HEAD,
            "rows": [_row(r, objective) for _, r in g.iterrows()],
        }
        for (model, objective), g in groups
    ]
    return {"heading": HEADING, "anchor": ANCHOR, "tables": tables, "under_load": loaded}
