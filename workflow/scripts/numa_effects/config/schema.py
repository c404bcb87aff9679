"""The config schema (``workflow/schemas/config.schema.yaml``) loaded with its registries' names
(``x-registry: optimizations`` becomes an ``enum``, or a ``pattern`` with a placement family, so a
new optimization or placement is one entry in its registry in ``plan``); what it allows in words
(``describe``; ``x-words`` words a pattern), values coerced to its types by its validator
(``normalize``), and jsonschema's errors as one line each."""

from __future__ import annotations

import copy
import difflib
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

from numa_effects.config.problem import MISSING, UNKNOWN, Problem, key_path, shown, suggest
from numa_effects.plan import allocators, models, optimizations, placement

REPO_DIR = Path(__file__).resolve().parents[4]
SCHEMA_PATH = REPO_DIR / "workflow" / "schemas" / "config.schema.yaml"
# a value's type, and a schema type, in words (bool before int: a boolean is an int to isinstance)
TYPE_WORDS = {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}
TYPE_WORDS |= {list: "a list", dict: "a mapping", type(None): "null"}
WORDS = {t: (f"a{'n' * (t == 'integer')} {t}", f"{t}s") for t in ("integer", "number", "string")}
WORDS |= {"boolean": ("true or false",) * 2, "null": ("null",) * 2}
BOUNDS = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}
NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")
LONG_LIST = 12  # a longer "allowed" list is the nearest names and the command that lists all
LIST_COMMAND = "numa-effects check-config --list"


@dataclass(frozen=True)
class Registry:
    name: str  # the config key, and the argument of --list
    what: str  # "a known placement": what a name must be
    entries: dict  # the registry (a placement family by its pattern, e.g. n{cpu}m{mem})

    def names(self) -> list:  # a placement family also by the name standing for its members
        return [*self.entries, *(placement.families() if self.name == "placements" else ())]

    def problem(self, key: str, value: str) -> Problem:
        """``value`` is no name of the registry: the allowed names, or the nearest of many."""
        names, what = self.names(), f"{shown(value)} is not {self.what}"
        if len(names) <= LONG_LIST:
            bare, smt = placement.parse_label(value)  # +smt is the cell label's, not a name
            smt = smt and self.name == "placements" and placement.known(bare)
            hint = " (+smt is added to the label by use_smt: true)" if smt else ""
            return Problem(
                key, f"{what}{hint or suggest(value, names)}; allowed: {', '.join(names)}"
            )
        near = difflib.get_close_matches(value, names, n=5, cutoff=0.5)
        nearest = f"nearest: {', '.join(near)}; " if near else ""
        return Problem(key, f"{what}; {nearest}all {len(names)}: {LIST_COMMAND} {self.name}")


REGISTRIES = {
    r.name: r
    for r in (
        Registry("models", "a torchvision classification model", models.CLASSIFICATION_MODELS),
        Registry("optimizations", "a known optimization", optimizations.OPTIMIZATIONS),
        Registry("placements", "a known placement", placement.PLACEMENTS),
        Registry("allocators", "a known allocator", allocators.ALLOCATORS),
    )
}


def load(path: str | Path = SCHEMA_PATH) -> dict:
    """The schema, every ``x-registry`` an ``enum`` of its registry's names; placements, with a
    family among them, a ``pattern``: each fixed name, family member and family name."""
    import yaml

    entries = placement.PLACEMENTS.values()
    names = [p.regex for p in entries] + [re.escape(name) for name in placement.families()]
    family = any(p.fields for p in entries) and {"pattern": f"^(?:{'|'.join(names)})$"}

    def fill(node) -> None:
        if isinstance(node, dict) and (r := REGISTRIES.get(node.get("x-registry"))):
            node.update(family if family and r.name == "placements" else {"enum": r.names()})
        for value in node.values() if isinstance(node, dict) else node:
            if isinstance(value, dict | list):
                fill(value)

    schema = yaml.safe_load(Path(path).read_text())
    fill(schema)
    return schema


def properties(schema: dict, prefix: str = ""):
    """(key path, schema, required) of every key, nested mappings' keys after their parent's."""
    for key, prop in schema.get("properties", {}).items():
        yield f"{prefix}{key}", prop, key in schema.get("required", ())
        for branch in [prop, *prop.get("oneOf", []), *prop.get("anyOf", [])]:
            if "properties" in branch:
                yield from properties(branch, f"{prefix}{key}.")


def type_of(value) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return "not a finite number"
    return next((w for t, w in TYPE_WORDS.items() if isinstance(value, t)), type(value).__name__)


def describe(schema: dict, plural: bool = False) -> str:
    """What a schema allows, in words."""
    if (r := REGISTRIES.get(schema.get("x-registry"))) and len(r.names()) > LONG_LIST:
        what = r.what.split(" ", 1)[1] + (" names" if plural else " name")
        return f"{what if plural else 'a ' + what} ({len(r.names())}: {LIST_COMMAND} {r.name})"
    if r or "enum" in schema or "const" in schema:
        values = r.names() if r else schema.get("enum", [schema.get("const")])
        return ("" if "const" in schema else "one of ") + ", ".join(map(str, values))
    if branches := schema.get("oneOf", schema.get("anyOf")):
        return ", or ".join(describe(s, plural) for s in branches)
    kind = schema.get("type")
    if isinstance(kind, list):
        return " or ".join(describe({**schema, "type": t}, plural) for t in kind)
    if kind == "array":
        lo, hi = schema.get("minItems", 0), schema.get("maxItems")
        extras = [f"exactly {lo} items" if lo == hi else f"at least {lo} items"] if lo else []
        extras = ["non-empty"] if lo == 1 != hi else extras  # (no schema has maxItems alone)
        extras += ["no duplicates"] if schema.get("uniqueItems") else []
        lists = ("lists" if plural else "a list") + (f" ({', '.join(extras)})" if extras else "")
        return f"{lists} of {describe(schema.get('items', {}), plural=True)}"
    if kind == "object":
        return "a mapping with keys " + ", ".join(schema.get("properties", {}))
    if kind == "string" and "pattern" in schema:
        one, many, rest = schema.get(
            "x-words", ("a string", "strings", f"matching {schema['pattern']}")
        )
        return f"{many if plural else one} {rest}"
    bounds = [f"{op} {schema[k]}" for k, op in BOUNDS.items() if k in schema and kind != "null"]
    return f"{WORDS.get(kind, ('any value', 'any values'))[plural]} {' and '.join(bounds)}".strip()


def _types(schema: dict) -> set[str]:
    kind = schema.get("type")
    return {kind} if isinstance(kind, str) else set(kind or ())


def coerce(value, schema: dict):
    """``value`` as the scalar types ``schema`` (or a branch) allows ('8' and 8.0 -> 8, 'False'
    -> False, 'none' -> None); anything else as it is, for the check to refuse. ``--config`` values
    arrive as strings, and YAML gives 1000.0 for integral values."""
    types = set().union(*map(_types, [schema, *schema.get("oneOf", []), *schema.get("anyOf", [])]))
    text = value.strip().lower() if isinstance(value, str) else None
    if text in ("null", "none", "~", "") and "null" in types:
        return None
    if text in ("true", "false") and "boolean" in types:
        return text == "true"
    if text and types & {"integer", "number"} and NUMBER.fullmatch(text):
        value = int(text) if re.fullmatch(r"[-+]?\d+", text) else float(text)
    integral = isinstance(value, float) and value.is_integer()  # false for nan and inf
    return int(value) if integral and "integer" in types else value


def _coercing(validate):
    """A ``properties`` or ``items`` keyword that first coerces the values it checks."""

    def keyword(validator, sub, instance, schema):
        if isinstance(instance, dict):
            instance.update({k: coerce(instance[k], sub[k]) for k in sub.keys() & instance.keys()})
        elif isinstance(instance, list):
            instance[:] = [coerce(v, sub) for v in instance]
        yield from validate(validator, sub, instance, schema)

    return keyword


def _validator(schema: dict, coercing: bool = False):
    """jsonschema's; ``coercing``: its ``properties`` and ``items`` coerce what they check."""
    from jsonschema import Draft202012Validator as Draft
    from jsonschema import validators

    # nan and inf are no numbers here: they pass every bound (nan compares false with anything)
    finite = Draft.TYPE_CHECKER.redefine(
        "number", lambda c, v: Draft.TYPE_CHECKER.is_type(v, "number") and math.isfinite(v)
    )
    keywords = {k: _coercing(Draft.VALIDATORS[k]) for k in ("properties", "items") if coercing}
    return validators.extend(Draft, keywords, type_checker=finite)(schema)


def normalize(config: dict, schema: dict) -> None:
    """In place: defaults for missing keys, every value coerced by the validator to the type its
    schema allows, and one spelling per results folder (./results/ -> results)."""
    defaults = {k: p["default"] for k, p in schema["properties"].items() if "default" in p}
    config.update({k: copy.deepcopy(v) for k, v in defaults.items() if k not in config})
    list(_validator(schema, coercing=True).iter_errors(config))  # its errors are problems()'s
    if isinstance(config.get("results"), str) and config["results"].strip():
        config["results"] = os.path.normpath(config["results"])


def problems(config: dict, schema: dict) -> list[Problem]:
    """Every way ``config`` breaks ``schema``, one problem per bad value, sorted by key."""
    found: list[Problem] = []
    for err in sorted(_validator(schema).iter_errors(config), key=lambda e: list(map(str, e.path))):
        found += [p for p in _error(err) if p not in found]
    return found


def _error(err) -> list[Problem]:
    """One jsonschema error -> problems naming the key and what is allowed."""
    kind, schema, value, key = err.validator, err.schema, err.instance, key_path(err.absolute_path)
    n, prefix = len(value) if isinstance(value, list) else 0, f"{key}." if err.absolute_path else ""
    if kind in ("enum", "pattern") and "x-registry" in schema:  # a type error is said elsewhere
        names = REGISTRIES[schema["x-registry"]]
        return [names.problem(key, value)] if isinstance(value, str) else []
    allowed = list(schema.get("properties", {}))
    if kind == "required":
        missing = [k for k in schema["required"] if k not in value]
        return [Problem(prefix + k, describe(schema["properties"][k]), MISSING) for k in missing]
    if kind == "additionalProperties":
        keys, unknown = (
            f"; allowed keys: {', '.join(allowed)}",
            [k for k in value if k not in allowed],
        )
        return [Problem(prefix + k, suggest(k, allowed) + keys, UNKNOWN) for k in unknown]
    if kind in ("oneOf", "anyOf"):  # the errors of the branch of the value's type, if one
        for i, branch in enumerate(schema[kind]):
            want = {"array": list, "object": dict, "string": str}.get(branch.get("type"))
            sub = [e for e in err.context if e.relative_schema_path[0] == i]
            if want and isinstance(value, want) and not (want is str and "const" in branch) and sub:
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
