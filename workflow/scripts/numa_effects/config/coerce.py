"""Every value normalised to its schema type before anything is checked, planned or recorded.

Driven by the schema's types, never per key: ``--config`` values arrive as strings (lists with
YAML's BaseLoader: ``batch_sizes='[1,8]'`` is ``['1', '8']``), YAML gives ``1000.0`` for integral
values, ``null``/``none``/``~`` mean none for nullable keys, and ``results`` is spelled one way.
"""

from __future__ import annotations

import copy
import os
import re

NULL_STRINGS = {"null", "none", "~", ""}
NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")
BOOLEAN_STRINGS = {"true": True, "false": False}


def _branches(schema: dict) -> list[tuple[dict, set[str]]]:
    """The schema and its oneOf/anyOf branches, depth first, each with the JSON types it allows."""
    t = schema.get("type")
    out = [(schema, {t} if isinstance(t, str) else set(t or ()))]
    for branch in schema.get("oneOf", []) + schema.get("anyOf", []):
        out += _branches(branch)
    return out


def coerce(value, schema: dict):
    """``value`` normalised to the types ``schema`` allows ('8' and 8.0 -> 8, 'False' -> False,
    lists and mappings item by item); anything else unchanged, for the schema check to refuse."""
    branches = _branches(schema)
    types = set().union(*(t for _, t in branches))
    if isinstance(value, str):
        text = value.strip()
        if "null" in types and text.lower() in NULL_STRINGS:
            return None
        if "boolean" in types and text.lower() in BOOLEAN_STRINGS:
            return BOOLEAN_STRINGS[text.lower()]
        if not (types & {"integer", "number"} and NUMBER.fullmatch(text)):
            return value
        if re.fullmatch(r"[-+]?\d+", text):
            return int(text)
        value = float(text)
    if isinstance(value, float) and "integer" in types and value.is_integer():
        return int(value)  # is_integer() is false for nan and inf
    if isinstance(value, list):
        array = next((b for b, t in branches if "array" in t), None)
        if array is not None and "items" in array:
            return [coerce(v, array["items"]) for v in value]
    if isinstance(value, dict):
        obj = next((b for b, t in branches if "object" in t), None)
        if obj is not None:
            props = obj.get("properties", {})
            return {k: coerce(v, props[k]) if k in props else v for k, v in value.items()}
    return value


def normalize(config: dict, schema: dict) -> None:
    """In place: defaults for missing keys, then every value coerced to its schema type."""
    props = schema.get("properties", {})
    for key, prop in props.items():
        if key not in config and "default" in prop:
            config[key] = copy.deepcopy(prop["default"])
    config.update(coerce(config, schema))  # the config is the schema's top-level mapping
    if isinstance(config.get("results"), str) and config["results"].strip():
        # one spelling per folder (./results/ -> results), so output paths never differ by it
        config["results"] = os.path.normpath(config["results"])
