#!/usr/bin/env python3
"""Write text.json: CPython's character classes and case mapping, per code point.

{"unicode": unicodedata.unidata_version,
 "assigned": [[first, last], ...]   code points assigned (category not Cn),
 "space": [[first, last], ...]      str.isspace(),
 "word": [[first, last], ...]       re's \\w on a str pattern,
 "digit": [[first, last], ...]      re's \\d on a str pattern,
 "decimal": [[cp, value], ...]      unicodedata.decimal() of each \\d code point,
 "lower": [[cp, lowered cps...], ...]} str.lower() of each code point it changes.
Usage: python3 gen_text.py > text.json. The Go tests read the file and never run
Python.
"""
import json
import re
import sys
import unicodedata

W, D = re.compile(r"\w"), re.compile(r"\d")
CPS = [cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF]


def ranges(pred):
    out, start, prev = [], None, None
    for cp in CPS:
        if pred(chr(cp)):
            if start is None or cp != prev + 1:
                if start is not None:
                    out.append([start, prev])
                start = cp
            prev = cp
    if start is not None:
        out.append([start, prev])
    return out


digits = ranges(lambda c: D.match(c) is not None)
json.dump({
    "unicode": unicodedata.unidata_version,
    "assigned": ranges(lambda c: unicodedata.category(c) != "Cn"),
    "space": ranges(str.isspace),
    "word": ranges(lambda c: W.match(c) is not None),
    "digit": digits,
    "decimal": [[cp, unicodedata.decimal(chr(cp))] for a, b in digits for cp in range(a, b + 1)],
    "lower": [[cp] + [ord(x) for x in chr(cp).lower()] for cp in CPS if chr(cp).lower() != chr(cp)],
}, sys.stdout, separators=(",", ":"))
sys.stdout.write("\n")
