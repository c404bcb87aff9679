"""One problem of a config: ``Problem(key, text)``, and ``ConfigError`` holding all of them.

``str(problem)`` is the one line a user reads. ``key`` is the full key path
(``import.packrat[0]``), or ``""`` when the problem is not about one key (a config file that
cannot be read); which keys failed is read from ``Problem.key``, never from the text.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

README = "every key is described in config/README.md"


class Kind(StrEnum):
    VALUE = "config key '{key}': {text}"
    MISSING = "config key '{key}' is missing; allowed: {text}"
    UNKNOWN = "unknown config key '{key}'{text}"  # text: a "did you mean" and the allowed keys


@dataclass(frozen=True)
class Problem:
    key: str
    text: str
    kind: Kind = Kind.VALUE

    def __str__(self) -> str:  # without a key: the text alone
        return self.kind.value.format(key=self.key, text=self.text) if self.key else self.text

    @property
    def top(self) -> str:
        return re.split(r"[.\[]", self.key, maxsplit=1)[0]


class ConfigError(ValueError):
    """The config cannot be run: each problem once, and their lines."""

    def __init__(self, problems: Iterable[Problem]):
        seen: dict[str, Problem] = {}
        for p in problems:
            seen.setdefault(str(p), p)
        self.problems: tuple[Problem, ...] = tuple(seen.values())
        self.lines: list[str] = list(seen)
        if len(self.lines) == 1:
            text = f"invalid configuration: {self.lines[0]} ({README})"
        else:
            head = f"invalid configuration ({len(self.lines)} problems; {README}):"
            text = "\n".join([head, *(f"  - {p}" for p in seen)])
        super().__init__(text)


def key_path(path: Iterable) -> str:
    """``import.packrat[0]`` from a path of keys and list indices."""
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(top level)"


def shown(value) -> str:
    """A value as a message shows it: strings quoted, booleans as YAML spells them."""
    if isinstance(value, str):
        return repr(value)
    return str(value).lower() if isinstance(value, bool) else str(value)


def suggest(word, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for a near miss, else ""."""
    close = difflib.get_close_matches(str(word), list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""
