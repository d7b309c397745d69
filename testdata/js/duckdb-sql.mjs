// duckdb-sql.mjs runs SQL files with DuckDB's Node package (installed by
// `make testdeps`), for a machine without the DuckDB shell: docs/analysis.md's
// way to run its queries. Usage, from a report folder:
//   node ../../testdata/js/duckdb-sql.mjs agentrace.sql query.sql ...
// ("-" reads SQL from standard input). The files run in order on one connection
// (agentrace.sql's macros stay defined), in the current folder; the rows of each
// file's last statement are printed as a table.
import { DuckDBInstance } from '@duckdb/node-api';
import fs from 'node:fs';

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error('usage: node duckdb-sql.mjs FILE.sql|- ...');
  process.exit(2);
}
const plain = (v) => {
  if (typeof v === 'bigint') return Number(v);
  if (v === null || typeof v !== 'object') return v;
  if (typeof v.toDouble === 'function') return v.toDouble(); // DECIMAL
  return String(v);
};
const db = await DuckDBInstance.create(':memory:');
const conn = await db.connect();
for (const f of files) {
  const sql = fs.readFileSync(f === '-' ? 0 : f, 'utf8');
  try {
    const reader = await conn.runAndReadAll(sql);
    const cols = reader.columnNames();
    const rows = reader.getRows().map((r) => Object.fromEntries(r.map((v, i) => [cols[i], plain(v)])));
    if (rows.length > 0) console.table(rows);
  } catch (e) {
    console.error(`${f}: ${e.message}`);
    process.exit(1);
  }
}
