"""The tidy tables' one reader and one writer (``results/tables/*.csv``).

``read``: booleans become True / False / None in every column that holds them, whatever wrote
them (``stats.as_bool``), and integer columns integers (nullable Int64 where some are blank); a
missing, empty or header-less file is an empty frame. ``write``: the CSV, atomically, and a
Parquet copy beside it when pyarrow is installed."""

from __future__ import annotations

import os

import pandas as pd

from numa_effects.stats import as_bool

BOOLEAN_COLUMNS = frozenset(
    {
        "contended",
        "noisy",
        "significant",
        "verified",
        "warmup_stable",
        "use_smt",
        "is_fat",
        "excluded",
        "native",
        "dtype_verified",
        "numerics_ok",
    }
)
INTEGER_COLUMNS = frozenset(
    {
        "threads",
        "batch_size",
        "image_size",
        "n",
        "iteration",
        "replicate",
        "replicates",
        "warmup_iterations",
        "torch_num_threads",
        "thread_count",
        "runnable_others",
        "interop_threads",
        "instance_id",
        "returncode",
        "signal",
        "budget",
        "k",
        "cores",
        "rounds",
        "fat_rounds",
        "reps",
        "matrix_size",
    }
)


def read(path, columns=()):
    """A tidy table with typed columns (``typed``); a missing, empty or header-less file is an
    empty frame with ``columns``."""
    if path is None or not os.path.exists(path) or os.path.getsize(path) <= 1:
        return pd.DataFrame(columns=list(columns))
    try:
        df = pd.read_csv(path)
    except pd.errors.EmptyDataError:
        return pd.DataFrame(columns=list(columns))
    return typed(df)


def typed(df):
    """``df`` with the boolean and integer columns typed as ``read`` does (a copy)."""
    df = df.copy()
    for c in df.columns:
        if c in BOOLEAN_COLUMNS:
            df[c] = pd.Series([as_bool(v) for v in df[c]], index=df.index, dtype=object)
        elif c in INTEGER_COLUMNS and df[c].dtype.kind not in "iu":
            num = pd.to_numeric(df[c], errors="coerce")
            given = num.notna()
            if given.sum() != df[c].notna().sum() or not (num[given] % 1 == 0).all():
                continue  # not integers: left as read
            df[c] = num.astype("int64" if given.all() else "Int64")
    return df


def write(df: pd.DataFrame, path: str | os.PathLike) -> None:
    """CSV always; a Parquet copy beside it when pyarrow is installed. Atomic per file."""
    path = str(path)
    tmp = f"{path}.tmp"
    df.to_csv(tmp, index=False)
    os.replace(tmp, path)
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return
    pq = path.removesuffix(".csv") + ".parquet"
    df.to_parquet(f"{pq}.tmp", index=False)
    os.replace(f"{pq}.tmp", pq)
