#!/usr/bin/env python3
"""The coefficients of scaledErfc (common/treepm.h): erfcx(u) = exp(u^2) erfc(u) ~ t P(t), t = 1 / (1 + p u).

A Lawson iteration (iteratively reweighted least squares) fits P of the given degree to erfcx's relative error on
Chebyshev points of t over u in [0, 10.5], where exp(-u^2) is still a normal float; the reference comes from mpmath.
Prints the fit's largest relative error in exact arithmetic, the error of the float evaluation (Horner, the
coefficients rounded to float, exact reciprocal as on the host) on 40001 points of [0, 10.5], and the coefficients,
constant term first.

  python3 dev/fit_scaled_erfc.py [--p 0.5] [--degree 8]

Needs numpy and mpmath (Debian: python3-numpy, python3-mpmath).
"""
import argparse

import mpmath
import numpy as np

U_MAX = 10.5


def erfcx(u):
    return float(mpmath.erfc(u) * mpmath.exp(u * u))


def fit(p, degree, points=3000, iterations=600):
    t_min = 1.0 / (1.0 + p * U_MAX)
    k = np.arange(points)
    t = (t_min + 1) / 2 + (1 - t_min) / 2 * np.cos(np.pi * (k + 0.5) / points)
    u = (1 / t - 1) / p
    y = np.array([erfcx(x) for x in u])
    basis = np.vstack([t ** (j + 1) / y for j in range(degree + 1)]).T
    weight = np.ones_like(y)
    best = None
    for _ in range(iterations):
        c, *_ = np.linalg.lstsq(basis * np.sqrt(weight)[:, None], np.sqrt(weight), rcond=None)
        error = np.abs(basis @ c - 1)
        if best is None or error.max() < best[1]:
            best = (c, error.max())
        weight = weight * (error + 1e-30)
        weight /= weight.sum()
    return best


def float_error(p, coefficients):
    c = [np.float32(float("%.9e" % x)) for x in coefficients]
    u = np.float32(np.linspace(0, U_MAX, 40001))
    t = np.float32(1) / (np.float32(1) + np.float32(p) * u)
    value = np.zeros_like(t) + c[-1]
    for j in range(len(c) - 2, -1, -1):
        value = np.float32(value * t + c[j])
    value = np.float32(t * value)
    reference = np.array([erfcx(float(x)) for x in u])
    return float(np.max(np.abs(value / reference - 1)))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--p", type=float, default=0.5, help="t = 1 / (1 + p u)")
    parser.add_argument("--degree", type=int, default=8, help="degree of P")
    args = parser.parse_args()
    mpmath.mp.dps = 30
    coefficients, exact = fit(args.p, args.degree)
    print(f"p {args.p}, degree {args.degree}: relative error {exact:.3g} exact, "
          f"{float_error(args.p, coefficients):.3g} in float")
    print(", ".join("%.9ef" % x for x in coefficients))


if __name__ == "__main__":
    main()
