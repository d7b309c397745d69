#!/usr/bin/env python3
"""Write corpus.jsonl: Python's json.loads verdicts and values on JSON-like text.

Each line is {"in": text, "ok": bool, "why": str, "out": tagged value, "truthy":
bool(value)}. "why" is "" when json.loads accepted the text, else the exception's
class: JSONDecodeError for a syntax error, ValueError for an integer of more than
sys.int_max_str_digits digits, RecursionError for nesting past the recursion
limit. "out" tags the value so
that nothing is lost in a JSON round trip: ["null"], ["bool", b], ["int", "123"]
(decimal text), ["float", float.hex(x)] (or "nan", "inf", "-inf"),
["str", [code points]], ["list", [...]], ["dict", [[key code points, value], ...]]
in the dict's order (a duplicate key keeps its first position and its last value).

Usage: python3 gen.py > corpus.jsonl (deterministic: a fixed seed). The Go tests
read the corpus and never run Python.
"""
import json
import math
import random
import sys


def tag(v):
    if v is None:
        return ["null"]
    if isinstance(v, bool):
        return ["bool", v]
    if isinstance(v, int):
        return ["int", str(v)]
    if isinstance(v, float):
        if math.isnan(v):
            return ["float", "nan"]
        if math.isinf(v):
            return ["float", "inf" if v > 0 else "-inf"]
        return ["float", v.hex()]
    if isinstance(v, str):
        return ["str", [ord(c) for c in v]]
    if isinstance(v, list):
        return ["list", [tag(x) for x in v]]
    if isinstance(v, dict):
        return ["dict", [[[ord(c) for c in k], tag(x)] for k, x in v.items()]]
    raise TypeError(type(v))


def verdict(text):
    try:
        v = json.loads(text)  # at the default recursion limit
    except RecursionError:
        return {"in": text, "ok": False, "why": "RecursionError", "out": None}
    except json.JSONDecodeError:
        return {"in": text, "ok": False, "why": "JSONDecodeError", "out": None}
    except ValueError:
        return {"in": text, "ok": False, "why": "ValueError", "out": None}
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(10000)  # tag recurses two frames a level
    try:
        return {"in": text, "ok": True, "why": "", "out": tag(v), "truthy": bool(v)}
    finally:
        sys.setrecursionlimit(limit)


FIXED = [
    "", " ", "null", "true", "false", "nul", "True", "None", "0", "-0", "01", "-01", "1.", ".5", "1.e5",
    "1e", "1e+", "1E-7", "-1.5e+300", "1e400", "-1e400", "1e-400", "+1", "- 1", "-", "0x10", "1_000",
    "NaN", "-NaN", "+NaN", "nan", "Infinity", "-Infinity", "+Infinity", "infinity", "Inf", "-Inf",
    "[NaN, Infinity, -Infinity]", '{"a": NaN}', '{NaN: 1}', "[Infinity1]", "[-Infinityx]", "NaNa",
    '""', '"a"', '"\\u00e9\\ud83d\\ude00"', '"\\ud800"', '"\\udc00\\ud800"', '"\\ud800\\u0041"',
    '"\\ud83d\\ude00\\ud83d"', '"\\u12"', '"\\u12g4"', '"\\x41"', '"\\\'"', '"\\/"', '"\\a"',
    '"\x00"', '"\x1f"', '"\x7f"', '"\t"', '"\u2028\u2029"', '"\ufeff"', '"a', 'a"', '"\\"',
    "\ufeff1", "1\x00", '{"a":1}\x00 garbage', "{}\x00", "[] x", "1 2", " \t\n\r1 \t\n\r", "\x0c1", "\u00a01",
    "{}", "[]", "[1,]", "[,1]", "{,}", '{"a":1,}', '{"a" 1}', '{"a":}', "{1:2}", "{'a':1}", '{"a":1 "b":2}',
    '{"a":1,"b":2,"a":3}', '{"a":{"x":1},"a":[2]}', '{"":0,"":1}', '{"\\u0061":1,"a":2}',
    '[1, [2, [3, {"k": [true, false, null]}]]]', "[[[]]]", "[[[]]", "]", "}", "[}", "{]",
    "1" * 4300, "1" * 4301, "-" + "1" * 4300, "-" + "1" * 4301, "1" * 4301 + ".0", "1" * 4301 + "e0",
    "[" + "1" * 4301 + "]", "0" * 2, "9" * 30, "-" + "9" * 400,
    "[" * 900 + "]" * 900, "[" * 1100 + "]" * 1100, '{"a":' * 900 + "1" + "}" * 900,
]

ATOMS = ["null", "true", "false", "0", "-0", "1", "-12", "3.25", "1e5", "-2.5E-3", "1e400", "123456789012345678901234567890",
         "NaN", "Infinity", "-Infinity", '""', '"x"', '"\\n"', '"\\u00e9"', '"\\ud83d\\ude00"', '"\\ud800"', '"é😀"',
         '"a\\"b\\\\c\\/d"', '"\\u0000"']
NOISE = ["", " ", "\n", "\t", "\r", ",", ":", "[", "]", "{", "}", '"', "\\", "\x00", "\x01", "\x7f", "-", "+", ".", "e",
         "0", "1", "N", "I", "a", "\u00e9", "\u2028", "\ufeff", "\\u", "\\ud800", "nul", "NaN", "Inf"]


def gen_value(rng, depth):
    r = rng.random()
    if depth > 5 or r < 0.45:
        return rng.choice(ATOMS)
    ws = lambda: rng.choice(["", "", " ", "\n ", "\t"])
    if r < 0.7:
        n = rng.randrange(4)
        return "[" + ws() + ("," + ws()).join(gen_value(rng, depth + 1) for _ in range(n)) + ws() + "]"
    n = rng.randrange(4)
    keys = ["a", "b", "a", "k\\u0041", "kA", "", "\\ud800", "é"]
    members = [ws() + '"' + rng.choice(keys) + '"' + ws() + ":" + ws() + gen_value(rng, depth + 1) for _ in range(n)]
    return "{" + ",".join(members) + ws() + "}"


def mutate(rng, text):
    chars = list(text)
    for _ in range(rng.randrange(1, 4)):
        op = rng.randrange(3)
        pos = rng.randrange(len(chars) + 1)
        if op == 0 and chars:
            del chars[min(pos, len(chars) - 1)]
        elif op == 1:
            chars[pos:pos] = list(rng.choice(NOISE))
        elif chars:
            chars[min(pos, len(chars) - 1)] = rng.choice(NOISE)
    return "".join(chars)


def main():
    rng = random.Random(20250101)
    texts = list(FIXED)
    for _ in range(2500):
        v = gen_value(rng, 0)
        texts.append(v)
        texts.append(mutate(rng, v))
    seen = set()
    out = sys.stdout
    for t in texts:
        if t in seen:
            continue
        seen.add(t)
        v = verdict(t)
        sys.setrecursionlimit(10000)  # the tagged value nests two levels a level
        out.write(json.dumps(v, ensure_ascii=True, separators=(",", ":")) + "\n")
        sys.setrecursionlimit(1000)


if __name__ == "__main__":
    main()
