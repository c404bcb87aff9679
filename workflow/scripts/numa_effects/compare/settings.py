"""The ``compare`` config key resolved (docs/comparing.md): the result folders compared, their
labels, the comparison's name (its folder ``<results>/compare/<name>/``), the minimum effect of a
verdict and the axes compared across. Pure: paths only; the folders are read by
``compare.runs`` (and checked by ``compare.check``).

The key is a list of folders (``compare='[runs/a/results, runs/b/results]'``) or a mapping with
``runs`` and the options. The first folder is the baseline; every other one is compared with it.
Labels default to the part of each path that tells the folders apart (``runs/a/results``,
``runs/b/results`` -> ``a``, ``b``) and the name to the labels joined by ``-vs-``.
"""

from __future__ import annotations

import os
import re

from numa_effects.compare import statistics as compare_stats

LABEL = r"[A-Za-z0-9_][A-Za-z0-9_.-]*"  # a label or name: one path segment, no leading dot
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def given(config: dict) -> dict | None:
    """The key as a mapping (``{"runs": [...]}`` for the list form), or None when not set."""
    value = config.get("compare")
    if not value:
        return None
    return {"runs": list(value)} if isinstance(value, list) else dict(value)


def _safe(text: str) -> str:
    return _UNSAFE.sub("_", text).lstrip("._-")


def derive_labels(runs: list[str]) -> list[str]:
    """One label per folder: the last path segment left once the segments every folder ends
    with are dropped (``runs/a/results``, ``runs/b/results`` -> ``a``, ``b``); a label that is
    still another's gets the segment before it (``results``, ``/tmp/x/results`` -> ``results``,
    ``x-results``), then a number."""
    parts = [[p for p in os.path.normpath(r).split(os.sep) if p not in ("", ".")] for r in runs]
    common = 0
    while all(len(p) > common + 1 for p in parts) and len({p[-1 - common] for p in parts}) == 1:
        common += 1
    rests = [p[: len(p) - common] or p or [""] for p in parts]
    labels = [_safe(r[-1]) for r in rests]
    twice = {label for label in labels if labels.count(label) > 1}
    labels = [
        _safe("-".join(r[-2:])) if label in twice and len(r) > 1 else label
        for label, r in zip(labels, rests, strict=True)
    ]
    out = []
    for i, label in enumerate(labels):
        label = label or f"run{i + 1}"
        out.append(f"{label}-{i + 1}" if labels.count(label) > 1 or label in out else label)
    return out


def settings(config: dict) -> dict | None:
    """The resolved key (None when the config compares nothing): ``runs`` (normalised paths),
    ``labels``, ``baseline`` (the first label), ``name``, ``min_effect_pct``, ``across``."""
    g = given(config)
    if g is None:
        return None
    runs = [os.path.normpath(str(r)) for r in g["runs"]]
    labels = [str(label) for label in (g.get("labels") or derive_labels(runs))]
    name = g.get("name") or _safe("-vs-".join(labels)) or "compare"
    min_effect = g.get("min_effect_pct")
    return {
        "runs": runs,
        "labels": labels,
        "baseline": labels[0],
        "name": str(name),
        "min_effect_pct": float(compare_stats.MIN_EFFECT_PCT if min_effect is None else min_effect),
        "across": [str(a) for a in (g.get("across") or ())],
    }
