// duckdb-ingest.mjs: the yardstick of `make bench`'s ingest row. DuckDB converts a
// flat JSONL trace file to Parquet with read_json_auto and COPY ... TO ... (FORMAT
// parquet, COMPRESSION snappy: DuckDB's default, named so that the comparison with
// agentrace's Snappy tables stays side by side). Usage: node duckdb-ingest.mjs IN.jsonl OUT.parquet
// Prints {"seconds": wall time of the conversion, "rows": rows written} as JSON.
import { DuckDBInstance } from '@duckdb/node-api';

const [input, output] = process.argv.slice(2);
if (!input || !output) {
  console.error('usage: node duckdb-ingest.mjs IN.jsonl OUT.parquet');
  process.exit(2);
}
const quote = (s) => "'" + s.replaceAll("'", "''") + "'";
const db = await DuckDBInstance.create(':memory:');
const conn = await db.connect();
const start = process.hrtime.bigint();
await conn.run(`COPY (SELECT * FROM read_json_auto(${quote(input)})) TO ${quote(output)} (FORMAT parquet, COMPRESSION snappy)`);
const seconds = Number(process.hrtime.bigint() - start) / 1e9;
const res = await conn.runAndReadAll(`SELECT count(*) AS n FROM read_parquet(${quote(output)})`);
const rows = Number(res.getRows()[0][0]);
console.log(JSON.stringify({ seconds, rows }));
