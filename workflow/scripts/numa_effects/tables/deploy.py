"""``tables/recommendation.csv``: what to deploy, per objective row, with the evidence: one row
per configuration the objective row compares, with its value over the rounds, its prediction,
the recommendation's gain over it (``measure.deploy.gains``) and the commands that start it
(docs/deploy.md, "Reading recommendation.csv"). An import has predictions only."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from numa_effects import stats
from numa_effects.measure import deploy as measured
from numa_effects.measure.record import GroupRecord
from numa_effects.plan import cpulist
from numa_effects.plan import deploy as deploy_mod
from numa_effects.plan import optimizations as optimizations_mod
from numa_effects.tables import deploy_choice as choice

# a configuration's value and interval: measured, predicted; the recommendation's gain over it
VALUE = ("value", "ci_low", "ci_high")
PREDICTED = ("predicted", "predicted_low", "predicted_high")
GAIN = ("gain", "gain_ci_low", "gain_ci_high")
COLUMNS = [
    *["model", "objective", "batch", "role", "baseline", "factor", "config", "opt", "dtype"],
    *["allocator", "layout", "instances", "threads", "cpus", "mem_nodes", "unit"],
    *VALUE,
    *["rounds", "per_core", "tail_ms", "tail_kind", "tail_n", "meets_bound"],
    *PREDICTED,
    *GAIN,
    *["significant", "source", "command", "run_cpu", "notes"],
]


def _shown(objective: str, seconds_or_ips: float) -> float:
    """A value in the table's unit: latency in ms, throughput as is."""
    return seconds_or_ips * 1e3 if objective == deploy_mod.LATENCY else seconds_or_ips


def value_ci(runs: dict, cid: str, objective: str) -> dict:
    """The measured value of one configuration over its rounds: the mean on the log scale
    (the geometric mean) with the t interval of the rounds (each round a new set of processes:
    the interval covers process-to-process and round-to-round spread); NaN without rounds."""
    vals = list(measured.round_values(runs, cid, objective).values())
    if not vals:
        return {**dict.fromkeys(VALUE, math.nan), "rounds": 0}
    logs = np.log(vals)
    centre, half = float(logs.mean()), math.nan
    if len(vals) > 1:
        half = stats.t_quantile(len(vals) - 1) * float(logs.std(ddof=1)) / math.sqrt(len(vals))
    shown = (_shown(objective, math.exp(x)) for x in (centre, centre - half, centre + half))
    return {**dict(zip(VALUE, shown, strict=True)), "rounds": len(vals)}


def _config_columns(config: dict) -> dict:
    opt = optimizations_mod.OPTIMIZATIONS.get(config["opt"])
    insts = config["instances"]
    return {
        "opt": config["opt"],
        "dtype": opt.dtype if opt else None,
        "allocator": config["allocator"],
        "layout": config["label"],
        "instances": len(insts),
        "threads": sum(int(i["threads"]) for i in insts),
        "cpus": " ".join(cpulist.format(i["cpus"]) for i in insts),
        "mem_nodes": " ".join(
            cpulist.format(i["mem_nodes"]) if i["mem_nodes"] else "local" for i in insts
        ),
        # the launcher's script and run_cpu line (``launch.attach``), "" where none runs here
        "command": config.get("launch", ""),
        "run_cpu": config.get("launch_run_cpu", ""),
    }


def _roles(row: dict) -> dict[str, dict]:
    """{configuration: {"role", "baseline" names, "prediction", "notes"}} of one row."""
    out: dict[str, dict] = {}
    for c in row["candidates"]:
        out.setdefault(c["config"], {"role": "candidate", "baselines": [], "notes": []})
        out[c["config"]]["prediction"] = c
    for b in row["baselines"]:
        if not b.get("config"):
            continue
        got = out.setdefault(b["config"], {"role": "baseline", "baselines": [], "notes": []})
        got["baselines"].append(b["baseline"])
        if "predicted" in b and "prediction" not in got:
            got["prediction"] = b
        got["notes"] += [n for n in b.get("notes") or () if n not in got["notes"]]
    return out


def objective_rows(row: dict, plan: dict, runs: dict | None, pool, bound_ms, eq_pct=3.0):
    """The table's rows of one objective row (see the module docstring)."""
    configs, objective = plan["configurations"], row["objective"]
    tails, over, excluded = {}, {}, []
    if runs:
        tails = {c: choice.tail(runs, c, objective) for c in measured.row_configs(row)}
        if objective == deploy_mod.THROUGHPUT:
            excluded = choice.missing_bound(tails, bound_ms)
        rec, why, over = choice.choose(runs, row, configs, pool, eq_pct, excluded)
    else:  # predictions only: the profiles' best
        rec = row["candidates"][0]["config"] if row["candidates"] else None
        why = "predicted best (nothing measured here)"
        why = why if rec else "no configuration of the profiles serves it"
    if rec and runs:
        why = "; ".join([why, *choice.order_notes(runs, row, configs, rec)])
    if excluded:
        why += f"; over latency_bound_ms: {', '.join(choice.name(configs[c]) for c in excluded)}"
    out, roles = [], _roles(row)
    if rec and rec not in roles:  # a factor's configuration measured best
        roles[rec] = {"role": "candidate", "baselines": [], "notes": []}
    for cid, info in roles.items():
        role = "recommended" if cid == rec else info["role"]
        notes = [why] if cid == rec else []
        got = {"role": role, "baseline": " = ".join(info["baselines"]), "notes": notes}
        out.append(_row(row, plan, cid, got | {"prediction": info.get("prediction")}, runs))
        own = [n for n in configs[cid].get("notes") or () if n not in info["notes"]]
        out[-1]["notes"] = "; ".join([*notes, *info["notes"], *own])
    if rec and runs:
        for f in choice.factor_rows(row, configs, rec):
            out.append(_factor_row(row, plan, f, rec, runs))
    for o in out:
        if o["config"] in tails:
            o.update(tails[o["config"]])
            if bound_ms:
                o["meets_bound"] = bool(o["tail_ms"] <= bound_ms)
        if o["config"] in over and o["role"] != "recommended":
            _set_gain(o, *(over[o["config"]][k] for k in ("ratio", "ci_low", "ci_high")))
    if not runs:  # predictions only: the gains of the predictions
        top = next((o for o in out if o["role"] == "recommended"), None)
        for o in out:
            if o is not top:
                _predicted_gain(o, top, objective)
    return out


def _row(row: dict, plan: dict, cid: str, info: dict, runs: dict | None) -> dict:
    """One configuration's row: its columns, value over the rounds and prediction."""
    config, objective = plan["configurations"][cid], row["objective"]
    base = {
        "model": row["model"],
        "objective": row["name"],
        "batch": row.get("batch"),
        "role": info["role"],
        "baseline": info["baseline"],
        "config": cid,
        "unit": "ms" if objective == deploy_mod.LATENCY else "images/s",
        **_config_columns(config),
        "source": "measured" if runs else "predicted",
    }
    pred = info.get("prediction") or {}
    for k in PREDICTED:
        base[k] = _shown(objective, pred[k]) if pred.get(k) is not None else math.nan
    if runs:
        base.update(value_ci(runs, cid, objective))
        if objective == deploy_mod.THROUGHPUT:  # images/s per physical core it takes
            cores = sum(int(i.get("cores") or len(i["cpus"])) for i in config["instances"])
            base["per_core"] = base["value"] / max(1, cores)
    return base


def _factor_row(row: dict, plan: dict, f: dict, rec: str, runs: dict) -> dict:
    """A ``factor`` row: the configuration that changes one cause (``tables.deploy_choice``);
    "same ..." where it is the recommendation itself, "not measured" where the job lacks it."""
    cid = f["config"] or rec
    got = _row(row, plan, cid, {"role": "factor", "baseline": f["baseline"]}, runs)
    got["factor"] = f["factor"]
    if f["config"] is None:
        got.update(dict.fromkeys((*VALUE, *PREDICTED), math.nan), config="", rounds=0)
        got["notes"] = "not measured: the plan's factors are of the predicted best"
    elif f["config"] == rec:
        got["notes"] = f"same {'configuration' if f['factor'] == 'total' else f['factor']}"
    return got


def _predicted_gain(base: dict, rec_row: dict | None, objective: str) -> None:
    """Without a measurement: the gain of the predictions, with an interval from both
    predicted intervals (log scale, independent)."""
    if rec_row is None:
        return
    a, b = rec_row["predicted"], base["predicted"]
    if not (a > 0 and b > 0):  # also where either is NaN
        return
    gain = b / a if objective == deploy_mod.LATENCY else a / b
    half = 0.0
    for r in (rec_row, base):
        lo, hi = r["predicted_low"], r["predicted_high"]
        if not (lo > 0 and hi == hi):
            return base.update(gain=gain)
        half = math.hypot(half, math.log(hi / lo) / 2)
    _set_gain(base, gain, gain * math.exp(-half), gain * math.exp(half))


def _set_gain(base: dict, gain: float, lo: float, hi: float) -> None:
    base.update(zip(GAIN, (gain, lo, hi), strict=True))
    base["significant"] = choice.significant(lo, hi)


def table(plan: dict, result: GroupRecord | None, bound_ms=None, eq_pct: float = 3.0):
    """recommendation.csv from the deploy plan and the deploy job's record (None: predictions);
    ``eq_pct``: ``deploy.equivalence_pct``."""
    runs = result.runs if result is not None and result.runs else None
    rows = plan["objectives"]
    pool = measured.pooled(runs, rows) if runs else (math.nan, 0)
    out = [r for row in rows for r in objective_rows(row, plan, runs, pool, bound_ms, eq_pct)]
    df = pd.DataFrame(out, columns=COLUMNS)
    order = {"recommended": 0, "candidate": 1, "baseline": 2, "factor": 3}
    df["_o"] = df["role"].map(order)
    df["_k"] = df["objective"].str.split().str[0].map(deploy_mod.OBJECTIVES.index)
    keys = ["model", "_k", "batch", "_o"]
    return df.sort_values(keys, kind="stable").drop(columns=["_o", "_k"]).reset_index(drop=True)


# -- the answer in words ---------------------------------------------------------------------------


def _num(v: float) -> str:
    """A number for people: three significant digits, whole numbers from 100 (``1208``)."""
    return "?" if v != v else f"{v:.0f}" if abs(v) >= 100 else f"{v:.3g}"


def _interval(lo: float, hi: float) -> str:
    """`` [lo, hi]``; nothing without an interval, or with one of no width (predictions from
    cells that carry no CI: PackRat's)."""
    return f" [{_num(lo)}, {_num(hi)}]" if lo == lo and hi == hi and lo < hi else ""


def ratio_words(g: float, lo: float, hi: float, objective: str) -> str:
    """The recommendation's gain ``g`` over a row: ``1.46x faster [1.18, 1.81]`` (``1.3x the
    images/s``) where it is ahead; else how far the row is ahead: ``13 % faster than the
    recommendation [-5, 36 %]`` (its latency 13 % lower), ``25 % more images/s than ...``."""
    latency = objective.startswith(deploy_mod.LATENCY)
    if g >= 1:
        return f"{g:.2f}x {'faster' if latency else 'the images/s'}{_interval(lo, hi)}"

    def pct(x: float) -> str:
        return f"{((1 - x) if latency else (1 / x - 1)) * 100:.0f}"

    ci = f" [{pct(hi)}, {pct(lo)} %]" if _interval(lo, hi) else ""
    return f"{pct(g)} % {'faster' if latency else 'more images/s'} than the recommendation{ci}"


def gain_words(r, objective: str) -> str:
    """A row's gain in words (``ratio_words``), ``(not significant)`` where its CI holds 1."""
    g = r.gain
    if g != g:
        return "no gain: not measured" if r.source == "measured" else "no gain: not predicted"
    sig = "" if stats.as_bool(r.significant) else " (not significant)"
    return ratio_words(g, r.gain_ci_low, r.gain_ci_high, objective) + sig


def _values(r) -> tuple[float, float, float, bool]:
    got = r["source"] == "measured"
    return (*(r[c] for c in (VALUE if got else PREDICTED)), got)


def shown(r) -> tuple[str, str | float, str | float, bool]:
    """(value, low, high, measured) of a table row as text for people (measured, else its
    prediction); a bound is NaN where there is no interval."""
    v, lo, hi, got = _values(r)
    bounds = (_num(lo), _num(hi)) if _interval(lo, hi) else (math.nan, math.nan)
    return (_num(v), *bounds, got)


def value_text(r) -> str:
    """``1208 [1009, 1447] ms``, ``(predicted)`` where nothing was measured."""
    v, lo, hi, got = _values(r)
    return f"{_num(v)}{_interval(lo, hi)} {r['unit']}" + ("" if got else " (predicted)")


def text(v) -> str:
    """A text column's value, "" where the CSV read back a blank (NaN)."""
    return v if isinstance(v, str) else ""


def _factor_words(f, r, objective: str) -> str:
    """``optimization bf16: 3.1x faster [...]`` (the recommendation's opt against eager), the
    same for its allocator, ``layout vs all-cores: same layout``."""
    what = {"optimization": f"optimization {r['opt']}", "allocator": f"allocator {r['allocator']}"}
    head = what.get(f.factor, f"layout vs {f.baseline}")
    if text(f.notes).startswith(("same", "not measured")):
        return f"{head}: {f.notes.split(':')[0]}"
    return f"{head}: {gain_words(f, objective)}"


def headline(g: pd.DataFrame, r, objective: str) -> str:
    """An objective's first words: the total gain over float32 eager on all cores with glibc
    as it comes, then the factors; else the recommendation's value."""
    factors = list(g[g["role"] == "factor"].itertuples())
    total = [f for f in factors if f.factor == "total" and f.gain == f.gain]
    if not total:
        return f"{r['opt']}, {r['allocator']}, {r['layout']}: {value_text(r)}"
    # launchers that chose the same configuration (or none measured) are one layout factor
    layouts: dict = {}
    for f in factors:
        if f.factor == "layout":
            layouts.setdefault(text(f.config), []).append(f.baseline)
    parts = []
    for f in factors:
        if f.factor != "layout":
            parts += [] if f.factor == "total" else [_factor_words(f, r, objective)]
        elif layouts[text(f.config)][0] == f.baseline:  # the group's first launcher speaks
            same = " = ".join(layouts[text(f.config)])
            parts.append(_factor_words(f._replace(baseline=same), r, objective))
    than = "than" if objective.startswith(deploy_mod.LATENCY) else "of"
    start = f"{than} float32 eager, one process on all cores, glibc as it comes"
    return f"{gain_words(total[0], objective)} {start}; " + "; ".join(parts)


def answer_lines(df: pd.DataFrame) -> list[str]:
    """The summary's first lines: per objective row the total gain and its factors, the
    recommendation with its value, tail and why, its gains over the baselines, the command."""
    if df is None or df.empty:
        return []
    source = (
        "predicted from imported results" if (df["source"] == "predicted").all() else "measured"
    )
    lines = [f"What to deploy ({source}; tables/recommendation.csv, docs/deploy.md):"]
    for (model, objective), g in df.groupby(["model", "objective"], sort=False):
        rec = g[g["role"] == "recommended"]
        if rec.empty:
            lines.append(f"  {model} {objective}: no configuration measured")
            continue
        r = rec.iloc[0]
        head = headline(g, r, objective)
        lines.append(f"  {model} {objective}: {head}")
        if not head.startswith(f"{r['opt']}, "):
            lines.append(f"    {r['opt']}, {r['allocator']}, {r['layout']}: {value_text(r)}")
        if text(r["tail_kind"]):
            lines[-1] += f"; {r['tail_kind']} of {r['tail_n']:.0f} requests {_num(r['tail_ms'])} ms"
        lines.append(f"    why: {text(r['notes'])}")
        for b in g[g["role"] == "baseline"].itertuples():
            lines.append(
                f"    vs {b.baseline} ({b.opt}, {b.allocator}): {gain_words(b, objective)}"
            )
        if text(r["command"]):
            lines.append(f"    run: {r['command']}")
        if text(r["run_cpu"]):
            lines.append(f"    or: {r['run_cpu']}")
    return lines
