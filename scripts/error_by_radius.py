#!/usr/bin/env python3
"""Where the tree's error tail lives: relative errors of `octwalk accuracy --errors-dir` binned by radius.

  octwalk ic plummer --n 131072 --seed 1 --format tipsy-native -o p17.bin
  octwalk accuracy --model plummer --n 131072 --seed 1 --epsilon 0.01 --theta 0.5 --mac bonsai \
      --backend cpu --sample 2000 --errors-dir err
  python3 scripts/error_by_radius.py p17.bin err/errors_000_*.csv

The snapshot must hold the same bodies in the same order (the errors' index column is the body's
index). For a Plummer sphere in N-body units the absolute error |a| * relative error uses the
analytic |a| = r / (r^2 + b^2)^(3/2), b = 3 pi / 16 (G = M = 1).
"""
import csv
import math
import struct
import sys


def tipsy_native_positions(path):
    data = open(path, "rb").read()
    _, n, _, nsph, ndark, nstar = struct.unpack("<diiiii", data[:28])
    if nsph or nstar or ndark != n:
        sys.exit("%s: only dark-matter-only tipsy-native snapshots are read" % path)
    return [struct.unpack_from("<fff", data, 32 + 36 * k + 4) for k in range(n)]


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    pos = tipsy_native_positions(sys.argv[1])
    b = 3 * math.pi / 16
    for path in sys.argv[2:]:
        with open(path) as f:
            rows = [(int(r["index"]), float(r["error"])) for r in csv.DictReader(l for l in f if not l.startswith("#"))]
        radius = {i: math.sqrt(sum(c * c for c in pos[i])) for i, _ in rows}
        rows.sort(key=lambda r: r[1])
        top = rows[int(0.98 * len(rows)):]
        print("%s: median radius of all %.3f, of the largest 2%% of errors %.3f" % (
            path, sorted(radius.values())[len(rows) // 2], sorted(radius[i] for i, _ in top)[len(top) // 2]))
        print("| r | bodies | median rel. error | p90 | max | median abs. error |")
        print("|---|---|---|---|---|---|")
        edges = [0, 0.1, 0.2, 0.4, 0.7, 1, 2, 5, math.inf]
        for lo, hi in zip(edges, edges[1:]):
            e = sorted(err for i, err in rows if lo <= radius[i] < hi)
            if not e:
                continue
            ab = sorted(err * radius[i] / (radius[i] ** 2 + b * b) ** 1.5 for i, err in rows if lo <= radius[i] < hi)
            print("| %g-%g | %d | %.2e | %.2e | %.2e | %.2e |" % (lo, hi, len(e), e[len(e) // 2], e[int(0.9 * len(e))],
                                                                   e[-1], ab[len(ab) // 2]))


if __name__ == "__main__":
    main()
