#!/usr/bin/env python3
"""How full the warps of TreePM's body-leaf kernel are, modelled on a snapshot of a periodic box.

The kernel (device/forces_gpu.cu, bodyLeafWarp) gives a group of 64 targets one warp, a target per lane and slot,
and stages the bodies within reach of the group's box; a pair beyond the cutoff returns at once, so a warp pays a
whole pair for a staged body whenever any of its 32 targets in the slot is within the cutoff. This model takes
groups of n_group bodies in Morton order (the tree's groups are near them), stages every body within reach of a
group's box (the walk's leaves, culled as the kernel culls them) and counts per body: the staged pairs, the pairs
within the cutoff, and the lane-pairs of whole evaluations with T targets and 32 / T staged bodies to a warp (the
kernel's T = 32, and smaller T for a kernel laid out otherwise).

    octwalk convert SNAPSHOT box.tipsy
    python3 dev/leaf_lane_model.py box.tipsy BOX_SIZE PM_GRID [ASMTH RCUT N_GROUP]
"""
import sys

import numpy as np


def tipsy_positions(path):
    data = open(path, "rb").read()
    n = int(np.frombuffer(data[8:12], ">i4")[0])
    dark = np.frombuffer(data[32 : 32 + 36 * n], ">f4").reshape(n, 9)
    return dark[:, 1:4].astype(np.float64)


def morton_order(pos, box):
    cells = np.floor(pos / box * 1024).astype(np.int64)

    def spread(v):
        r = np.zeros_like(v)
        for b in range(10):
            r |= ((v >> b) & 1) << (3 * b)
        return r

    key = spread(cells[:, 0]) << 2 | spread(cells[:, 1]) << 1 | spread(cells[:, 2])
    return pos[np.argsort(key)]


def main():
    path, box, grid = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    asmth = float(sys.argv[4]) if len(sys.argv) > 4 else 1.75
    rcut = float(sys.argv[5]) if len(sys.argv) > 5 else 6.0
    group = int(sys.argv[6]) if len(sys.argv) > 6 else 64
    cutoff2 = (rcut * asmth * box / grid) ** 2
    pos = morton_order(tipsy_positions(path) % box, box)
    n = len(pos)

    def box_distance2(lo, hi, p):
        d = np.abs(p - (lo + hi) / 2)
        d = np.maximum(np.minimum(d, box - d) - (hi - lo) / 2, 0)
        return (d * d).sum(1)

    staged = within = 0
    whole = {t: 0 for t in (32, 16, 8, 4)}
    for g in range(0, n, group):
        targets = pos[g : g + group]
        near = targets - box * np.round((targets - targets[0]) / box)
        sources = pos[box_distance2(near.min(0), near.max(0), pos) < cutoff2]
        d = sources[None, :, :] - targets[:, None, :]
        d -= box * np.round(d / box)
        inside = (d * d).sum(2) < cutoff2
        staged += inside.size
        within += int(inside.sum())
        for t in whole:
            per = 32 // t
            for s in range(0, len(targets), t):
                block = inside[s : s + t]
                pad = (-block.shape[1]) % per
                tiles = np.pad(block, ((0, 0), (0, pad))).reshape(block.shape[0], -1, per)
                whole[t] += 32 * int(tiles.any(axis=(0, 2)).sum())
    print(f"{n} bodies, cutoff {cutoff2 ** 0.5:.4g}, groups of {group}: per body {staged / n:.0f} staged pairs, "
          f"{within / n:.0f} within the cutoff")
    for t, lanes in whole.items():
        print(f"  {t} targets x {32 // t} bodies a warp: {lanes / n:.0f} lane-pairs of whole evaluations, "
              f"{within / lanes:.2f} of them within the cutoff")


if __name__ == "__main__":
    main()
