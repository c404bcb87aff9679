"""The ``compare`` config key resolved (docs/comparing.md): a list of result folders or a
mapping with ``runs`` and the options, the first folder the baseline. Pure: paths only."""

from __future__ import annotations

import os
import re

from numa_effects.compare import statistics as compare_stats

LABEL = r"[A-Za-z0-9_][A-Za-z0-9_.-]*"  # a label or name: one path segment, no leading dot
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def _safe(text: str) -> str:
    return _UNSAFE.sub("_", text).lstrip("._-")


def derive_labels(runs: list[str]) -> list[str]:
    """One label per folder: the last segment once those every folder ends with are dropped
    (``runs/a/results``, ``runs/b/results`` -> ``a``, ``b``); a label still another's gets the
    segment before it (``results``, ``/tmp/x/results`` -> ``results``, ``x-results``), then a
    number."""
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
    """The resolved key (None without one), the first label the ``baseline``."""
    g = config.get("compare")
    if not g:
        return None
    g = {"runs": list(g)} if isinstance(g, list) else dict(g)
    runs = [os.path.normpath(str(r)) for r in g["runs"]]
    labels = [str(label) for label in (g.get("labels") or derive_labels(runs))]
    name = g.get("name") or _safe("-vs-".join(labels)) or "compare"
    min_effect = g.get("min_effect_pct")
    min_effect = float(compare_stats.MIN_EFFECT_PCT if min_effect is None else min_effect)
    across = [str(a) for a in (g.get("across") or ())]
    out = {"runs": runs, "labels": labels, "baseline": labels[0], "name": str(name)}
    return out | {"min_effect_pct": min_effect, "across": across}
