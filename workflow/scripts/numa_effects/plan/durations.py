"""Durations as the run's lines say them (the estimate, the progress line, ``remeasure``)."""

from __future__ import annotations

HOURS_FROM_MIN = 90  # a duration this long or longer is also told in hours


def duration_text(seconds: float) -> str:
    """``45 s``, ``12 min``, ``3 h 20 min``."""
    s = round(seconds)
    if s < 90:
        return f"{s} s"
    minutes = round(s / 60)
    if minutes < HOURS_FROM_MIN:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60:02d} min"


def minutes_text(seconds: float) -> str:
    """``6.2 min``; from ``HOURS_FROM_MIN`` on in hours (``27 h 05 min``)."""
    return f"{seconds / 60:.1f} min" if seconds < HOURS_FROM_MIN * 60 else duration_text(seconds)
