"""pyarrow_read.py reads agentrace's tables as a pandas user does, for interop's tests.

Parquet files go through pandas.read_parquet (engine pyarrow) and, for the column
kinds, pyarrow.parquet.read_table; an Arrow IPC stream (.arrows, the turn log) goes
through pyarrow.ipc.open_stream. Usage: python3 pyarrow_read.py FILE... It prints
one JSON object mapping each file to {rows, columns}, in the shape polars-read.mjs
prints: each column {name, dtype, nulls} plus, by kind, min and max (integers and
timestamps as exact decimal strings, timestamps in nanoseconds; floats as numbers),
trues (booleans), distinct (strings), or total (summed list and binary lengths).
The statistics are computed on the pandas DataFrame, so they check what pandas
made of each column, not only what Arrow read.
"""
import json
import math
import sys

import pandas as pd
import pyarrow as pa
import pyarrow.ipc
import pyarrow.parquet as pq


def kind(t):
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return "List(" + kind(t.value_type) + ")"
    if pa.types.is_dictionary(t):
        return "Categorical" if pa.types.is_string(t.value_type) or pa.types.is_large_string(t.value_type) else kind(t.value_type)
    if pa.types.is_timestamp(t):
        return "Datetime"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "String"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "Binary"
    if pa.types.is_boolean(t):
        return "Bool"
    if pa.types.is_integer(t):
        return ("UInt" if pa.types.is_unsigned_integer(t) else "Int") + str(t.bit_width)
    if pa.types.is_floating(t):
        return "Float" + str(t.bit_width)
    return str(t)


def stats(name, arrow_type, s):
    k = kind(arrow_type)
    col = {"name": name, "dtype": k, "pandas_dtype": str(s.dtype), "nulls": int(s.isna().sum())}
    v = s.dropna()
    if k.startswith("List("):
        col["total"] = str(sum(len(x) for x in v))
    elif k == "Datetime":
        ns = v.map(lambda x: x.value)  # pandas Timestamps, nanoseconds since the epoch
        col["min"] = str(int(ns.min())) if len(ns) else None
        col["max"] = str(int(ns.max())) if len(ns) else None
    elif k.startswith("Int") or k.startswith("UInt"):
        ints = [int(x) for x in v]
        col["min"] = str(min(ints)) if ints else None
        col["max"] = str(max(ints)) if ints else None
    elif k.startswith("Float"):
        f = [float(x) for x in v if not math.isnan(float(x))]
        col["min"] = min(f) if f else None
        col["max"] = max(f) if f else None
    elif k == "Bool":
        col["trues"] = str(int(sum(bool(x) for x in v)))
    elif k in ("String", "Categorical"):
        col["distinct"] = int(v.astype(str).nunique())
    elif k == "Binary":
        col["total"] = str(sum(len(x) for x in v))
    return col


def main(files):
    out = {}
    for f in files:
        if f.endswith(".arrows"):
            with pa.ipc.open_stream(f) as r:
                table = r.read_all()
            df = table.to_pandas()
        else:
            table = pq.read_table(f)
            df = pd.read_parquet(f)
        if list(df.columns) != table.schema.names:
            raise SystemExit(f"{f}: pandas columns {list(df.columns)} differ from Arrow's {table.schema.names}")
        cols = [stats(field.name, field.type, df[field.name]) for field in table.schema]
        out[f] = {"rows": len(df), "columns": cols}
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit("usage: python3 pyarrow_read.py FILE...")
    main(sys.argv[1:])
