// duckdb-read.mjs: reads an agentrace dataset directory's Parquet tables with DuckDB
// (an independent Parquet reader) and prints a few figures as JSON, which
// ingest's TestDuckDBReadsTables checks. Usage: node duckdb-read.mjs DATASET_DIR
import { DuckDBInstance } from '@duckdb/node-api';

const dir = process.argv[2];
const q = (name) => "'" + (dir + '/' + name).replaceAll("'", "''") + "'";
const db = await DuckDBInstance.create(':memory:');
const conn = await db.connect();
const one = async (sql) => (await conn.runAndReadAll(sql)).getRows()[0][0];
const out = {
  Conversations: Number(await one(`SELECT count(*) FROM read_parquet(${q('conversations.parquet')})`)),
  Messages: Number(await one(`SELECT count(*) FROM read_parquet(${q('messages.parquet')})`)),
  Turns: Number(await one(`SELECT count(*) FROM read_parquet(${q('turns.parquet')})`)),
  First: await one(`SELECT conversation_id FROM read_parquet(${q('conversations.parquet')}) ORDER BY conv_index LIMIT 1`),
  ClientTurns: Number(await one(`SELECT sum(client_turns) FROM read_parquet(${q('conversations.parquet')})`)),
  NullContent: Number(await one(`SELECT count(*) FROM read_parquet(${q('messages.parquet')}) WHERE content IS NULL`)),
  WireBytes: Number(await one(`SELECT sum(octet_length(wire)) FROM read_parquet(${q('messages.parquet')})`)),
  Delay: Number(await one(`SELECT sum(delay_seconds) FROM read_parquet(${q('turns.parquet')})`)),
  MaxMsgEnd: Number(await one(`SELECT max(msg_end) FROM read_parquet(${q('turns.parquet')})`)),
  ToolMessages: Number(await one(`SELECT count(*) FROM read_parquet(${q('messages.parquet')}) WHERE role = 'tool'`)),
  FirstUserContentPrefix: await one(`SELECT left(m.content, 40) FROM read_parquet(${q('messages.parquet')}) m
     JOIN read_parquet(${q('conversations.parquet')}) c USING (conversation_id) WHERE c.conv_index = 0 AND m.seq = 0`),
  SystemEscaped0: await one(`SELECT system_escaped FROM read_parquet(${q('conversations.parquet')}) WHERE conv_index = 0`),
};
console.log(JSON.stringify(out));
