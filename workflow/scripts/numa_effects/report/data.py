"""The report's data: the tidy tables loaded and shaped for the figures (pandas, no matplotlib,
so the report page loads them cheaply). Every cell a figure should show has a status, so the
drawing never shows a cell without a value as 0."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from numa_effects import stats
from numa_effects.plan import binding as binding_mod
from numa_effects.plan import grid as grid_mod
from numa_effects.plan import placement as placement_mod
from numa_effects.plan.grid import KEYS
from numa_effects.report import style
from numa_effects.report.baselines import base_variant, figure_allocator, is_sequential
from numa_effects.report.metrics import METRICS, Metric, pct_columns
from numa_effects.tables import tidy

DISTURBED = ("contended", "noisy")  # boolean cells.csv columns: the timing is not clean
# Statuses of a cell with no value, in the order a comparison of two cells takes the worse one.
NO_VALUE = ("missing", "skipped", "contended", "failed")
AXES = ("threads", "batch_size")  # a figure's cells: every combination of these that appears


def read_csv(path) -> pd.DataFrame:
    """A tidy table (``tables.tidy.read``) with every key column (an old table's get defaults)."""
    return grid_mod.keyed(tidy.read(path, KEYS))


def flag(df: pd.DataFrame, columns=DISTURBED) -> pd.Series:
    """True where any of the boolean ``columns`` is true; absent columns and blanks are false."""
    out = pd.Series(False, index=df.index, dtype=bool)
    for c in columns:
        if c in df:
            out |= df[c].map(stats.as_bool).eq(True)
    return out


@dataclass
class Tables:
    cells: pd.DataFrame
    skipped: pd.DataFrame
    degradation: pd.DataFrame | None = None
    packing: pd.DataFrame | None = None  # tables/packing.csv (the Packing section)
    interference: pd.DataFrame | None = None  # tables/interference.csv (the profile)
    compare: pd.DataFrame | None = None  # compare/<name>/tables/compare.csv (a comparison)
    precision: pd.DataFrame | None = None  # tables/precision.csv (Precision and runtime)
    memory_matrix: pd.DataFrame | None = None  # tables/memory_matrix.csv (Node-pair matrix)

    def __post_init__(self):
        self.cells = grid_mod.keyed(self.cells)
        self.skipped = grid_mod.keyed(self.skipped)
        self.degradation = grid_mod.keyed(self.degradation)

    @classmethod
    def load(cls, cells=None, skipped=None, degradation=None, **optional) -> Tables:
        """The tables from their paths; ``optional``: the other fields' paths (None: absent)."""
        machine_facts = ("interference", "memory_matrix")  # no cell keys
        return cls(
            read_csv(cells),
            read_csv(skipped),
            read_csv(degradation) if degradation else None,
            **{
                k: (tidy.read if k in machine_facts else read_csv)(v) if v else None
                for k, v in optional.items()
            },
        )

    @property
    def allocator(self) -> str:
        """The allocator of the figures that do not tell allocators apart."""
        names = [*self.cells.get("allocator", []), *self.skipped.get("allocator", [])]
        return figure_allocator(names)

    @property
    def latency_stat(self) -> str:
        """``median`` when the cells have medians, else ``mean`` (PackRat imports)."""
        return stats.table_statistic(self.cells)

    @property
    def latency_column(self) -> str:
        return stats.latency_column(self.latency_stat)

    def statuses(self) -> pd.DataFrame:
        """Keys, ``status`` (ok / failed / contended / skipped), ``reason`` and ``disturbed``
        (contended or noisy) of every known cell."""
        c = self.cells
        rows = pd.DataFrame(columns=[*KEYS, "status", "reason"])
        if not c.empty:
            status = c["status"] if "status" in c else pd.Series("ok", index=c.index)
            status = status.where(status.isin(["ok", "contended"]), "failed")
            reason = c["failure_cause"] if "failure_cause" in c else pd.Series(None, index=c.index)
            keys = pd.DataFrame({k: c[k] for k in KEYS})
            rows = keys.assign(status=status, reason=reason, disturbed=flag(c))
        s = self.skipped
        if not s.empty:
            sk = pd.DataFrame(
                {**{k: s[k] for k in KEYS}, "status": "skipped", "reason": s.get("reason")}
            )
            sk = sk[~sk.set_index(list(KEYS)).index.isin(rows.set_index(list(KEYS)).index)]
            rows = pd.concat([rows, sk], ignore_index=True) if not rows.empty else sk
        rows = rows.astype({"threads": int, "batch_size": int})
        if "disturbed" not in rows:
            rows["disturbed"] = False
        rows["disturbed"] = rows["disturbed"].eq(True)
        return rows.reset_index(drop=True)

    def universe(self, model: str, every_allocator: bool = False) -> pd.DataFrame:
        """Every cell a figure of ``model`` should show: the (opt, placement, allocator) that
        appear for it (the figure allocator's only, unless ``every_allocator``) x its threads x
        its batch sizes, with ``status`` (``missing``: in no table), ``disturbed`` and each
        metric's value (``lat``, ``thr``; NaN without a value), CI and ``<key>_status``."""
        st = self.statuses()
        st = st[st["model"] == model]
        if not every_allocator:
            st = st[st["allocator"] == self.allocator]
        grid = _by_threads_and_batch(st, [k for k in KEYS if k not in ("model", *AXES)])
        grid.insert(0, "model", model)
        u = grid.merge(st, on=list(KEYS), how="left")
        u["status"] = u["status"].fillna("missing")
        u["disturbed"] = u["disturbed"].eq(True)
        c = self.cells
        stat = self.latency_stat
        cols = {}
        for m in METRICS:
            cols[m.column(stat)] = m.key
            ci = m.ci_columns(stat)
            if ci and ci[0] in c and ci[1] in c:
                cols[ci[0]], cols[ci[1]] = f"{m.key}_lo", f"{m.key}_hi"
        have = [k for k in cols if k in c]
        vals = c[c["model"] == model][[*KEYS, *have]].rename(columns=cols) if not c.empty else None
        if vals is not None and not vals.empty:
            vals = vals.astype({"threads": int, "batch_size": int})
            u = u.merge(vals, on=list(KEYS), how="left")
        for m in METRICS:
            if m.key not in u:
                u[m.key] = np.nan
            u.loc[u["status"].ne("ok"), m.key] = np.nan
            u[f"{m.key}_status"] = value_status(u["status"], u[m.key])
        return u


def _by_threads_and_batch(d: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """The distinct rows of ``columns`` of ``d`` x every threads x every batch size of ``d``."""
    grid = d[columns].drop_duplicates()
    for axis in AXES:
        grid = grid.merge(pd.DataFrame({axis: sorted(d[axis].unique())}), how="cross")
    return grid


def value_status(status: pd.Series, value: pd.Series) -> np.ndarray:
    """A figure value's status: the cell's or pair's when not ``ok``, else ``missing`` without
    a value."""
    return np.where(status.ne("ok"), status, np.where(value.isna(), "missing", "ok"))


def sequential(u: pd.DataFrame) -> pd.DataFrame:
    """The rows of a universe run with the ``sequential`` placement (``sequential+smt``)."""
    return u[u["placement"].map(is_sequential)]


def with_baseline(d: pd.DataFrame, base: pd.DataFrame, on: list[str], status: str):
    """``d`` beside its baseline's rows ``base`` (``<column>_base``, matched on ``on``):
    ``disturbed`` when either is, ``pair_status`` the worse of the two cells' ``status``."""
    d = d.merge(base, on=on, how="left", suffixes=("", "_base"))
    d["disturbed"] = d["disturbed"] | d.pop("disturbed_base").eq(True)
    a, b = d[status], d[f"{status}_base"].fillna("missing")
    d["pair_status"] = pd.Series("ok", index=d.index, dtype=object)
    for s in NO_VALUE:
        d["pair_status"] = d["pair_status"].mask(a.eq(s) | b.eq(s), s)
    return d


def comparison(tables: Tables, model: str, opt: str, metric: Metric) -> pd.DataFrame:
    """Per (placement that is not a baseline, threads, batch size): its baseline's label
    (``baseline_label``), the degradation row (``pct``...) and the pair status; ``disturbed``:
    either cell was contended or noisy (cells.csv or degradation.csv)."""
    if tables.degradation is None:
        raise ValueError("this figure needs the degradation table")
    u = tables.universe(model)
    u = u[u["opt"] == opt]
    status = f"{metric.key}_status"
    is_base = u["placement"].map(placement_mod.is_baseline)
    base = u[is_base][["placement", "threads", "batch_size", "allocator", status, "disturbed"]]
    base = base.rename(columns={"placement": "baseline_label"})
    other = u[~is_base].copy()
    other["baseline_label"] = other["placement"].map(placement_mod.baseline_of)
    d = with_baseline(other, base, ["baseline_label", "threads", "batch_size", "allocator"], status)
    g = tables.degradation
    g = g[(g["model"] == model) & (g["opt"] == opt) & (g["allocator"] == tables.allocator)]
    if "baseline" in g:
        g = g[g["baseline"].fillna(placement_mod.BASELINE).map(placement_mod.is_baseline).eq(True)]
    cols = {**metric.degradation_columns, "significant": "sig", "ci_method": "deg_method"}
    keep = [c for c in cols if c in g]
    stat = ["latency_statistic"] if "latency_statistic" in g else []
    g = g.assign(deg_disturbed=flag(g))[[*KEYS, *keep, *stat, "deg_disturbed"]]
    g = g.rename(columns=cols).astype({"threads": int, "batch_size": int})
    d = d.merge(g, on=list(KEYS), how="left")
    d["disturbed"] = d["disturbed"] | d.pop("deg_disturbed").eq(True)
    # one measurement under two names (degradation.csv ``identical binding``): no difference
    same = d.pop("deg_method").eq(binding_mod.IDENTICAL) if "deg_method" in d else False
    d["pair_status"] = d["pair_status"].mask(same & d["pair_status"].eq("ok"), style.SAME_BINDING)
    return with_status(d, "pct")


def with_status(d: pd.DataFrame, value: str) -> pd.DataFrame:
    """``value``, its CI (``_lo``, ``_hi``) and ``sig`` only where ``pair_status`` is ok, and
    ``<value>_status``: the pair's status, else ``missing`` without a value."""
    cols = [value, f"{value}_lo", f"{value}_hi"]
    for c in cols:
        if c not in d:
            d[c] = np.nan
    if "sig" not in d:
        d["sig"] = None
    d.loc[d["pair_status"] != "ok", cols] = np.nan
    d[f"{value}_status"] = value_status(d["pair_status"], d[value])
    return d


def node_pair_rows(tables: Tables, model: str, opt: str, metric: Metric) -> pd.DataFrame:
    """The node-pair cells (``n{cpu}m{mem}``) of ``model`` and ``opt``, with ``cpu_node``,
    ``mem_node``, the cell's value and its change against the CPU node's local diagonal
    (``comparison``'s ``pct``... columns); a diagonal cell with a value has ``pct`` 0 and
    ``pct_status`` ``baseline``."""
    u = tables.universe(model)
    u = u[u["opt"] == opt]
    pairs = u["placement"].map(placement_mod.pair_of)
    u = u[pairs.notna()].copy()
    cols = ["pct", "pct_lo", "pct_hi", "sig", "pct_status"]
    if u.empty:
        return u.assign(cpu_node=[], mem_node=[], **{c: [] for c in cols})
    u["cpu_node"] = [p[0] for p in pairs[pairs.notna()]]
    u["mem_node"] = [p[1] for p in pairs[pairs.notna()]]
    on = ["placement", "threads", "batch_size"]
    c = comparison(tables, model, opt, metric)
    c = c[c["placement"].map(placement_mod.pair_of).notna()]
    c = c[[*on, *cols, "disturbed"]].rename(columns={"disturbed": "pair_disturbed"})
    d = u.merge(c, on=on, how="left")
    d["disturbed"] = d["disturbed"] | d.pop("pair_disturbed").eq(True)
    diag = d["cpu_node"] == d["mem_node"]
    has = d[f"{metric.key}_status"].eq("ok")
    d.loc[diag & has, "pct"] = 0.0
    d.loc[diag, "pct_status"] = np.where(has[diag], "baseline", d.loc[diag, f"{metric.key}_status"])
    d["pct_status"] = d["pct_status"].fillna("missing")
    d["sig"] = d["sig"].map(stats.as_bool).astype(object)  # True, False or None (not assessed)
    return d.astype({"cpu_node": int, "mem_node": int}).reset_index(drop=True)


def run_change(tables: Tables, run: str, model: str, opt: str) -> pd.DataFrame:
    """The rows of ``compare.csv`` of one compared run, model and optimization shaped like
    ``comparison``'s (``pct`` the % latency change; ``sig`` None when not assessed), on every
    (placement, threads, batch size) they span (``missing``: in one run only)."""
    if tables.compare is None:
        raise ValueError("this figure needs the comparison table (compare.csv)")
    c = tables.compare
    c = c[(c["run"].astype(str) == str(run)) & (c["model"] == model) & (c["opt"] == opt)]
    c = c.astype({"threads": int, "batch_size": int})
    d = _by_threads_and_batch(c, ["placement"]).merge(c, on=["placement", *AXES], how="left")
    for col, to in pct_columns("latency_change").items():
        d[to] = d[col].astype(float)
    d["sig"] = d["significant"].map(stats.as_bool)
    status = d["status"].where(d["status"].notna(), "missing").astype(str)
    d["pct_status"] = np.where(status.eq("ok") & d["pct"].isna(), "missing", status)
    d["disturbed"] = flag(d)
    return d.reset_index(drop=True)


def precision_rows(tables: Tables, model: str, batch_size: int, metric: Metric):
    """The ``sequential`` cells of one batch size but the baseline variant (``base_variant``),
    with their speedup over it (precision.csv: ``speedup``, ``_lo``, ``_hi``, ``sig``) and
    ``speedup_status`` from the cells; and the baseline's allocator."""
    if tables.precision is None:
        raise ValueError("this figure needs the precision table")
    u = sequential(tables.universe(model, every_allocator=True))
    u = u[u["batch_size"] == batch_size]
    st = f"{metric.key}_status"
    base_opt, base_alloc = base_variant(u["allocator"])
    is_base = (u["opt"] == base_opt) & (u["allocator"] == base_alloc)
    base = u[is_base][["placement", "threads", st, "disturbed"]]
    d = with_baseline(u[~is_base], base, ["placement", "threads"], st)
    p = tables.precision
    p = p[(p["model"] == model) & (p["batch_size"] == batch_size)]
    on = ["placement", "threads", "opt", "allocator"]
    cols = {"speedup_ci_low": "speedup_lo", "speedup_ci_high": "speedup_hi", "significant": "sig"}
    p = p[[c for c in [*on, "speedup", *cols] if c in p]].rename(columns=cols)
    d = d.merge(p.astype({"threads": int}), on=on, how="left")
    return with_status(d, "speedup"), base_alloc
