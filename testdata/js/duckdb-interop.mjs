// duckdb-interop.mjs runs SQL with DuckDB for interop's tests: the README's
// example queries against an agentrace workspace (a dataset, a sweep with scores,
// a rescore table, a dumped turn log). Usage: node duckdb-interop.mjs DIR
// QUERIES.json, where QUERIES.json maps names to SQL; the queries run with DIR as
// the working directory (so relative paths resolve there) and the output is one
// JSON object mapping each name to its rows (objects, BigInts as numbers).
import { DuckDBInstance } from '@duckdb/node-api';
import fs from 'node:fs';

const [dir, queriesFile] = process.argv.slice(2);
if (!dir || !queriesFile) {
  console.error('usage: node duckdb-interop.mjs DIR QUERIES.json');
  process.exit(2);
}
const queries = JSON.parse(fs.readFileSync(queriesFile, 'utf8'));
process.chdir(dir);
const db = await DuckDBInstance.create(':memory:');
const conn = await db.connect();
const plain = (v) => {
  if (typeof v === 'bigint') return Number(v);
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) return v.map(plain);
  if (typeof v.toDouble === 'function') return v.toDouble(); // DECIMAL
  if (Array.isArray(v.items)) return v.items.map(plain); // LIST
  return String(v);
};
const out = {};
for (const [name, sql] of Object.entries(queries)) {
  try {
    const reader = await conn.runAndReadAll(sql);
    const cols = reader.columnNames();
    out[name] = reader.getRows().map((r) => Object.fromEntries(r.map((v, i) => [cols[i], plain(v)])));
  } catch (e) {
    console.error(`query ${name} failed: ${e.message}\n${sql}`);
    process.exit(1);
  }
}
console.log(JSON.stringify(out));
