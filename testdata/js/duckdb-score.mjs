// duckdb-score.mjs: reads a scores.parquet (one row per scored turn) with DuckDB,
// an independent Parquet reader, and prints figures that score's
// TestScoresParquetDuckDB compares with the Go values.
// Usage: node duckdb-score.mjs SCORES.parquet
import { DuckDBInstance } from '@duckdb/node-api';

const path = "'" + process.argv[2].replaceAll("'", "''") + "'";
const db = await DuckDBInstance.create(':memory:');
const conn = await db.connect();
const one = async (sql) => (await conn.runAndReadAll(sql)).getRows()[0][0];
const out = {
  Rows: Number(await one(`SELECT count(*) FROM read_parquet(${path})`)),
  ScoreSum: Number(await one(`SELECT sum(score) FROM read_parquet(${path})`)),
  Missing: Number(await one(`SELECT count(*) FROM read_parquet(${path}) WHERE missing`)),
  GTActions: Number(await one(`SELECT sum(len(gt_actions)) FROM read_parquet(${path})`)),
  ModelActions: Number(await one(`SELECT sum(len(model_actions)) FROM read_parquet(${path})`)),
  NullIntents: Number(await one(`SELECT count(*) FROM read_parquet(${path}) WHERE domain = 'workflow' AND model_intent IS NULL`)),
  FirstGT: String(await one(`SELECT array_to_string(gt_actions, ' ') FROM read_parquet(${path}) WHERE domain = 'coding' ORDER BY conversation_id, repeat, expected_turn LIMIT 1`)),
};
console.log(JSON.stringify(out));
