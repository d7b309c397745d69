#!/usr/bin/env python3
"""Write floats.jsonl: Python's float(str) and repr(float) on chosen and random inputs.

Two kinds of lines:
  {"str": text, "ok": bool, "value": float.hex(float(text)) or "nan"/"inf"/"-inf"}
      float(text); "ok" false when it raises ValueError.
  {"hex": float.hex(x), "repr": repr(x)}
      repr of a double (given exactly by its hex form).
Usage: python3 gen.py > floats.jsonl (deterministic: a fixed seed). The Go tests
read the file and never run Python.
"""
import json
import math
import random
import struct
import sys


def hexof(v):
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v.hex()


STRINGS = [
    "", " ", "0", "-0", "+0", "1", "-1", "1.5", ".5", "5.", ".", "-.5", "1e5", "1E5", "1e+5", "1e-5", "1e", "e5",
    "1.5e3", "  2.5  ", "\t3\n", "\x0b4\x0c", "\x1c5\x1f", "\u00a06\u3000", "\u20287\u2029", "\u200b8",
    "1_000", "1_000.5", "1__0", "_1", "1_", "1_e5", "1e1_0", "0x10", "0X1p3", "1p3", "0b1", "0o7",
    "inf", "Inf", "INF", "-inf", "+inf", "infinity", "Infinity", "-Infinity", "+-inf", "--1", "infinit",
    "nan", "NaN", "-nan", "+NaN", "nAn", "nan1", "1e400", "-1e400", "1e-400", "4.9e-324", "2e-324",
    "1.7976931348623157e308", "1.7976931348623159e308", "123456789012345678901234567890",
    "0.1", "0.30000000000000004", "\u0661\u0662", "\u0663.\u0665", "\uff11\uff12", "1\u00b2", "\u2167",
    "1 2", "1,5", "١e٢", "12abc", "abc", "++1", "1e5.5", "1.2.3", "٫5",
]


def main():
    rng = random.Random(20250102)
    out = sys.stdout
    strings = list(STRINGS)
    for _ in range(400):
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randrange(1, 25)))
        s = digits
        if rng.random() < 0.6:
            k = rng.randrange(len(s) + 1)
            s = s[:k] + "." + s[k:]
        if rng.random() < 0.5:
            s += rng.choice("eE") + rng.choice(["", "+", "-"]) + str(rng.randrange(0, 330))
        if rng.random() < 0.3:
            s = "-" + s
        strings.append(s)
    for s in strings:
        try:
            line = {"str": s, "ok": True, "value": hexof(float(s))}
        except ValueError:
            line = {"str": s, "ok": False, "value": None}
        out.write(json.dumps(line, ensure_ascii=True) + "\n")
    values = [0.0, -0.0, 1.0, -1.0, 0.1, 0.5, 1.5, 100.0, 1e15, 9999999999999998.0, 1e16, 1.5e16, 1e22, 1e23,
              1e-4, 0.00011, 1e-5, 1.5e-5, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308,
              float("inf"), float("-inf"), float("nan"), 123456789.123, 0.1 + 0.2, 1 / 3, 2 / 3]
    for _ in range(600):
        bits = rng.getrandbits(64)
        x = struct.unpack("<d", struct.pack("<Q", bits))[0]
        if rng.random() < 0.5:
            x = rng.uniform(-1, 1) * 10 ** rng.randrange(-8, 20)
        values.append(x)
    for x in values:
        out.write(json.dumps({"hex": hexof(x), "repr": repr(x)}, ensure_ascii=True) + "\n")


if __name__ == "__main__":
    main()
