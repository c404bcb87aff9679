"""The comparison page ``<results>/compare/<name>/index.html`` (docs/comparing.md): one
self-contained HTML file in the run report's style (templates/compare.html.j2), what differs
between the runs first."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from numa_effects import stats
from numa_effects.compare import statistics as compare_stats
from numa_effects.compare import tables as compare_tables
from numa_effects.plan.grid import KEYS
from numa_effects.report import families, markup
from numa_effects.report.empty import PageFacts
from numa_effects.report.figures import from_dict
from numa_effects.report.markup import data_table, family_blocks, section_links

# compare.csv's columns the page shows after run, the keys and each axis compared across
CELL_COLUMNS = [
    *("latency_statistic", "latency_baseline_ms", "latency_compared_ms", "latency_change_pct"),
    *("latency_change_ci_low_pct", "latency_change_ci_high_pct", "significant", "verdict"),
    *("ci_method", "replicates_baseline", "replicates_compared", "contended", "noisy", "status"),
    "ci_note",
]
# summary.csv's columns the page shows
HIDDEN = ("run", "baseline_run", "latency_statistic", "geomean_ratio", "ci_df", "min_effect_pct")
SUMMARY_SHOWN = [c for c in compare_tables.SUMMARY_COLUMNS if c not in HIDDEN]
UNMATCHED = compare_tables.UNMATCHED_COLUMNS
# the navigation's links around the figure sections: (anchor, heading)
BEFORE = ("differences", "Differences"), ("summary", "Summary")
AFTER = ("unmatched", "One run only"), ("cells", "Cells"), ("provenance", "Provenance")


def _links(pairs) -> list[dict]:
    return [{"anchor": a, "heading": h, "highlight": False} for a, h in pairs]


def _present(columns: list[str], df: pd.DataFrame) -> list[str]:
    return [c for c in columns if c in df]


def _pct(v) -> str:
    return f"{float(v):+.1f} %" if stats.present(v) else "–"


def _ratio_pct(ratio: float) -> str:
    return _pct((ratio - 1.0) * 100.0)


def _wide(provenance: pd.DataFrame, labels: Sequence[str]) -> pd.DataFrame:
    if provenance.empty:
        return pd.DataFrame(columns=["category", "fact", *labels, "differs"])
    p, keys = provenance.astype({"run": str}), ["category", "fact"]
    wide = p.pivot_table(index=keys, columns="run", values="value", aggfunc="first", sort=False)
    differs = p.groupby(keys, sort=False)["differs"].first()
    wide = wide.reset_index().merge(differs.reset_index(), on=keys, how="left")
    return wide.reindex(columns=["category", "fact", *labels, "differs"])


def _facts_table(wide: pd.DataFrame, labels: Sequence[str]) -> dict:
    """Each fact's value per run, those that differ highlighted."""
    rows = []
    for r in wide.to_dict("records"):
        cls = "t differs" if r.get("differs") is True else "t"
        cells = [(r["category"], "t"), (r["fact"], "t"), *((r.get(x), cls) for x in labels)]
        rows.append({"cls": None, "cells": cells})
    return {"head": ["category", "fact", *labels], "rows": rows}


def _sentence(row: dict) -> dict:
    """A compared run's summary.csv row with its changes as text."""
    ci = None
    if pd.notna(row["geomean_ci_low_pct"]):
        ci = (_pct(row["geomean_ci_low_pct"]), _pct(row["geomean_ci_high_pct"]))
    change, effect = _pct(row["geomean_change_pct"]), f"{row['min_effect_pct']:g}"
    return {**row, "geomean": change, "ci": ci, "min_effect": effect}


def _summary(summary: pd.DataFrame, compare: pd.DataFrame) -> dict:
    """Per compared run its sentence and summary.csv rows; the cells not assessed."""
    runs = [
        {**_sentence(g.to_dict("records")[0]), "table": data_table(g, _present(SUMMARY_SHOWN, g))}
        for _, g in summary.groupby("run", sort=False)
    ]
    na = compare[compare["verdict"] == compare_stats.NOT_ASSESSED] if runs else compare.iloc[:0]
    if na.empty:
        return {"summary": runs, "not_assessed": None}
    notes = na["ci_note"].dropna().astype(str)
    note = notes.mode().iloc[0] if not notes.empty else "no CI"
    return {"summary": runs, "not_assessed": {"n": len(na), "note": note}}


def _peaks(peaks: pd.DataFrame | None, summary: pd.DataFrame) -> list[dict]:
    """Per compared run: how the peak kernels both runs measured changed, beside the cells'."""
    out = []
    for run, p in [] if peaks is None else peaks.groupby("run", sort=False):
        # the kernels' time, compared / baseline (+ = slower, like latency)
        ratio = p["peak_baseline_gflop_per_s"] / p["peak_compared_gflop_per_s"]
        gm = compare_stats.geomean_ratio(ratio.tolist())["geomean"]
        cells = summary[(summary["run"] == run) & (summary["scope"] == compare_tables.ALL)]
        shift = cells["geomean_change_pct"].head(1).dropna()  # the one ALL row, if it has a value
        out.append(
            {
                "run": run,
                "low": _ratio_pct(ratio.min()),
                "high": _ratio_pct(ratio.max()),
                "geomean": _ratio_pct(gm),
                "cells": _pct(shift.iloc[0]) if len(shift) else None,
                "table": data_table(p, [c for c in p.columns if c != "baseline_run"]),
            }
        )
    return out


def _change(ratios: pd.Series) -> dict:
    g = compare_stats.geomean_ratio(ratios.tolist())
    return {
        k: _ratio_pct(g[c])
        for k, c in (("geomean", "geomean"), ("low", "ci_low"), ("high", "ci_high"))
    }


def _canary(compare: pd.DataFrame) -> list[dict] | None:
    """Per compared run: the canary's change, and the cells' geometric mean change plain and at
    the baseline's reference speed (None without a ratio at the reference speed)."""
    if "speed_ratio" not in compare or not compare["speed_ratio"].notna().any():
        return None
    out = []
    for run, c in compare.groupby("run", sort=False):
        c = c[c["speed_ratio"].notna()]
        if not c.empty:
            canary = _change(1.0 + c["canary_change_pct"] / 100.0)["geomean"]
            plain, at = _change(c["ratio"]), _change(c["speed_ratio"])
            out.append({"run": run, "n": len(c), "canary": canary, "plain": plain, "at": at})
    return out


def _sections(figs, page_dir: str, figure_dir: str, facts: PageFacts) -> list[dict]:
    """The comparison page's figure sections: per run, its family blocks (or why none)."""
    out = []
    for key, sec in families.page_sections(families.COMPARE_PAGE).items():
        mine = [f for f in figs if f.spec.section == key]
        runs = [
            family_blocks(
                [f for f in mine if f.run == run], run, (figure_dir, page_dir), f": {run}"
            )
            for run in sorted({f.run for f in mine})
        ]
        why = None if mine else sec.empty(facts)
        out.append({"anchor": sec.anchor, "heading": sec.heading, "why": why, "runs": runs})
    return out


def render(
    settings: dict,
    figure_list: Sequence[dict],
    compare: pd.DataFrame,
    summary: pd.DataFrame,
    provenance: pd.DataFrame,
    unmatched: pd.DataFrame,
    machines: dict,
    *,
    page_dir: str,
    figure_dir: str,
    peaks: pd.DataFrame | None = None,
) -> str:
    """The page; ``settings``: ``compare.settings``, ``peaks``: ``compare.tables.peak_table``."""
    labels = list(settings["labels"])
    figs = [from_dict(d) for d in figure_list]
    facts = PageFacts(compare, pd.DataFrame(), [], False)
    wide = _wide(provenance, labels)
    across = settings.get("across") or []
    compared = [f"{a}_compared" for a in across]  # each axis compared across
    only_in = unmatched["only_in"].value_counts(sort=False).items() if not unmatched.empty else []
    return markup.render(
        "compare.html.j2",
        title=f"Comparison: {settings['name']}",
        matched="every axis" if not across else f"every axis but {', '.join(across)}",
        keys=", ".join(KEYS),
        stat=stats.compared_statistics(compare, "median"),
        min_effect=f"{settings['min_effect_pct']:g}",
        runs=list(zip(labels, settings["runs"], strict=True)),
        links=[*_links(BEFORE), *section_links(families.COMPARE_PAGE), *_links(AFTER)],
        machines={"same": machines.get("same"), "differ": machines.get("differ") or []},
        differ=_facts_table(wide[wide["differs"].map(stats.as_bool).eq(True)], labels),
        when=_facts_table(wide[wide["category"] == "when"], labels),
        baseline=settings["baseline"],
        **_summary(summary, compare),
        peaks=_peaks(peaks, summary),
        canary=_canary(compare),
        sections=_sections(figs, page_dir, figure_dir, facts),
        only_in="; ".join(f"{n} only in {k}" for k, n in only_in),
        unmatched=data_table(unmatched, [c for c in UNMATCHED if c != "baseline_run"]),
        cells=data_table(compare, _present(["run", *KEYS, *compared, *CELL_COLUMNS], compare)),
        provenance=_facts_table(wide, labels),
    )
