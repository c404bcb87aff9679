"""The registries a config's names are checked against, in one table. The schema names a
registry (``x-registry: placements``) instead of listing its members, so a new optimization or
placement is one entry in its registry (``plan``), and no edit here."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass

from numa_effects.config.problem import Problem, shown, suggest
from numa_effects.plan import allocators, models, optimizations, placement

# An "allowed" list longer than this is replaced by the nearest names and a command that lists all.
LONG_LIST = 12
LIST_COMMAND = "numa-effects check-config --list"


@dataclass(frozen=True)
class Registry:
    name: str  # the config key, and the argument of --list
    what: str  # "a known placement": what a name must be
    names: Callable[[], list]  # the entries (a family by its pattern, e.g. n{cpu}m{mem})
    hint: Callable[[str], str] = lambda name: ""  # why a near-miss is refused, if we know
    pattern: Callable[[], str | None] = lambda: None  # every name, when some entry is a family

    @property
    def command(self) -> str:
        return f"{LIST_COMMAND} {self.name}"

    def schema(self) -> dict:
        """What the registry allows, as JSON schema: an enum of its names, or a pattern."""
        pattern = self.pattern()
        return {"pattern": pattern} if pattern else {"enum": self.names()}

    def problem(self, key: str, value: str) -> Problem:
        """``value`` is no name of the registry: the allowed names, or the nearest of many."""
        names, what = self.names(), f"{shown(value)} is not {self.what}"
        if len(names) <= LONG_LIST:
            hint = self.hint(value) or suggest(value, names)
            return Problem(key, f"{what}{hint}; allowed: {', '.join(names)}")
        near = difflib.get_close_matches(value, names, n=5, cutoff=0.5)
        nearest = f"nearest: {', '.join(near)}; " if near else ""
        return Problem(key, f"{what}; {nearest}all {len(names)}: {self.command}")


def _placement_hint(name: str) -> str:
    # the +smt label is the cell's, added by use_smt
    bare, smt = placement.parse_label(name)
    return " (+smt is added to the label by use_smt: true)" if smt and placement.known(bare) else ""


def _placement_pattern() -> str | None:
    # a bare placement or a family member (n0m1), or the name standing for a family (node-pairs)
    entries = placement.PLACEMENTS.values()
    if not any(p.fields for p in entries):
        return None
    names = [p.regex for p in entries] + [re.escape(name) for name in placement.families()]
    return "^(?:" + "|".join(names) + ")$"


def _table(name: str, what: str, table) -> Registry:
    return Registry(name, what, lambda: list(table))


REGISTRIES: dict[str, Registry] = {
    r.name: r
    for r in (
        Registry(
            "models",
            "a torchvision classification model",
            lambda: list(models.CLASSIFICATION_MODELS),
        ),
        Registry(
            "optimizations", "a known optimization", lambda: list(optimizations.OPTIMIZATIONS)
        ),
        Registry(
            "placements",
            "a known placement",
            lambda: [*placement.PLACEMENTS, *placement.families()],
            _placement_hint,
            _placement_pattern,
        ),
        _table("allocators", "a known allocator", allocators.ALLOCATORS),
    )
}
