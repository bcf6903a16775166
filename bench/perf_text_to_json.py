#!/usr/bin/env python3
"""Turns `ncclz perf` tables printed as text, each preceded by a line "## PATH COLLECTIVE COMPRESS"
(as the quick runs of docs/reproduce.md print them), into the bench/exec.sh JSON that
`scenarios/validate-h200.json` reads: runs[] of {collective, compress, nranks, path, points[]}
with each row's size, time_us, busbw, cr, coders and wrong, exactly as printed.
Usage: bench/perf_text_to_json.py TEXT COMMIT DATE NRANKS > OUT.json"""
import json
import sys


def main():
    text, commit, date, nranks = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    runs, run = [], None
    for line in open(text):
        f = line.split()
        if line.startswith("## "):
            path, coll, comp = f[1], f[2], f[3]
            run = {"collective": coll, "compress": comp, "nranks": nranks, "path": path, "launch": "threads",
                   "name": "%s-%s-%s" % (path, coll, comp), "points": []}
            runs.append(run)
        elif run is not None and len(f) == 12 and f[0].isdigit():
            r, fx, h = (int(x) for x in f[10].split(":"))
            run["points"].append({"size": int(f[0]), "count": int(f[1]), "time_us": float(f[5]),
                                  "algbw": float(f[6]), "busbw": float(f[7]), "wrong": int(f[8]),
                                  "cr": float(f[9]), "coders": {"raw": r, "fixedlen": fx, "huffman": h},
                                  "maxerr": float(f[11])})
    json.dump({"date": date, "commit": commit, "source": text, "runs": runs}, sys.stdout, indent=1)
    print()


main()
