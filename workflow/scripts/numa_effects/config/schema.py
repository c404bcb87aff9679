"""The config schema (``workflow/schemas/config.schema.yaml``) and what it allows, in words.

``x-registry: optimizations`` becomes the registry's ``enum`` (or ``pattern``, for a placement
family) when the schema is loaded: the registries in ``numa_effects.plan`` are the one source of
names. ``x-section`` sorts the top-level keys into config/README.md's tables (``readme``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from numa_effects.config.registries import LONG_LIST, REGISTRIES

REPO_DIR = Path(__file__).resolve().parents[4]
SCHEMA_PATH = REPO_DIR / "workflow" / "schemas" / "config.schema.yaml"
REGISTRY = "x-registry"
# bool before int: a boolean is an int to isinstance.
TYPE_WORDS = ((bool, "a boolean"), (int, "an integer"), (float, "a number"), (str, "a string"))
TYPE_WORDS += ((list, "a list"), (dict, "a mapping"))
BOUNDS = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}

# Human words for the schema's patterns (the schema keeps the regex, users get the words).
PATTERN_WORDS = {
    "^[A-Za-z0-9_./-]+$": (
        "a path",
        "paths",
        "of letters, digits and _ . / - only (no spaces, quotes or shell metacharacters)",
    ),
    "^[A-Za-z0-9_][A-Za-z0-9_.-]*$": (
        "a name",
        "names",
        "of letters, digits and _ . - (one path segment, not starting with . or -)",
    ),
}


def load(path: str | Path = SCHEMA_PATH) -> dict:
    """The schema, with every ``x-registry`` filled from its registry."""
    import yaml

    with open(path) as fh:
        schema = yaml.safe_load(fh)
    _fill(schema)
    return schema


def _fill(node) -> None:
    if isinstance(node, dict):
        if REGISTRY in node:
            node.update(REGISTRIES[node[REGISTRY]].schema())
        for value in node.values():
            _fill(value)
    elif isinstance(node, list):
        for value in node:
            _fill(value)


def properties(schema: dict, prefix: str = "") -> Iterator[tuple[str, dict, bool]]:
    """(key path, schema, required) of every key, nested mappings' keys after their parent's."""
    for key, prop in schema.get("properties", {}).items():
        path = f"{prefix}{key}"
        yield path, prop, key in schema.get("required", ())
        for branch in [prop, *prop.get("oneOf", []), *prop.get("anyOf", [])]:
            if "properties" in branch:
                yield from properties(branch, f"{path}.")


def type_of(value) -> str:
    if value is None:
        return "null"
    for kind, words in TYPE_WORDS:
        if isinstance(value, kind):
            return words
    return type(value).__name__


def describe(schema: dict, plural: bool = False) -> str:
    """What a schema allows, in words."""
    if REGISTRY in schema:
        registry = REGISTRIES[schema[REGISTRY]]
        names = registry.names()
        if len(names) <= LONG_LIST:
            return "one of " + ", ".join(names)
        what = registry.what.split(" ", 1)[1] + (" names" if plural else " name")
        return f"{what if plural else 'a ' + what} ({len(names)}: {registry.command})"
    if "enum" in schema:
        return "one of " + ", ".join(str(v) for v in schema["enum"])
    if "const" in schema:
        return str(schema["const"])
    if "oneOf" in schema or "anyOf" in schema:
        return ", or ".join(describe(s, plural) for s in schema.get("oneOf", schema.get("anyOf")))
    types = schema.get("type")
    if isinstance(types, list):
        return " or ".join(describe({**schema, "type": t}, plural) for t in types)
    bounds = " and ".join(f"{op} {schema[key]}" for key, op in BOUNDS.items() if key in schema)
    if types in ("integer", "number"):
        text = {"integer": ("an integer", "integers"), "number": ("a number", "numbers")}[types]
        return f"{text[plural]} {bounds}".strip()
    if types in ("boolean", "null"):
        return "true or false" if types == "boolean" else "null"
    if types == "string":
        if "pattern" in schema:
            words = PATTERN_WORDS.get(schema["pattern"])
            if words is None:
                return f"{'strings' if plural else 'a string'} matching {schema['pattern']}"
            return f"{words[1] if plural else words[0]} {words[2]}"
        return "strings" if plural else "a string"
    if types == "array":
        items = describe(schema.get("items", {}), plural=True)
        extras = []
        lo, hi = schema.get("minItems", 0), schema.get("maxItems")
        if hi is not None and lo == hi:
            extras.append(f"exactly {lo} items")
        elif lo > 1:
            extras.append(f"at least {lo} items")
        elif lo == 1:
            extras.append("non-empty")
        if hi is not None and hi != lo:
            extras.append(f"at most {hi} items")
        if schema.get("uniqueItems"):
            extras.append("no duplicates")
        a_list = "lists" if plural else "a list"
        return f"{a_list} ({', '.join(extras)}) of {items}" if extras else f"{a_list} of {items}"
    if types == "object":
        return "a mapping with keys " + ", ".join(schema.get("properties", {}))
    return "see config/README.md"
