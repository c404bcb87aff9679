"""The registries a config's names are checked against, in one table.

The schema names a registry (``x-registry: placements``) instead of listing its members, so a
new optimization or placement is one entry in its registry (``plan``), and no edit here.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from numa_effects.plan import allocators, models, optimizations, placement

# An "allowed" list longer than this is replaced by the nearest names and a command that lists all.
LONG_LIST = 12
LIST_COMMAND = "PYTHONPATH=workflow/scripts python -m numa_effects.config --list"


@dataclass(frozen=True)
class Registry:
    name: str  # the config key, and the argument of --list
    what: str  # "a known placement": what a name must be
    names: Callable[[], list[str]]  # the entries (a family by its pattern, e.g. n{cpu}m{mem})
    known: Callable[[str], bool]  # whether a config value names an entry (a family member too)
    hint: Callable[[str], str] = lambda name: ""  # why a near-miss is refused, if we know

    # A regular expression of every name when some entry is a family (its members are not listed).
    pattern: Callable[[], str | None] = lambda: None

    @property
    def command(self) -> str:
        return f"{LIST_COMMAND} {self.name}"

    def schema(self) -> dict:
        """What the registry allows, as JSON schema: an enum of its names, or a pattern."""
        pattern = self.pattern()
        return {"pattern": pattern} if pattern else {"enum": self.names()}


def _placement_known(name: str) -> bool:
    # A bare placement name (the +smt label is the cell's, added by use_smt), or the name that
    # stands for a family's members (node-pairs).
    if name in placement.families():
        return True
    return placement.known(name) and not placement.parse_label(name)[1]


def _placement_names() -> list[str]:
    return [*placement.PLACEMENTS, *placement.families()]


def _placement_hint(name: str) -> str:
    bare, smt = placement.parse_label(name)
    return " (+smt is added to the label by use_smt: true)" if smt and placement.known(bare) else ""


def _placement_pattern() -> str | None:
    entries = placement.PLACEMENTS.values()
    if not any(p.fields for p in entries):
        return None
    names = [p.regex for p in entries]
    names += [re.escape(name) for name in placement.families()]
    return "^(?:" + "|".join(names) + ")$"


def _table(name: str, what: str, table) -> Registry:
    """A registry whose entries are a table's keys (no families, no hints)."""
    return Registry(name, what, lambda: list(table), table.__contains__)


REGISTRIES: dict[str, Registry] = {
    r.name: r
    for r in (
        _table("models", "a torchvision classification model", models.CLASSIFICATION_MODELS),
        _table("optimizations", "a known optimization", optimizations.OPTIMIZATIONS),
        Registry(
            "placements",
            "a known placement",
            _placement_names,
            _placement_known,
            _placement_hint,
            _placement_pattern,
        ),
        _table("allocators", "a known allocator", allocators.ALLOCATORS),
    )
}
