"""One problem of a config, ``Problem(key, text)``, and ``ConfigError`` holding all of them.
``key`` is the full key path (``import.packrat[0]``), "" for a problem of no key (a file); which
keys failed is read from it, never from the text."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass

README = "every key is described in config/README.md"
# A problem's line, by its kind; UNKNOWN's text is a "did you mean" and the allowed keys.
VALUE, MISSING = "config key '{key}': {text}", "config key '{key}' is missing; allowed: {text}"
UNKNOWN = "unknown config key '{key}'{text}"


@dataclass(frozen=True)
class Problem:
    key: str
    text: str
    kind: str = VALUE

    def __str__(self) -> str:
        return self.kind.format(key=self.key, text=self.text) if self.key else self.text

    @property
    def top(self) -> str:
        return re.split(r"[.\[]", self.key, maxsplit=1)[0]


class ConfigError(ValueError):
    """The config cannot be run: each problem once, one line each."""

    def __init__(self, problems: Iterable[Problem]):
        seen: dict[str, Problem] = {}
        for p in problems:
            seen.setdefault(str(p), p)
        self.problems, self.lines = tuple(seen.values()), list(seen)
        many = f"invalid configuration ({len(seen)} problems; {README}):"
        one = f"invalid configuration: {self.lines[0]} ({README})"
        super().__init__(one if len(seen) == 1 else "\n  - ".join([many, *self.lines]))


def key_path(path: Iterable) -> str:
    """``import.packrat[0]`` from a path of keys and list indices."""
    out = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)
    return out.removeprefix(".") or "(top level)"


def shown(value) -> str:
    """A value as a message shows it: strings quoted, booleans as YAML spells them."""
    if isinstance(value, bool):
        return str(value).lower()
    return repr(value) if isinstance(value, str) else str(value)


def suggest(word, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for a near miss, else ""."""
    close = difflib.get_close_matches(str(word), list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""
