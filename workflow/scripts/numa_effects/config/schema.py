"""The config schema (``workflow/schemas/config.schema.yaml``): loaded with its registries'
names (``x-registry: optimizations`` becomes an ``enum``, or a ``pattern`` for a placement
family, so a new optimization or placement is one entry in its registry in ``plan``), what it
allows in words (``describe``; ``x-words`` words a pattern; ``x-section`` sorts config/README.md's
tables), values coerced to its types (``normalize``) and jsonschema's errors as one line each."""

from __future__ import annotations

import copy
import difflib
import math
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from numa_effects.config.problem import MISSING, UNKNOWN, Problem, key_path, shown, suggest
from numa_effects.plan import allocators, models, optimizations, placement

REPO_DIR = Path(__file__).resolve().parents[4]
SCHEMA_PATH = REPO_DIR / "workflow" / "schemas" / "config.schema.yaml"
REGISTRY = "x-registry"
# bool before int: a boolean is an int to isinstance.
TYPE_WORDS = ((bool, "a boolean"), (int, "an integer"), (float, "a number"), (str, "a string"))
TYPE_WORDS += ((list, "a list"), (dict, "a mapping"), (type(None), "null"))
WORDS = {t: (f"a{'n' * (t == 'integer')} {t}", f"{t}s") for t in ("integer", "number", "string")}
WORDS |= {"boolean": ("true or false",) * 2, "null": ("null",) * 2}
BOUNDS = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}
NULL_STRINGS = {"null", "none", "~", ""}
NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


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

    def problem(self, key: str, value: str) -> Problem:
        """``value`` is no name of the registry: the allowed names, or the nearest of many."""
        names, what = self.names(), f"{shown(value)} is not {self.what}"
        if len(names) <= LONG_LIST:
            hint = self.hint(value) or suggest(value, names)
            return Problem(key, f"{what}{hint}; allowed: {', '.join(names)}")
        near = difflib.get_close_matches(value, names, n=5, cutoff=0.5)
        nearest = f"nearest: {', '.join(near)}; " if near else ""
        return Problem(key, f"{what}; {nearest}all {len(names)}: {LIST_COMMAND} {self.name}")


def _placement_hint(name: str) -> str:  # the +smt label is the cell's, added by use_smt
    bare, smt = placement.parse_label(name)
    return " (+smt is added to the label by use_smt: true)" if smt and placement.known(bare) else ""


def _placement_pattern() -> str | None:
    # a bare placement or a family member (n0m1), or the name standing for a family (node-pairs)
    entries = placement.PLACEMENTS.values()
    if not any(p.fields for p in entries):
        return None
    names = [p.regex for p in entries] + [re.escape(name) for name in placement.families()]
    return "^(?:" + "|".join(names) + ")$"


REGISTRIES: dict[str, Registry] = {
    r.name: r
    for r in (
        Registry(
            "models", "a torchvision classification model", lambda: [*models.CLASSIFICATION_MODELS]
        ),
        Registry("optimizations", "a known optimization", lambda: [*optimizations.OPTIMIZATIONS]),
        Registry(
            "placements",
            "a known placement",
            lambda: [*placement.PLACEMENTS, *placement.families()],
            _placement_hint,
            _placement_pattern,
        ),
        Registry("allocators", "a known allocator", lambda: [*allocators.ALLOCATORS]),
    )
}


def load(path: str | Path = SCHEMA_PATH) -> dict:
    """The schema, with every ``x-registry`` filled from its registry."""
    import yaml

    def fill(node) -> None:
        if isinstance(node, dict) and (r := REGISTRIES.get(node.get(REGISTRY))):
            node.update({"pattern": p} if (p := r.pattern()) else {"enum": r.names()})
        for value in node.values() if isinstance(node, dict) else node:
            if isinstance(value, dict | list):
                fill(value)

    schema = yaml.safe_load(Path(path).read_text())
    fill(schema)
    return schema


def properties(schema: dict, prefix: str = "") -> Iterator[tuple[str, dict, bool]]:
    """(key path, schema, required) of every key, nested mappings' keys after their parent's."""
    for key, prop in schema.get("properties", {}).items():
        yield f"{prefix}{key}", prop, key in schema.get("required", ())
        for branch in [prop, *prop.get("oneOf", []), *prop.get("anyOf", [])]:
            if "properties" in branch:
                yield from properties(branch, f"{prefix}{key}.")


def type_of(value) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return "not a finite number"
    return next((w for kind, w in TYPE_WORDS if isinstance(value, kind)), type(value).__name__)


def describe(schema: dict, plural: bool = False) -> str:
    """What a schema allows, in words."""
    if REGISTRY in schema:
        registry = REGISTRIES[schema[REGISTRY]]
        names = registry.names()
        if len(names) <= LONG_LIST:
            return "one of " + ", ".join(names)
        what = registry.what.split(" ", 1)[1] + (" names" if plural else " name")
        return f"{what if plural else 'a ' + what} ({len(names)}: {LIST_COMMAND} {registry.name})"
    if "enum" in schema or "const" in schema:
        values = map(str, schema.get("enum", [schema.get("const")]))
        return ("one of " if "enum" in schema else "") + ", ".join(values)
    if "oneOf" in schema or "anyOf" in schema:
        return ", or ".join(describe(s, plural) for s in schema.get("oneOf", schema.get("anyOf")))
    kind = schema.get("type")
    if isinstance(kind, list):
        return " or ".join(describe({**schema, "type": t}, plural) for t in kind)
    if kind == "array":
        lo, hi = schema.get("minItems", 0), schema.get("maxItems")
        extras = {0: [], 1: ["non-empty"]}.get(lo, [f"at least {lo} items"])  # no maxItems alone
        extras = [f"exactly {lo} items"] if lo == hi else extras
        extras += ["no duplicates"] if schema.get("uniqueItems") else []
        lists = ("lists" if plural else "a list") + (f" ({', '.join(extras)})" if extras else "")
        return f"{lists} of {describe(schema.get('items', {}), plural=True)}"
    if kind == "object":
        return "a mapping with keys " + ", ".join(schema.get("properties", {}))
    if kind == "string" and "pattern" in schema:
        one, many, rest = schema.get(
            "x-words", ("a string", "strings", "matching " + schema["pattern"])
        )
        return f"{many if plural else one} {rest}"
    bounds = [f"{op} {schema[k]}" for k, op in BOUNDS.items() if k in schema and kind != "null"]
    words = WORDS.get(kind, ("any value", "any values"))[plural]
    return f"{words} {' and '.join(bounds)}".strip()


def coerce(value, schema: dict):
    """``value`` normalised to the types ``schema`` allows ('8' and 8.0 -> 8, 'False' -> False,
    lists and mappings item by item); anything else unchanged, for the schema check to refuse.
    ``--config`` values arrive as strings, YAML gives 1000.0 for integral values."""
    branches, todo = [], [schema]
    while todo:  # the schema and its oneOf/anyOf branches, depth first
        s, t = todo[0], todo.pop(0).get("type")
        branches.append((s, {t} if isinstance(t, str) else set(t or ())))
        todo[:0] = s.get("oneOf", []) + s.get("anyOf", [])
    types = set().union(*(t for _, t in branches))
    if isinstance(value, str):
        text = value.strip()
        if "null" in types and text.lower() in NULL_STRINGS:
            return None
        if "boolean" in types and text.lower() in ("true", "false"):
            return text.lower() == "true"
        if not (types & {"integer", "number"} and NUMBER.fullmatch(text)):
            return value
        value = int(text) if re.fullmatch(r"[-+]?\d+", text) else float(text)
    if isinstance(value, float) and "integer" in types and value.is_integer():
        return int(value)  # is_integer() is false for nan and inf
    of = {list: "array", dict: "object"}.get(type(value))
    branch = next((b for b, t in branches if of in t), None)
    if of == "array" and branch and "items" in branch:
        return [coerce(v, branch["items"]) for v in value]
    if of == "object" and branch:
        props = branch.get("properties", {})
        return {k: coerce(v, props[k]) if k in props else v for k, v in value.items()}
    return value


def normalize(config: dict, schema: dict) -> None:
    """In place: defaults for missing keys, then every value coerced to its schema type, and
    one spelling per results folder (./results/ -> results)."""
    for key, prop in schema.get("properties", {}).items():
        if key not in config and "default" in prop:
            config[key] = copy.deepcopy(prop["default"])
    config.update(coerce(config, schema))
    if isinstance(config.get("results"), str) and config["results"].strip():
        config["results"] = os.path.normpath(config["results"])


def problems(config: dict, schema: dict) -> list[Problem]:
    """Every way ``config`` breaks ``schema``, one problem per bad value, sorted by key."""
    from jsonschema import Draft202012Validator as Draft
    from jsonschema import validators

    # nan and inf are no numbers here: they pass every bound (nan compares false with anything)
    finite = Draft.TYPE_CHECKER.redefine(
        "number", lambda c, v: Draft.TYPE_CHECKER.is_type(v, "number") and math.isfinite(v)
    )
    errors = validators.extend(Draft, type_checker=finite)(schema).iter_errors(config)
    found: list[Problem] = []
    for err in sorted(errors, key=lambda e: [str(p) for p in e.path]):
        found += [p for p in _error(err) if p not in found]
    return found


def _error(err) -> list[Problem]:
    """One jsonschema error -> problems naming the key and the allowed values."""
    kind, schema, value, key = err.validator, err.schema, err.instance, key_path(err.absolute_path)
    n = len(value) if isinstance(value, list) else 0
    prefix = f"{key}." if err.absolute_path else ""
    if kind in ("enum", "pattern") and REGISTRY in schema:  # a string's type error is said
        return [REGISTRIES[schema[REGISTRY]].problem(key, value)] if isinstance(value, str) else []
    if kind == "additionalProperties":
        allowed = list(schema.get("properties", {}))
        keys, unknown = (
            f"; allowed keys: {', '.join(allowed)}",
            [k for k in value if k not in allowed],
        )
        return [Problem(prefix + k, suggest(k, allowed) + keys, UNKNOWN) for k in unknown]
    if kind == "required":
        props = schema.get("properties", {})
        missing = [k for k in schema["required"] if k not in value]
        return [Problem(prefix + k, describe(props.get(k, {})), MISSING) for k in missing]
    if kind in ("oneOf", "anyOf"):  # the errors of the branch of the value's type, if one
        for i, branch in enumerate(schema[kind]):
            want = {"array": list, "object": dict, "string": str}.get(branch.get("type"))
            if want and isinstance(value, want) and not (want is str and "const" in branch):
                sub = [e for e in err.context if e.relative_schema_path[0] == i]
                if sub:
                    return [p for e in sub for p in _error(e)]
        return [Problem(key, f"{shown(value)} is not allowed; allowed: {describe(schema)}")]
    if kind == "uniqueItems":
        dups = {repr(v): v for i, v in enumerate(value) if repr(v) in map(repr, value[:i])}
        what = f"{', '.join(map(shown, dups.values()))} appears more than once"
        return [Problem(key, f"{what}; each value may appear once")]
    what = {
        "type": f"{shown(value)} is {type_of(value)}",
        "pattern": f"{shown(value)} is not allowed",
        "enum": f"{shown(value)} is not allowed{suggest(value, map(str, schema.get('enum', ())))}",
        "minLength": "the string is empty",
        "minItems": "the list is empty" if n == 0 else f"the list has {n} item{'s' * (n > 1)}",
        "maxItems": f"the list has {n} items",
        **dict.fromkeys(BOUNDS, f"{shown(value)} is out of range"),
    }.get(kind, err.message)
    return [Problem(key, f"{what}; allowed: {describe(schema)}")]
