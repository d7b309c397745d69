#!/usr/bin/env python3
"""Reference pre-tokenizer split for the tests of package tokens (never used at run time).

  split_ref.py PATTERN < texts.jsonl

Reads JSON lines {"text": ...} and writes {"pieces": [...]} per line: the
matches of PATTERN, found with the `regex` module in VERSION1 mode (which has
the class intersections && of Kimi's pattern), as tiktoken's findall does.
"""
import json
import sys

import regex

pat = regex.compile(sys.argv[1], regex.V1)
for line in sys.stdin:
    if line.strip():
        text = json.loads(line)["text"]
        sys.stdout.write(json.dumps({"pieces": pat.findall(text)}, ensure_ascii=False) + "\n")
