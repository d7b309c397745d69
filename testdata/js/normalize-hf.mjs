// normalize-hf.mjs is the reference for package tokens' NFC: Hugging Face's own
// Rust tokenizers (npm "tokenizers", the official Node binding) normalizing with
// its NFC normalizer, the one a tokenizer.json's {"type": "NFC"} builds. It reads
// JSONL lines {"text": ...} from stdin and writes {"nfc": ...} per line.
import { nfcNormalizer } from "tokenizers";
import { readFileSync, writeSync } from "node:fs";

const n = nfcNormalizer();
const lines = readFileSync(0, "utf8").split("\n").filter((l) => l.length > 0);
const out = lines.map((l) => JSON.stringify({ nfc: n.normalizeString(JSON.parse(l).text) }));
writeSync(1, out.join("\n") + (out.length ? "\n" : ""));
