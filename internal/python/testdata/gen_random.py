#!/usr/bin/env python3
"""Write random.json: CPython's random.Random(seed) outputs and shuffles.

Each case: {"seed": decimal str, "uint32": first getrandbits(32) draws,
"shuffles": [{"n": n, "passes": [list after each random.shuffle of the same
list, starting from list(range(n))]}]}: the uint32 draws from one fresh
random.Random(seed), each n's shuffles from another, reshuffling its list once
per pass as the reference's without-replacement sample order does.
Usage: python3 gen_random.py > random.json. The Go tests read the file and
never run Python.
"""
import json
import random
import sys

SEEDS = [0, 1, 42, 2**32 - 1, 2**32, 2**63 - 1, 586478644936801402,
         10487924139932647040, 9315206023656308754, 2**64 - 1, 2**100 + 12345, -42]
cases = []
for seed in SEEDS:
    r = random.Random(seed)
    draws = [r.getrandbits(32) for _ in range(8)]
    shuffles = []
    for n in (1, 2, 3, 10, 200, 300):
        r = random.Random(seed)
        x = list(range(n))
        passes = []
        for _ in range(3):
            r.shuffle(x)
            passes.append(list(x))
        shuffles.append({"n": n, "passes": passes})
    cases.append({"seed": str(seed), "uint32": draws, "shuffles": shuffles})
json.dump(cases, sys.stdout, separators=(",", ":"))
print()
