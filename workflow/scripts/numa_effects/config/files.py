"""Config files read as Snakemake reads them (the workflow's ``configfile:`` when it exists,
each ``--configfile`` in order, each JSON, else YAML, then ``--config`` values), saying where a
YAML syntax error is; and a key given twice in one mapping (YAML keeps the last) refused, from
the files Snakemake read, so both paths refuse the same way."""

from __future__ import annotations

import codecs
import json
import os
import re
from collections.abc import Iterable
from pathlib import Path

from numa_effects.config.problem import ConfigError, Problem, key_path
from numa_effects.config.schema import type_of

# The Snakefile's `configfile:`, read from the working directory before any --configfile.
WORKFLOW_CONFIGFILE = "config/config.yaml"
ALLOWED = "allowed: a mapping of keys"
SUFFIXES = (".yaml", ".yml", ".json")
ITEM = re.compile(r"[a-zA-Z_][\w-]*=.*")  # a KEY=VALUE item where a file or target was meant


def _text(path: str | Path) -> str:
    """The file's text, or why it has none (unreadable, UTF-16, binary, not UTF-8; missing: a
    target or a KEY=VALUE item after --configfile, which takes every word up to the next option)."""
    try:
        data = Path(path).read_bytes()
        if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            why = "it is UTF-16 text; allowed: UTF-8 (iconv -f UTF-16 -t UTF-8 converts it)"
        elif b"\0" in data:
            line = data[: data.index(b"\0")].count(b"\n") + 1
            why = f"it is not text (a NUL byte on line {line}); allowed: a YAML or JSON file"
        else:
            return data.decode("utf-8")
    except OSError as exc:
        why, name, missing = exc.strerror, Path(path).name, isinstance(exc, FileNotFoundError)
        if missing and ITEM.fullmatch(name):
            why = f"config file {name!r} is a KEY=VALUE item (after --configfile, it is read as a "
            raise ConfigError([Problem("", f"{why}file name); allowed: --config {name}")]) from None
        if missing and Path(path).suffix not in SUFFIXES:
            why = f"config file {path} does not exist (a target after --configfile is read as a "
            why += "config file: put targets before --configfile, e.g. snakemake all --configfile "
            raise ConfigError([Problem("", f"{why}my.yaml)")]) from None
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        why = f"line {line} is not UTF-8 text (byte 0x{data[exc.start]:02x}); allowed: UTF-8"
    raise ConfigError([Problem("", f"cannot read config file {path}: {why}")])


def read(path: str | Path) -> dict:
    """One config file (JSON, else YAML), or ConfigError with the one line saying why not."""
    import yaml

    text, why, data = _text(path), None, None
    try:
        data = json.loads(text)
    except ValueError:
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" line {mark.line + 1}, column {mark.column + 1}" if mark else ""
            why = f"{where} is not valid YAML: {getattr(exc, 'problem', None) or exc}"
    if isinstance(data, dict):
        return data
    empty = data is None and not why
    why = why or f" holds {type_of(data)}, not a mapping of keys; {ALLOWED}"
    why = f" holds no keys (it is empty or only comments); {ALLOWED}" if empty else why
    raise ConfigError([Problem("", f"config file {path}{why}")])


def workflow_files(files: Iterable[str | Path], directory: str | Path | None = None) -> list:
    """The files Snakemake reads, as ``workflow.configfiles`` lists them: every ``--configfile``
    made absolute, then the workflow's own when it exists in ``directory`` or no file is given
    (then Snakemake, and ``load``, say it is missing)."""
    out: list = [Path(f).absolute() for f in files]
    own = Path(directory or ".", WORKFLOW_CONFIGFILE)
    if not out or (own.is_file() and os.path.realpath(own) not in map(os.path.realpath, out)):
        out.append(WORKFLOW_CONFIGFILE)  # (Snakemake lists it again when given: read once)
    return out


def load(configfiles: Iterable[str | Path]) -> dict:
    """Merge ``configfiles`` (``workflow_files``) in Snakemake's order, the workflow's own
    first, nested keys merged by Snakemake's own ``update_config``."""
    from snakemake.utils import update_config

    config: dict = {}
    for f in sorted(configfiles, key=lambda f: str(f) != WORKFLOW_CONFIGFILE):  # a stable sort
        update_config(config, read(Path(f)))
    return config


def parse_config_args(entries: list[str]) -> dict:
    """``--config key=value ...`` read as Snakemake reads them: each value an int, a float, a
    boolean, else YAML's BaseLoader's (strings, lists and mappings of strings)."""
    import yaml
    from snakemake.utils import update_config

    config: dict = {}
    for key, _, text in (entry.partition("=") for entry in entries):
        for parse in (int, float, {"True": True, "False": False}.__getitem__, yaml.BaseLoader):
            try:
                value = yaml.load(text, parse) if parse is yaml.BaseLoader else parse(text)
                break
            except (ValueError, KeyError, yaml.YAMLError):
                value = text
        update_config(config, {key: value if text else None})
    return config


def duplicate_problems(configfiles: Iterable, directory: str | Path | None = None) -> list:
    """A key given more than once in one mapping of one file, named with the file and lines; a
    relative path is read from ``directory`` and named as given; each file once."""
    problems, seen = [], set()
    for f in configfiles:
        path = Path(directory or ".", f)
        if os.path.realpath(path) in seen or not path.is_file():
            continue  # an unreadable file is Snakemake's (or read()'s) error
        seen.add(os.path.realpath(path))
        for key, marks in _duplicates(path):
            flow = len({line for line, _ in marks}) < len(marks)  # a flow mapping on one line
            lines = [f"{line}:{col}" if flow else str(line) for line, col in marks]
            where = f"line{':column' if flow else 's'} {', '.join(lines[:-1])} and {lines[-1]}"
            times = "twice" if len(marks) == 2 else f"{len(marks)} times"
            what = f"given {times} in config file {f} ({where}); only the last would count; "
            what += "allowed: each key once per file (a later file or --config overrides an "
            problems.append(Problem(key, what + "earlier file)"))
    return problems


def _duplicates(path: Path) -> list[tuple[str, list[tuple[int, int]]]]:
    """(key path, 1-based (line, column)s) of every key given more than once in one mapping."""
    import yaml

    try:  # JSON is YAML, but for tabs between tokens: blanks on the same line keep the lines
        root = yaml.compose(path.read_text().replace("\t", " "), Loader=yaml.SafeLoader)
    except (yaml.YAMLError, OSError, UnicodeDecodeError):
        return []  # read() or Snakemake says why the file cannot be read

    def walk(node, where: tuple) -> list:  # a mapping's nested keys before its own
        if isinstance(node, yaml.SequenceNode):
            return [d for i, item in enumerate(node.value) for d in walk(item, (*where, i))]
        if not isinstance(node, yaml.MappingNode):
            return []
        marks: dict[str, list[tuple[int, int]]] = {}
        found = []
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode) and k.value != "<<":
                marks.setdefault(k.value, []).append(
                    (k.start_mark.line + 1, k.start_mark.column + 1)
                )
                found += walk(v, (*where, k.value))
        return found + [(key_path((*where, k)), m) for k, m in marks.items() if len(m) > 1]

    return walk(root, ())
