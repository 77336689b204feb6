#!/usr/bin/env python3
"""What the Python module adds to a force evaluation: the time per call of octwalk.Gravity (update() and
accelerations(), the solver kept between calls) and of octwalk.accelerations (a solver made for each call), at a
tiny N where the tree's work is negligible (so the time is the Python and binding overhead) and at N = 2^16
Plummer bodies (where it is the tree build and walk). Run it with OMP_NUM_THREADS=1 as well: at a tiny N the
evaluation's fixed cost is mostly waking the OpenMP threads, which the Python layer does not add.

    PYTHONPATH=<build>/python python3 benchmarks/python_overhead.py [--n 65536] [--tiny-n 16] [--repeats 30]

Prints a Markdown table of the median, minimum and maximum time per call of each case. Timings depend on the
machine and its load; nothing here is asserted.
"""

import argparse
import os
import platform
import statistics
import time

import octwalk


def per_call(function, repeats, calls):
    """Median, minimum and maximum over `repeats` samples of the time per call of `calls` calls [s]."""
    function()  # first call: allocations, thread start-up
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            function()
        samples.append((time.perf_counter() - start) / calls)
    return statistics.median(samples), min(samples), max(samples)


def cases(n, repeats, calls):
    m = octwalk.ic.plummer(n, seed=1)
    pos, mass = m["pos"], m["mass"]
    g = octwalk.Gravity(pos, mass)

    def update_and_evaluate():
        g.update()
        return g.accelerations()

    return [
        (f"Gravity: update() + accelerations(), N = {n}", per_call(update_and_evaluate, repeats, calls)),
        (f"Gravity: update() alone (arrays checked again), N = {n}", per_call(g.update, repeats, calls)),
        (f"Gravity: accelerations() again (cached, no evaluation), N = {n}",
         per_call(g.accelerations, repeats, calls)),
        (f"octwalk.accelerations(pos, mass) (a new solver each call), N = {n}",
         per_call(lambda: octwalk.accelerations(pos, mass, potential=False), repeats, calls)),
    ], g


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1 << 16)
    parser.add_argument("--tiny-n", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    tiny, _ = cases(args.tiny_n, args.repeats, 200)
    large, g = cases(args.n, max(5, args.repeats // 3), 1)
    print(f"octwalk {octwalk.__version__}, Python {platform.python_version()}, {os.cpu_count()} CPUs, "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}, backend {g.parameters['backend']}, "
          f"theta {g.opening_angle}, epsilon^2 {g.epsilon_squared}")
    print()
    print("| case | median | min | max |")
    print("|---|---|---|---|")
    for name, (med, lo, hi) in tiny + large:
        print(f"| {name} | {med * 1e6:.1f} us | {lo * 1e6:.1f} us | {hi * 1e6:.1f} us |")


if __name__ == "__main__":
    main()
