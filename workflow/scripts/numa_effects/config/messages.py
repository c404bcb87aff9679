"""jsonschema's errors as problems: one line each, naming the full key path and what is allowed."""

from __future__ import annotations

from numa_effects.config.problem import Kind, Problem, key_path, shown, suggest
from numa_effects.config.schema import BOUNDS, REGISTRY, describe, type_of

BRANCH_TYPES = {"array": list, "object": dict, "string": str}  # a branch whose errors are said


def schema_problems(config: dict, schema: dict) -> list[Problem]:
    """Every way ``config`` breaks ``schema``, one problem per bad value, sorted by key."""
    from jsonschema import Draft202012Validator

    errors = sorted(
        Draft202012Validator(schema).iter_errors(config), key=lambda e: [str(p) for p in e.path]
    )
    problems: list[Problem] = []
    for err in errors:
        if err.validator in ("enum", "pattern") and REGISTRY in err.schema:
            continue  # checks.name_problems says it with the registry's names
        for p in format_error(err):
            if p not in problems:
                problems.append(p)
    return problems


def format_error(err) -> list[Problem]:
    """One jsonschema error -> problems naming the key and the allowed values."""
    kind, schema, value = err.validator, err.schema, err.instance
    key = key_path(err.absolute_path)
    prefix = "" if not err.absolute_path else f"{key}."
    if kind == "additionalProperties":
        allowed = list(schema.get("properties", {}))
        keys = f"; allowed keys: {', '.join(allowed)}"
        unknown = [k for k in value if k not in allowed]
        return [Problem(prefix + k, suggest(k, allowed) + keys, Kind.UNKNOWN) for k in unknown]
    if kind == "required":
        props = schema.get("properties", {})
        return [
            Problem(prefix + k, describe(props.get(k, {})), Kind.MISSING)
            for k in schema["required"]
            if k not in value
        ]
    if kind in ("oneOf", "anyOf"):
        return _branch_problems(err, kind, key)
    return [_value_problem(err, kind, key)]


def _branch_problems(err, kind: str, key: str) -> list[Problem]:
    """The problems of the branch that matches the value's type (threads: 'auto' or a list of
    integers); else the value is none of the branches."""
    schema, value = err.schema, err.instance
    for i, branch in enumerate(schema[kind]):
        want = BRANCH_TYPES.get(branch.get("type"))
        if want and isinstance(value, want) and not (want is str and "const" in branch):
            sub = [e for e in err.context if e.relative_schema_path[0] == i]
            if sub:
                return [p for e in sub for p in format_error(e)]
    return [Problem(key, f"{shown(value)} is not allowed; allowed: {describe(schema)}")]


def _value_problem(err, kind: str, key: str) -> Problem:
    """A value the schema refuses: which rule, and what is allowed."""
    schema, value = err.schema, err.instance
    if kind == "uniqueItems":
        seen, dups = set(), []
        for v in value:
            if repr(v) in seen and v not in dups:
                dups.append(v)
            seen.add(repr(v))
        twice = ", ".join(shown(d) for d in dups) or "a value"
        return Problem(key, f"{twice} appears more than once; each value may appear once")
    if kind in ("minItems", "maxItems"):
        n = len(value) if isinstance(value, list) else 0
        what = "the list is empty" if n == 0 else f"the list has {n} item{'s' * (n > 1)}"
    elif kind == "enum":
        what = f"{shown(value)} is not allowed{suggest(value, map(str, schema['enum']))}"
    else:
        what = {
            "type": f"{shown(value)} is {type_of(value)}",
            "pattern": f"{shown(value)} is not allowed",
            "minLength": "the string is empty",
            **dict.fromkeys(BOUNDS, f"{shown(value)} is out of range"),
        }.get(kind, err.message)
    return Problem(key, f"{what}; allowed: {describe(schema)}")
