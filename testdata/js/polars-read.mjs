// polars-read.mjs reads agentrace's tables with polars (the pinned nodejs-polars)
// for interop's tests: Parquet files with readParquet, an Arrow IPC stream (.arrows,
// the turn log) with readIPCStream. Usage: node polars-read.mjs FILE... It prints one
// JSON object mapping each file to {rows, columns}, each column {name, dtype, nulls}
// plus, by kind: min and max (integers and timestamps as decimal strings, floats as
// numbers), distinct (strings), trues (booleans), or total (the summed lengths of lists and binaries).
// Integers and timestamps go through Int64 and are printed exactly.
import pl from 'nodejs-polars';
import fs from 'node:fs';

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error('usage: node polars-read.mjs FILE...');
  process.exit(2);
}
const exact = (v) => (v === null || v === undefined ? null : typeof v === 'number' ? v : String(v));
const out = {};
for (const f of files) {
  let df;
  try {
    df = f.endsWith('.arrows') ? pl.readIPCStream(fs.readFileSync(f)) : pl.readParquet(f);
  } catch (e) {
    console.error(`polars could not read ${f}: ${e.message}`);
    process.exit(1);
  }
  const columns = [];
  for (const name of df.columns) {
    const s = df.getColumn(name);
    const col = { name, nulls: s.nullCount() };
    let dtype;
    try {
      dtype = String(s.dtype);
    } catch (e) {
      // nodejs-polars cannot hand some dtypes (Binary) to JavaScript; the data
      // still read, so it is summed as UTF-8 text below.
      dtype = 'Binary';
    }
    col.dtype = dtype;
    if (/List/.test(dtype)) {
      col.total = exact(df.select(pl.col(name).lst.lengths().cast(pl.Int64)).getColumn(name).sum());
    } else if (/Int|Datetime|Duration|Date/.test(dtype)) {
      // min and max computed in polars, as Int64, then printed as text: exact
      const agg = (e) => df.select(e.cast(pl.Utf8).alias('v')).getColumn('v').get(0);
      col.min = agg(pl.col(name).cast(pl.Int64).min());
      col.max = agg(pl.col(name).cast(pl.Int64).max());
    } else if (/Float/.test(dtype)) {
      const v = s.cast(pl.Float64).dropNulls().toArray().filter((x) => !Number.isNaN(x));
      col.min = v.length ? Math.min(...v) : null;
      col.max = v.length ? Math.max(...v) : null;
    } else if (/Bool/.test(dtype)) {
      col.trues = exact(df.select(pl.col(name).cast(pl.Int64)).getColumn(name).sum());
    } else if (/String|Utf8|Categorical/.test(dtype)) {
      const v = df.select(pl.col(name).cast(pl.Utf8)).getColumn(name);
      col.distinct = v.dropNulls().nUnique();
    } else if (dtype === 'Binary') {
      const v = df.select(pl.col(name).cast(pl.Utf8)).getColumn(name);
      col.total = exact(v.str.lengths().cast(pl.Int64).sum());
    }
    columns.push(col);
  }
  out[f] = { rows: df.height, columns };
}
console.log(JSON.stringify(out));
