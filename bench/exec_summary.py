#!/usr/bin/env python3
"""The README's executor table from one bench/exec.sh result (exec-*.json), against issue 5's
targets: per path, launch mode and collective, the 1 GiB auto call against plain NCCL timed in the
same process (--vs-plain), its wire CR and exposed codec time; on NVLink, the lowest auto/plain
ratio over 1 MiB..1 GiB. Usage: bench/exec_summary.py EXEC.json  (markdown on stdout)."""
import json
import sys


def fmt_us(us):
    return f"{us:,.0f}" if us >= 100 else f"{us:.1f}"


def nccl_version(s):
    """'define NCCL_VERSION_CODE 22803' (nccl.h) -> '2.28.3'; other text as it is."""
    code = s.split()[-1]
    if not code.isdigit():
        return s
    c = int(code)
    return f"{c // 10000}.{c // 100 % 100}.{c % 100}"


def main(path):
    j = json.load(open(path))
    print(f"Device {j['device']}, NCCL {nccl_version(j['nccl'])}, commit {j['commit']}, {j['date']}; "
          f"`{path}`.\n")
    print("| path | launch | collective | size | plain NCCL us | ncclz auto us | auto / plain | wire CR | "
          "(auto / plain) / CR | exposed | coders r:f:h | #wrong |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in j["runs"]:
        if r["compress"] != "auto" or r.get("backend") != "nccl":
            continue
        launch = r["launch"] + (", per frame" if r.get("rea_per_frame") else "")
        pts = [p for p in r["points"] if "vs_plain" in p]
        if not pts:
            continue
        if r["path"] == "nvlink":
            worst = min(pts, key=lambda p: p["vs_plain"])
            sizes = f"{pts[0]['size'] >> 20} MiB..{pts[-1]['size'] >> 20} MiB"
            print(f"| nvlink | {launch} | {r['collective']} | {sizes} (lowest at {worst['size'] >> 20} MiB) | "
                  f"{fmt_us(worst['plain_us'])} | {fmt_us(worst['time_us'])} | {worst['vs_plain']:.3f} | 1.00 | - | "
                  f"- | 0:0:0 | {sum(p['wrong'] for p in pts)} |")
            continue
        p = pts[-1]
        cr = p["raw_bytes"] / p["wire_bytes"]
        c = p["coders"]
        ex = f"{100 * p['exposed_frac']:.1f}%" if "exposed_frac" in p else "-"
        print(f"| {r['path']} | {launch} | {r['collective']} | {p['size'] >> 20} MiB | {fmt_us(p['plain_us'])} | "
              f"{fmt_us(p['time_us'])} | {p['vs_plain']:.2f}x | {cr:.2f} | {p['vs_plain'] / cr:.2f} | {ex} | "
              f"{c['raw']}:{c['fixedlen']}:{c['huffman']} | {p['wrong']} |")


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0 if len(sys.argv) == 2 else 2)
    main(sys.argv[1])
