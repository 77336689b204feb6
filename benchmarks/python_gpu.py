#!/usr/bin/env python3
"""The Python module on the GPU against the command line on the same bodies: the time of one force evaluation of
N Plummer bodies (seed 1, theta 0.5, epsilon 0.01) as `octwalk forces` reports it (its host build plus its walk,
medians over --repeats runs of the command) beside the wall time per call of octwalk.accelerations() on float64
numpy arrays (a solver made for each call: build, upload, walk, download and the results as numpy arrays) and of
octwalk.Gravity's update() + accelerations() (the solver kept), both on the GPU, and the forces' relative error
against float64 direct summation as `octwalk forces --sample` reports it (the same solver and bodies).

    PYTHONPATH=<build>/python python3 benchmarks/python_gpu.py --octwalk <build>/octwalk [--n 1048576]

Prints a Markdown table. Nothing here is asserted: the figures depend on the machine and its load.
"""

import argparse
import re
import statistics
import subprocess
import time

import numpy as np

import octwalk

SETTINGS = dict(theta=0.5, epsilon=0.01)


def cli(binary, n, sample):
    """The report of `octwalk forces` on the bodies and settings of this benchmark."""
    return subprocess.run([binary, "forces", "--model", "plummer", "--n", str(n), "--seed", "1", "--theta", "0.5",
                           "--epsilon", "0.01", "--backend", "gpu", "--sample", str(sample)],
                          check=True, capture_output=True, text=True).stdout


def cli_seconds(binary, n, repeats):
    """Medians of the host build, the walk and their sum of `octwalk forces` over `repeats` runs [s]."""
    host, walk = [], []
    for _ in range(repeats):
        out = cli(binary, n, 0)
        host.append(float(re.search(r"^host .*total ([0-9.eE+-]+)", out, re.M).group(1)))
        walk.append(float(re.search(r"^walk .*total ([0-9.eE+-]+)", out, re.M).group(1)))
    return statistics.median(host), statistics.median(walk), statistics.median(h + w for h, w in zip(host, walk))


def per_call(function, repeats):
    """Median, minimum and maximum wall time of one call over `repeats` calls after a warm-up [s]."""
    function()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples), min(samples), max(samples)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--octwalk", required=True, help="the octwalk command-line binary")
    parser.add_argument("--n", type=int, default=1 << 20)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--sample", type=int, default=1000, help="bodies checked against direct summation by the CLI")
    args = parser.parse_args()

    m = octwalk.ic.plummer(args.n, seed=1)
    pos, mass = np.ascontiguousarray(m["pos"], dtype=np.float64), np.ascontiguousarray(m["mass"], dtype=np.float64)
    host, walk, total = cli_seconds(args.octwalk, args.n, max(3, args.repeats // 2))
    once = per_call(lambda: octwalk.accelerations(pos, mass, backend="gpu", **SETTINGS), args.repeats)
    g = octwalk.Gravity(pos, mass, backend="gpu", **SETTINGS)
    kept = per_call(lambda: (g.update(pos), g.accelerations()), args.repeats)

    error = re.search(r"^\|a_tree - a_direct\|.*$", cli(args.octwalk, args.n, args.sample), re.M)

    print(f"N = {args.n} Plummer bodies (seed 1), theta 0.5, epsilon 0.01, GPU; medians of {args.repeats} repeats")
    print(f"forces' error (octwalk forces --sample {args.sample}): {error.group(0) if error else 'not reported'}\n")
    print("| case | median | min | max | / octwalk forces |")
    print("|---|---|---|---|---|")
    print(f"| `octwalk forces`: host build + walk (median of runs) | {1e3 * total:.2f} ms "
          f"(host {1e3 * host:.2f} + walk {1e3 * walk:.2f}) | | | 1 |")
    for name, (med, lo, hi) in (("`octwalk.accelerations(pos, mass)`", once),
                                ("`Gravity.update(pos); .accelerations()`", kept)):
        print(f"| {name} | {1e3 * med:.2f} ms | {1e3 * lo:.2f} ms | {1e3 * hi:.2f} ms | {med / total:.3f} |")


if __name__ == "__main__":
    main()
