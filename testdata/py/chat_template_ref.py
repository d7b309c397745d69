#!/usr/bin/env python3
"""Reference side of the cross-checks of package tokens (never used at run time).

  chat_template_ref.py texts SAMPLE.jsonl
      Writes one JSON line {"text": ...} for every message content, reasoning
      text, tool output and tool-call argument string of an MLPerf flat JSONL
      trace (its Python-literal fields are read with ast.literal_eval).
  chat_template_ref.py conversations SAMPLE.jsonl
      Writes one JSON line {"messages": [...], "tools": [...]} per conversation
      prefix worth rendering: OpenAI-style messages with reasoning_content, tool
      calls (arguments as the recorded JSON string) and tool results.
  chat_template_ref.py render TOKENIZER_CONFIG.json|TEMPLATE.jinja
      Reads JSON lines {"messages", "tools"?, "add_generation_prompt",
      "chat_template_kwargs"?} on stdin and writes {"text": rendered} (or
      {"error": message}) per line, rendering the config's chat_template (or a
      template file, with bos_token "<s>" and eos_token "</s>") with
      Jinja2 as transformers.apply_chat_template does: a sandboxed environment
      with trim_blocks and lstrip_blocks, loopcontrols, a tojson that keeps
      non-ASCII and key order, raise_exception and strftime_now.
"""
import ast
import json
import sys
from datetime import datetime

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment


def lit(v):
    if isinstance(v, str):
        try:
            return ast.literal_eval(v)
        except (ValueError, SyntaxError):
            return v
    return v


def rows(path):
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def texts(path):
    out = sys.stdout
    for r in rows(path):
        for key in ("content", "reasoning_content", "system"):
            v = r.get(key)
            if isinstance(v, str) and v:
                out.write(json.dumps({"text": v}, ensure_ascii=False) + "\n")
        for tc in lit(r.get("tool_calls")) or []:
            args = tc.get("function", {}).get("arguments")
            if isinstance(args, str) and args:
                out.write(json.dumps({"text": args}, ensure_ascii=False) + "\n")
        for tr in lit(r.get("tool_results")) or []:
            c = tr.get("content")
            if isinstance(c, str) and c:
                out.write(json.dumps({"text": c}, ensure_ascii=False) + "\n")


def conversations(path):
    convs = {}
    order = []
    for r in rows(path):
        cid = r["conversation_id"]
        if cid not in convs:
            convs[cid] = {"messages": [], "tools": None}
            order.append(cid)
        c = convs[cid]
        if r.get("tools") and c["tools"] is None:
            c["tools"] = lit(r["tools"])
        role = r["role"]
        if role == "user":
            if r.get("system"):
                c["messages"].append({"role": "system", "content": r["system"]})
            c["messages"].append({"role": "user", "content": r.get("content") or ""})
        elif role == "assistant":
            m = {"role": "assistant", "content": r.get("content")}
            if r.get("reasoning_content"):
                m["reasoning_content"] = r["reasoning_content"]
            tcs = lit(r.get("tool_calls"))
            if tcs:
                m["tool_calls"] = tcs
            c["messages"].append(m)
        elif role == "tool":
            for tr in lit(r.get("tool_results")) or []:
                c["messages"].append({"role": "tool", "tool_call_id": tr.get("tool_call_id"), "content": tr.get("content")})
    out = sys.stdout
    for cid in order:
        c = convs[cid]
        msgs = c["messages"]
        # A few prefixes per conversation: after the first user turn, the
        # first assistant turn, a tool result, and the whole conversation.
        cuts = sorted({2, 3, 4, 7, len(msgs)})
        for n in cuts:
            if n <= len(msgs):
                out.write(json.dumps({"conversation_id": cid, "messages": msgs[:n], "tools": c["tools"]}, ensure_ascii=False) + "\n")


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def strftime_now(fmt):
    return datetime.now().strftime(fmt)


def normalize_tool_arguments(messages):
    out = []
    for m in messages:
        calls = m.get("tool_calls") if isinstance(m, dict) else None
        if not isinstance(calls, list) or not calls:
            out.append(m)
            continue
        new_calls = []
        for tc in calls:
            fn = tc.get("function") or {}
            args = fn.get("arguments")
            if isinstance(args, str):
                try:
                    parsed = json.loads(args)
                except ValueError:
                    parsed = None
                if isinstance(parsed, dict):
                    tc = dict(tc)
                    tc["function"] = dict(fn, arguments=parsed)
            new_calls.append(tc)
        out.append(dict(m, tool_calls=new_calls))
    return out


def render(path):
    if path.endswith(".jinja"):
        with open(path, encoding="utf-8") as f:
            cfg = {"chat_template": f.read(), "bos_token": "<s>", "eos_token": "</s>"}
    else:
        with open(path, encoding="utf-8") as f:
            cfg = json.load(f)
    source = cfg["chat_template"]
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    tmpl = env.from_string(source)
    specials = {}
    for k in ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"):
        v = cfg.get(k)
        if isinstance(v, dict):
            v = v.get("content")
        if v is not None:
            specials[k] = v
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        if req.get("normalize_tool_arguments"):
            req["messages"] = normalize_tool_arguments(req["messages"])
        for m in req["messages"]:  # null or absent content is rendered as "", as the reference client does
            if isinstance(m, dict) and m.get("content") is None:
                m["content"] = ""
        kwargs = dict(specials)
        kwargs.update(req.get("chat_template_kwargs") or {})
        try:
            text = tmpl.render(messages=req["messages"], tools=req.get("tools"),
                               add_generation_prompt=req.get("add_generation_prompt", False), **kwargs)
            sys.stdout.write(json.dumps({"text": text}, ensure_ascii=False) + "\n")
        except Exception as e:  # reported to the Go side, which compares errors too
            sys.stdout.write(json.dumps({"error": str(e)}, ensure_ascii=False) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    cmd, arg = sys.argv[1], sys.argv[2]
    {"texts": texts, "conversations": conversations, "render": render}[cmd](arg)
