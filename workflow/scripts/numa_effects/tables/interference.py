"""``tables/interference.csv`` (docs/packing.md): the slowdown of k identical instances of t
threads side by side against one of them alone, one row per (model, opt, budget, threads, k,
node): a group spanning nodes has a row per node (``node`` ``0+1`` for an instance straddling
both). ``x`` = the other busy cores beside each instance, the model's variable
(``analysis.interference``). PackRat's multi-instance runs import into the same columns.

Per replicate r (the instance alone, then the group, back to back in one job), a node's round
latency is the slowest of its instances' in that round (clean rounds only), g_r its median, a_r
the alone instance's, q_r = g_r / a_r. The slowdown is the geometric mean of the q_r with the
two-level CI (``stats.combine_replicates``, moderated with the pool over the table's points: the
spread between replicates holds both processes' variation); with one replicate, a bootstrap over
the rounds (``within-process``).
"""

from __future__ import annotations

import math
from datetime import datetime

import numpy as np
import pandas as pd

from numa_effects import stats
from numa_effects.analysis import interference
from numa_effects.measure.record import GroupRecord, Record
from numa_effects.tables import packing as packing_table

SLOWDOWN = ("slowdown", "slowdown_ci_low", "slowdown_ci_high", "ci_df", "ci_method")
COLUMNS = [
    *("model", "opt", "budget", "threads", "batch_size", "k", "node", "k_node", "busy_cores", "x"),
    *("alone_ms", "latency_ms"),
    *SLOWDOWN,
    *("replicates", "rounds", "alone_rounds", "contended", "core_map", "status", "failure"),
    *("job_s", "allocator", "source", "source_file"),
]
MEASURED = "measured here"


def _node_of(inst: dict) -> str:
    nodes = inst["plan"].get("cpu_nodes") or inst["plan"].get("mem_nodes") or [0]
    return "+".join(str(n) for n in nodes)


def node_rounds(rec: Record, node: str) -> list[float]:
    """Per clean round of a group record, the slowest of one node's instances' durations."""
    insts = [i for i in rec.instances if _node_of(i) == node]
    slowest = [max(r) for r in zip(*(i["latencies_s"] for i in insts), strict=True)]
    return packing_table.clean_rounds(rec, slowest)


def _wall_s(result: GroupRecord) -> float:
    p = result.provenance
    try:
        a = datetime.fromisoformat(str(p["started_at"]))
        b = datetime.fromisoformat(str(p["finished_at"]))
    except (KeyError, ValueError, TypeError):
        return math.nan
    return (b - a).total_seconds()


def _median_and_var(xs: list[float]) -> tuple[float, float]:
    s = stats.summarize(xs)
    return s["median_s"], stats.within_log_var(xs)


def _pairs(result: GroupRecord, name: str, node: str) -> dict:
    """Per replicate: (q_r, within var of ln q_r), the alone and node rounds."""
    alone, group = result.runs["k1"], result.runs[name]
    out = {"q": [], "w": [], "a": [], "g": [], "alone_rounds": [], "rounds": []}
    for a_rec, g_rec in zip(alone, group, strict=False):
        if not (packing_table.measured(a_rec) and packing_table.measured(g_rec)):
            continue
        ar = packing_table.clean_rounds(a_rec)
        gr = node_rounds(g_rec, node)
        if not ar or not gr:
            continue
        a, wa = _median_and_var(ar)
        g, wg = _median_and_var(gr)
        out["q"].append(g / a)
        out["w"].append(wa + wg)
        out["a"].append(a)
        out["g"].append(g)
        out["alone_rounds"] += ar
        out["rounds"] += gr
    return out


def _groups(result: GroupRecord) -> list[tuple[str, int, str, list[dict]]]:
    """(name, k, node, that node's instances of the first measured replicate) per group."""
    out = []
    for name, recs in result.runs.items():
        if name == "k1":
            continue
        k = int(name[1:])
        rec = next((r for r in recs if r.instances), None)
        if rec is None:
            out.append((name, k, "", []))
            continue
        for node in sorted({_node_of(i) for i in rec.instances}):
            out.append((name, k, node, [i for i in rec.instances if _node_of(i) == node]))
    return out


def _base(result: GroupRecord) -> dict:
    j = result.job
    return {
        "model": j["model"],
        "opt": j["opt"],
        "budget": int(j["budget"]),
        "threads": int(j["threads"]),
        "batch_size": int(j["batch"]),
        "job_s": _wall_s(result),
        "source": MEASURED,
    }


def rows(results: list[GroupRecord]) -> list[dict]:
    """The table's rows from profile records (see the module docstring)."""
    out, pending = [], []
    for res in results:
        base = _base(res)
        if res.status != "ok":
            f = packing_table.failure_text(res.failure)
            ks = res.job["instances"]
            out += [{**base, "k": int(k), "status": "failed", "failure": f} for k in ks]
            continue
        placements = res.placements
        for name, k, node, insts in _groups(res):
            t = base["threads"]
            row = {
                **base,
                "k": k,
                "node": node,
                "k_node": len(insts),
                "busy_cores": t * len(insts),
                "x": t * (len(insts) - 1),
                "core_map": packing_table.core_map_text(placements.get(name)),
                "contended": any(
                    packing_table.contended(r) for r in [*res.runs["k1"], *res.runs[name]]
                ),
            }
            pending.append((row, _pairs(res, name, node) if insts else None))
    pooled = stats.pooled_replicate_var([p["q"] for _, p in pending if p and p["q"]])
    for row, p in pending:
        if not p or not p["q"]:
            row.update(status="contended", replicates=0)
        else:
            row.update(status="ok", **_slowdown(p, pooled))
        out.append(row)
    return out


def _slowdown(p: dict, pooled) -> dict:
    """A measured group's columns from its replicates' pairs (``_pairs``): the geometric means,
    the slowdown and its CI (two-level, or with one replicate the rounds' bootstrap)."""
    out = {
        "replicates": len(p["q"]),
        "rounds": len(p["rounds"]),
        "alone_rounds": len(p["alone_rounds"]),
        "alone_ms": math.exp(np.mean(np.log(p["a"]))) * 1e3,
        "latency_ms": math.exp(np.mean(np.log(p["g"]))) * 1e3,
    }
    est = stats.combine_replicates(p["q"], p["w"], pooled)
    got = (est["median_s"], est["ci_low_s"], est["ci_high_s"], est["ci_df"], stats.TWO_LEVEL)
    if est["ci_method"] != stats.TWO_LEVEL:  # one replicate, nothing to pool: its rounds
        lo, hi = stats.bootstrap_ratio(np.array(p["alone_rounds"]), np.array(p["rounds"]))
        got = (p["q"][0], lo, hi, math.inf, stats.WITHIN)
    return out | dict(zip(SLOWDOWN, got, strict=True))


def table(results: list[GroupRecord]) -> pd.DataFrame:
    df = pd.DataFrame(rows(results), columns=COLUMNS)
    return df.sort_values(["model", "opt", "budget", "threads", "k", "node"]).reset_index(drop=True)


def points(df: pd.DataFrame, model: str | None = None, opt: str | None = None) -> list:
    """The ``ok`` rows of one (model, opt) (None: every row) as ``interference.Point``s."""
    if df is None or df.empty:
        return []
    sel = df[df["status"] == "ok"]
    if model is not None:
        sel = sel[(sel["model"] == model) & (sel["opt"] == opt)]
    out = []

    def num(v, default=math.nan) -> float:
        return float(v) if stats.present(v) else default

    for r in sel.itertuples(index=False):
        if not stats.present(r.slowdown):
            continue
        node = str(r.node) if r.node is not None and r.node == r.node else "0"
        out.append(
            interference.Point(
                x=int(r.x),
                slowdown=num(r.slowdown),
                ci_low=num(r.slowdown_ci_low),
                ci_high=num(r.slowdown_ci_high),
                df=num(r.ci_df, math.inf),
                threads=int(r.threads),
                k=int(r.k),
                node=int(float(node.split("+")[0])),
            )
        )
    return out


def curve(df: pd.DataFrame, model: str, opt: str) -> interference.Curve:
    """The interference model of one (model, opt) fitted on its profile (``NONE``: none)."""
    return interference.fit(points(df, model, opt))


def curves(df: pd.DataFrame | None) -> dict:
    """{(model, opt): the fitted model} of every profiled (model, opt) of a profile table."""
    if df is None or df.empty:
        return {}
    pairs = df[["model", "opt"]].drop_duplicates().itertuples(index=False)
    return {(m, o): curve(df, m, o) for m, o in pairs}


def cost(df: pd.DataFrame) -> dict:
    """Jobs, groups and wall seconds of the profile (measured here)."""
    if df is None or df.empty:
        return {"jobs": 0, "groups": 0, "wall_s": 0.0}
    here = df[df["source"] == MEASURED]
    jobs = here.drop_duplicates(["model", "opt", "budget", "threads"])
    return {
        "jobs": len(jobs),
        "groups": len(here.drop_duplicates(["model", "opt", "budget", "threads", "k"])),
        "wall_s": float(np.nansum(jobs["job_s"].to_numpy(dtype=float))),
    }
