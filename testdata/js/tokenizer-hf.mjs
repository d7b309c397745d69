// tokenizer-hf.mjs is the second reference for package tokens: Hugging Face's
// own Rust tokenizers (npm "tokenizers", the official Node binding), which the
// Python transformers of the rules' reference client also runs. It reads JSONL
// lines {"text": ...} from stdin, encodes each with the tokenizer.json given as
// the first argument (no special tokens added, special-token strings in the text
// recognized), and writes {"ids": [...]} per line, then {"encode_ms": N}.
//
// A tokenizer_config.json given as the second argument is applied as
// transformers' PreTrainedTokenizerFast does when it loads a tokenizer: each
// added_tokens_decoder entry, in id order, is added with its options
// (tokenizers skips the ones tokenizer.json already has).
import { AddedToken, Tokenizer } from "tokenizers";
import { readFileSync, writeSync } from "node:fs";

const tok = Tokenizer.fromFile(process.argv[2]);
if (process.argv[3]) {
  const cfg = JSON.parse(readFileSync(process.argv[3], "utf8"));
  const entries = Object.entries(cfg.added_tokens_decoder ?? {}).sort((a, b) => Number(a[0]) - Number(b[0]));
  tok.addAddedTokens(entries.map(([, t]) => new AddedToken(t.content, !!t.special, {
    singleWord: !!t.single_word, leftStrip: !!t.lstrip, rightStrip: !!t.rstrip, normalized: t.normalized ?? !t.special,
  })));
}
const lines = readFileSync(0, "utf8").split("\n").filter((l) => l.length > 0);
const texts = lines.map((l) => JSON.parse(l).text);
const start = process.hrtime.bigint();
const out = [];
if (process.env.AGENTRACE_HF_BATCH) {
  // Batches of 4096 (encodeBatch runs on Rust's threads): for sweeps of
  // hundreds of thousands of texts, where one call each takes minutes.
  for (let i = 0; i < texts.length; i += 4096) {
    const es = await tok.encodeBatch(texts.slice(i, i + 4096), { addSpecialTokens: false });
    for (const e of es) out.push(JSON.stringify({ ids: Array.from(e.getIds()) }));
  }
} else {
  for (const t of texts) {
    const e = await tok.encode(t, null, { addSpecialTokens: false });
    out.push(JSON.stringify({ ids: Array.from(e.getIds()) }));
  }
}
const ms = Number(process.hrtime.bigint() - start) / 1e6;
writeSync(1, out.join("\n") + (out.length ? "\n" : "") + JSON.stringify({ encode_ms: ms }) + "\n");
