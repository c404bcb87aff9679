"""The report's first section, "What to deploy": one table per objective of
``tables/recommendation.csv``."""

from __future__ import annotations

import html

import pandas as pd

from numa_effects.tables import deploy

HEADING, ANCHOR = "What to deploy", "what-to-deploy"
HEAD = ("", "optimization", "allocator", "instances", "CPUs", "value", "gain", "command", "notes")


def _e(v) -> str:
    return html.escape("" if v is None or (isinstance(v, float) and v != v) else str(v))


def _n(v) -> str:
    return f"{v:.3g}" if isinstance(v, float) and v == v else ("" if v != v else _e(v))


def _value(r) -> str:
    v, lo, hi, measured = deploy.shown(r)
    ci = f" [{_n(lo)}, {_n(hi)}]" if lo == lo and hi == hi else ""
    return f"{_n(v)}{ci}" + ("" if measured else " (predicted)")


def _who(r) -> str:
    if r["role"] == "baseline":
        return _e(r["baseline"])
    who = "<b>recommended</b>" if r["role"] == "recommended" else "candidate"
    same = deploy.text(r["baseline"])
    return who + (f" (= {_e(same)})" if same else "")


def _row(r, objective: str) -> str:
    gain = "" if r["role"] == "recommended" else _e(deploy.gain_words(r, objective))
    where = (_e(r[k]) for k in ("opt", "allocator", "layout", "cpus"))
    cells = [_who(r), *where, _value(r), gain, f"<code>{_e(r['command'])}</code>", _e(r["notes"])]
    cls = ' class="rec"' if r["role"] == "recommended" else ""
    return f"<tr{cls}>" + "".join(f'<td class="t">{c}</td>' for c in cells) + "</tr>"


def html_section(df: pd.DataFrame | None) -> str:
    """The section's HTML (heading included); a line saying why when there is no answer."""
    out = [f'<h2 id="{ANCHOR}">{HEADING}</h2>']
    if df is None or df.empty:
        out.append(
            '<p class="why">No answer: the run measured no isolated profiles '
            "(the <code>sequential</code> placement) or <code>deploy.enabled</code> "
            "is false (docs/deploy.md).</p>"
        )
        return "\n".join(out)
    out.append(
        "<p>Per objective, the configuration to deploy, measured beside the layouts other "
        "tools choose by rule, in alternating rounds; gains are the recommended "
        "configuration's, with paired 95 % CIs over the rounds (tables/recommendation.csv, "
        "docs/deploy.md).</p>"
    )
    for (model, objective), g in df.groupby(["model", "objective"], sort=False):
        unit = g["unit"].iloc[0]
        out.append(f"<h3>{_e(model)}: {_e(objective)} ({_e(unit)})</h3>")
        out.append(
            '<div class="scroll"><table class="data"><tr>'
            + "".join(f"<th>{_e(h)}</th>" for h in HEAD)
            + "</tr>"
        )
        out += [_row(r, objective) for _, r in g.iterrows()]
        out.append("</table></div>")
    return "\n".join(out)
