"""Config files read as Snakemake reads them, and what Snakemake lets pass silently refused.

Snakemake merges the workflow's ``configfile:`` (when it exists), every ``--configfile`` in
order, then ``--config`` values; each file is JSON, else YAML. ``load`` does the same and says
where a YAML syntax error is. ``duplicate_problems`` refuses a key given twice in one mapping
(YAML keeps the last, silently), re-reading the files Snakemake read, so both paths refuse the
same way. An empty file is refused, as Snakemake refuses it.
"""

from __future__ import annotations

import codecs
import json
import os
from collections.abc import Iterable
from pathlib import Path

from numa_effects.config.problem import ConfigError, Problem, key_path
from numa_effects.config.schema import type_of

# The Snakefile's `configfile:`, read from the working directory before any --configfile.
WORKFLOW_CONFIGFILE = "config/config.yaml"
ALLOWED = "allowed: a mapping of keys"
BOOLEANS = {"True": True, "False": False}


def _text(path: str | Path) -> str:
    """The file's text, or ConfigError saying why it has none (unreadable, UTF-16 as some
    Windows editors save, binary, not UTF-8)."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise _error(f"cannot read config file {path}: {exc.strerror}") from None
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        why = "it is UTF-16 text; allowed: UTF-8 (iconv -f UTF-16 -t UTF-8 converts it)"
    elif b"\0" in data:
        line = data[: data.index(b"\0")].count(b"\n") + 1
        why = f"it is not text (a NUL byte on line {line}); allowed: a YAML or JSON file"
    else:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            why = f"line {line} is not UTF-8 text (byte 0x{data[exc.start]:02x}); allowed: UTF-8"
    raise _error(f"cannot read config file {path}: {why}")


def _error(text: str) -> ConfigError:
    return ConfigError([Problem("", text)])


def read(path: str | Path) -> dict:
    """One config file (JSON, else YAML), or ConfigError with the one line saying why not."""
    import yaml

    text = _text(path)
    try:
        data = json.loads(text)
    except ValueError:
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" line {mark.line + 1}, column {mark.column + 1}" if mark else ""
            problem = getattr(exc, "problem", None) or str(exc)
            raise _error(f"config file {path}{where} is not valid YAML: {problem}") from None
    if data is None:
        raise _error(f"config file {path} holds no keys (it is empty or only comments); {ALLOWED}")
    if not isinstance(data, dict):
        raise _error(f"config file {path} holds {type_of(data)}, not a mapping of keys; {ALLOWED}")
    return data


def workflow_files(files: Iterable[str | Path], directory: str | Path | None = None) -> list:
    """The files Snakemake reads, as ``workflow.configfiles`` lists them: every ``--configfile``
    made absolute, then the workflow's own when it exists in ``directory`` or no file is given
    (then Snakemake, and ``load``, say it is missing)."""
    out: list = [Path(f).absolute() for f in files]
    own = Path(directory or ".", WORKFLOW_CONFIGFILE)
    given = {os.path.realpath(f) for f in out}
    if not out or (own.is_file() and os.path.realpath(own) not in given):
        out.append(WORKFLOW_CONFIGFILE)  # (Snakemake lists it again when given: read once)
    return out


def load(configfiles: Iterable[str | Path]) -> dict:
    """Merge ``configfiles`` (``workflow_files``) in Snakemake's order: the workflow's own first,
    nested keys merged by Snakemake's own ``update_config``."""
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
        value = None
        for parse in (int, float, BOOLEANS.__getitem__, yaml.BaseLoader, str):
            try:
                value = yaml.load(text, parse) if parse is yaml.BaseLoader else parse(text)
                break
            except (ValueError, KeyError, yaml.YAMLError):
                continue
        update_config(config, {key: value if text else None})
    return config


def duplicate_problems(
    configfiles: Iterable[str | Path], directory: str | Path | None = None
) -> list[Problem]:
    """A key given more than once in one mapping of one file, named with the file and lines; a
    relative path is read from ``directory`` and named as given."""
    problems, seen = [], set()
    for f in configfiles:
        path = Path(directory or ".", f)
        real = os.path.realpath(path)
        if real in seen or not path.is_file():
            continue  # an unreadable file is Snakemake's (or read()'s) error
        seen.add(real)
        for key, marks in _duplicates(path):
            lines = [line for line, _ in marks]
            if len(set(lines)) == len(lines):
                where = "lines " + _and(map(str, lines))
            else:  # a flow mapping on one line
                where = "line:column " + _and(f"{line}:{col}" for line, col in marks)
            times = "twice" if len(marks) == 2 else f"{len(marks)} times"
            what = f"given {times} in config file {f} ({where}); only the last would count; "
            what += "allowed: each key once per file (a later file or --config overrides an "
            problems.append(Problem(key, what + "earlier file)"))
    return problems


def _and(items) -> str:
    items = list(items)
    return ", ".join(items[:-1]) + f" and {items[-1]}"


def _duplicates(path: Path) -> list[tuple[str, list[tuple[int, int]]]]:
    """(key path, 1-based (line, column)s) of every key given more than once in one mapping."""
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
        # JSON is YAML, but for tabs between tokens: blanks on the same line keep the lines.
        root = yaml.compose(text.replace("\t", " "), Loader=yaml.SafeLoader)
    except (yaml.YAMLError, OSError, UnicodeDecodeError):
        return []  # read() or Snakemake says why the file cannot be read
    found: list[tuple[str, list[tuple[int, int]]]] = []

    def walk(node, where: tuple) -> None:
        if isinstance(node, yaml.MappingNode):
            marks: dict[str, list[tuple[int, int]]] = {}
            for k, v in node.value:
                if isinstance(k, yaml.ScalarNode) and k.value != "<<":
                    mark = k.start_mark
                    marks.setdefault(k.value, []).append((mark.line + 1, mark.column + 1))
                    walk(v, (*where, k.value))
            found.extend((key_path((*where, k)), m) for k, m in marks.items() if len(m) > 1)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                walk(item, (*where, i))

    walk(root, ())
    return found
