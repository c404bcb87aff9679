"""``@drawer(name)`` registers a draw function for its families (``report.families``);
``report.plots`` dispatches through ``DRAWERS``."""

from __future__ import annotations

from collections.abc import Callable

# Family name -> its draw function (importing ``report.plots`` imports them all).
DRAWERS: dict[str, Callable] = {}


def drawer(*families: str):
    """Register the decorated function as the draw function of ``families`` (one each)."""

    def register(fn):
        for name in families:
            old = DRAWERS.get(name)
            if old is not None and (old.__module__, old.__qualname__) != (
                fn.__module__,
                fn.__qualname__,
            ):
                raise ValueError(
                    f"family {name!r} has two draw functions: {old.__qualname__} and "
                    f"{fn.__qualname__}"
                )
            DRAWERS[name] = fn
        return fn

    return register
