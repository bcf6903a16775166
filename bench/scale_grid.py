#!/usr/bin/env python3
"""Scores `ncclz sim --algo auto --json` runs of scenarios/scale-grid-*.json: per point, auto against
the best forced (algorithm, coder) pair (each forced coder's row holds its fastest schedule; the best
plain schedule is auto's time x speedup_vs_best_plain). Auto replays the cost model's pair
(choice_coder: plain, fixedlen, huffman or rea) and predicted_us is the model's time for it. Prints
one line a point and the share of points where auto is within 5%.
usage: bench/scale_grid.py RESULTS.json [RESULTS.json ...]"""
import json
import sys


def score(files):
    total = good = 0
    for f in files:
        with open(f) as fh:
            points = json.load(fh)["points"]
        by = {}
        for p in points:
            by.setdefault((p["collective"], p["nodes"], p["nic_gbps"], p["bytes"]), {})[p["compress"]] = p
        for key, rows in sorted(by.items()):
            auto = rows["auto"]
            forced = {"plain/" + auto["best_plain_algorithm"]: auto["time_us"] * auto["speedup_vs_best_plain"]}
            for c in ("raw", "fixedlen", "huffman"):
                if c in rows:
                    forced[c + "/" + rows[c]["algorithm"]] = rows[c]["time_us"]
            best = min(forced, key=forced.get)
            ok = auto["time_us"] <= 1.05 * forced[best]
            total += 1
            good += ok
            pair = auto["algorithm"] + "/" + auto.get("choice_coder", "rea")
            print("%-9s %5d %7.3f %11d auto %-13s %11.0f us (model %11.0f)  best %-14s %11.0f us  x%.3f %s" %
                  (key + (pair, auto["time_us"], auto.get("predicted_us", 0), best, forced[best],
                          auto["time_us"] / forced[best], "" if ok else "MISS")))
    print("auto within 5%% of the best forced pair: %d of %d points (%.1f%%)" % (good, total, 100.0 * good / max(total, 1)))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    score(sys.argv[1:])
