#!/usr/bin/env python3
"""The linear growth of a perturbed simple cubic lattice against the fluid's (Joyce & Marcos 2007; Garrison et
al. 2016, "PLT"), in the k-bins of `octwalk power` (one per kF = 2 pi / L from kF / 2).

A lattice of N = n^3 bodies displaced by u_q = u exp(i k.q) feels, to first order in u, the acceleration
D(k) u with D the dynamical matrix of gravity on the lattice with the mean density subtracted (Ewald-summed:
real-space erfc part plus reciprocal-lattice part; units 4 pi G rho = 1, spacing 1). In the fluid limit D(k)
-> k k^T / k^2: the longitudinal mode has eigenvalue 1 and the transverse ones 0. On the lattice each k has
three eigenvectors e_j with eigenvalues eps_j (they sum to 1, Kohn's sum rule, which the script checks), and
a mode started as the fluid's growing mode (displacement along k, velocity f H times it: what 2LPT gives)
grows in density as sum_j (k.e_j)^2 g_j(a), where g_j solves
    g'' + (2 + dln H / dln a) g' = 3/2 Omega_m(a) eps_j g,   g(a_start) = 1, g'(a_start) = f(a_start)
(' = d / dln a). The fluid mode is the same with eps = 1 (its D(a) / D(a_start)). The script prints, per bin
below --k-max, the bin's mean (over its modes, as `octwalk power` counts them) of
P_lattice(a) / P_fluid(a) at each --a: what a perfect integrator and exact forces give on that lattice.

usage: python3 scripts/lattice_growth.py [--n-grid 32] [--box 500] [--z-begin 49] [--a 0.5 1.0]
       [--omega0 0.3] [--omega-lambda 0.7] [--k-max 0.05]        (lengths in Mpc/h, k in h/Mpc)
"""
import argparse
import math

ALPHA = 2.0  # Ewald splitting [1 / spacing]: erfc(2 r) < 1e-17 beyond r = 3, exp(-G^2 / 16) < 1e-17 beyond |G| = 8 pi
REAL_SHELLS = 4
RECIPROCAL_SHELLS = 4


def outer(v):
    return [[v[i] * v[j] for j in range(3)] for i in range(3)]


def add_scaled(m, s, t):
    for i in range(3):
        for j in range(3):
            m[i][j] += s * t[i][j]


def short_range_tidal(r):
    """The Hessian of the erfc part of the pair potential -G erfc(alpha r) / r (4 pi G = 1)."""
    d = math.sqrt(sum(c * c for c in r))
    g = 1.0 / (4 * math.pi)
    e = math.erfc(ALPHA * d)
    gauss = 2 * ALPHA / math.sqrt(math.pi) * math.exp(-ALPHA * ALPHA * d * d)
    f1 = g * (e / d**2 + gauss / d)  # f'
    f2 = -g * (2 * e / d**3 + gauss * (2 / d**2 + 2 * ALPHA * ALPHA))  # f''
    u = [c / d for c in r]
    uu = outer(u)
    return [[f2 * uu[i][j] + f1 / d * ((i == j) - uu[i][j]) for j in range(3)] for i in range(3)]


def lattice_vectors(shells):
    span = range(-shells, shells + 1)
    return [(x, y, z) for x in span for y in span for z in span]


REAL = [(v, short_range_tidal(v)) for v in lattice_vectors(REAL_SHELLS) if v != (0, 0, 0)]
RECIPROCAL = [tuple(2 * math.pi * c for c in v) for v in lattice_vectors(RECIPROCAL_SHELLS)]


def long_range(q):
    q2 = sum(c * c for c in q)
    m = outer(q)
    s = math.exp(-q2 / (4 * ALPHA * ALPHA)) / q2
    return [[s * m[i][j] for j in range(3)] for i in range(3)]


ZERO_K_BACKGROUND = [[0.0] * 3 for _ in range(3)]
for G in RECIPROCAL:
    if any(G):
        add_scaled(ZERO_K_BACKGROUND, 1.0, long_range(G))


def dynamical_matrix(k):
    """D(k) for k in units of 1 / spacing (first Brillouin zone), 4 pi G rho = 1."""
    d = [[-ZERO_K_BACKGROUND[i][j] for j in range(3)] for i in range(3)]
    for G in RECIPROCAL:
        add_scaled(d, 1.0, long_range([k[i] + G[i] for i in range(3)]))
    for r, t in REAL:
        add_scaled(d, -(1 - math.cos(sum(k[i] * r[i] for i in range(3)))), t)
    return d


def eigen_symmetric(m, sweeps=50):
    """Jacobi rotations: eigenvalues and eigenvectors (columns) of a symmetric 3x3 matrix."""
    a = [row[:] for row in m]
    v = [[float(i == j) for j in range(3)] for i in range(3)]
    for _ in range(sweeps):
        off = sum(a[i][j] ** 2 for i in range(3) for j in range(3) if i != j)
        if off < 1e-30:
            break
        for p in range(3):
            for q in range(p + 1, 3):
                if abs(a[p][q]) < 1e-300:
                    continue
                theta = (a[q][q] - a[p][p]) / (2 * a[p][q])
                t = math.copysign(1.0, theta) / (abs(theta) + math.sqrt(theta * theta + 1))
                c = 1 / math.sqrt(t * t + 1)
                s = t * c
                for r in range(3):
                    arp, arq = a[r][p], a[r][q]
                    a[r][p], a[r][q] = c * arp - s * arq, s * arp + c * arq
                for r in range(3):
                    apr, aqr = a[p][r], a[q][r]
                    a[p][r], a[q][r] = c * apr - s * aqr, s * apr + c * aqr
                for r in range(3):
                    vrp, vrq = v[r][p], v[r][q]
                    v[r][p], v[r][q] = c * vrp - s * vrq, s * vrp + c * vrq
    return [a[i][i] for i in range(3)], [[v[r][j] for r in range(3)] for j in range(3)]


class Growth:
    """Linear growth on the lattice in flat or curved LCDM (no radiation), RK4 in ln a."""

    def __init__(self, omega0, omega_lambda, a_begin, outputs, steps=4000):
        self.om, self.ol, self.a0, self.outputs = omega0, omega_lambda, a_begin, sorted(outputs)
        self.steps = steps

    def e2(self, a):
        return self.om / a**3 + (1 - self.om - self.ol) / a**2 + self.ol

    def rhs(self, y, state, eps):
        a = math.exp(y)
        e2 = self.e2(a)
        dlnh = (-3 * self.om / a**3 - 2 * (1 - self.om - self.ol) / a**2) / (2 * e2)
        g, gp = state
        return gp, -(2 + dlnh) * gp + 1.5 * self.om / a**3 / e2 * eps * g

    def step(self, y, h, state, eps):
        """One RK4 step of (g, g') in ln a."""
        k1 = self.rhs(y, state, eps)
        k2 = self.rhs(y + h / 2, [s + h / 2 * k for s, k in zip(state, k1)], eps)
        k3 = self.rhs(y + h / 2, [s + h / 2 * k for s, k in zip(state, k2)], eps)
        k4 = self.rhs(y + h, [s + h * k for s, k in zip(state, k3)], eps)
        return tuple(s + h / 6 * (p + 2 * q + 2 * r + w) for s, p, q, r, w in zip(state, k1, k2, k3, k4))

    def integrate(self, eps, f0):
        """g at each output for eigenvalue eps, g(a_begin) = 1, g'(a_begin) = f0."""
        y, y_end = math.log(self.a0), math.log(self.outputs[-1])
        h = (y_end - y) / self.steps
        state, out, targets = (1.0, f0), [], [math.log(a) for a in self.outputs]
        for _ in range(self.steps):
            while targets and targets[0] <= y + 0.5 * h:
                out.append(state[0])
                targets.pop(0)
            state = self.step(y, h, state, eps)
            y += h
        return out + [state[0]] * len(targets)

    def growing_rate(self):
        """f(a_begin) of the fluid's growing mode: started at f = 1 deep in matter domination (1e-4 a_begin)."""
        y = math.log(1e-4 * self.a0)
        h = (math.log(self.a0) - y) / self.steps
        state = (1.0, 1.0)
        for _ in range(self.steps):
            state = self.step(y, h, state, 1.0)
            y += h
        return state[1] / state[0]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n-grid", type=int, default=32)
    p.add_argument("--box", type=float, default=500.0)
    p.add_argument("--z-begin", type=float, default=49.0)
    p.add_argument("--a", type=float, nargs="+", default=[0.5, 1.0])
    p.add_argument("--omega0", type=float, default=0.3)
    p.add_argument("--omega-lambda", type=float, default=0.7)
    p.add_argument("--k-max", type=float, default=0.05)
    args = p.parse_args()
    if args.n_grid < 2 or not args.box > 0 or not args.z_begin >= 0 or not args.k_max > 0:
        p.error("need --n-grid >= 2, --box > 0, --z-begin >= 0 and --k-max > 0")
    if min(args.a) <= 1 / (1 + args.z_begin):
        p.error(f"every --a must be after a_begin = {1 / (1 + args.z_begin):g}")

    kf = 2 * math.pi / args.box
    spacing = args.box / args.n_grid
    growth = Growth(args.omega0, args.omega_lambda, 1 / (1 + args.z_begin), args.a)
    f0 = growth.growing_rate()
    fluid = growth.integrate(1.0, f0)
    cache = {}
    bins = {}
    reach = int(args.k_max / kf + 2)
    worst_sum_rule = 0.0
    for nx in range(-reach, reach + 1):
        for ny in range(-reach, reach + 1):
            for nz in range(-reach, reach + 1):
                n2 = nx * nx + ny * ny + nz * nz
                if n2 == 0:
                    continue
                b = int(math.sqrt(n2) - 0.5)
                key = tuple(sorted((abs(nx), abs(ny), abs(nz))))
                if key not in cache:
                    k = [kf * c * spacing for c in key]
                    vals, vecs = eigen_symmetric(dynamical_matrix(k))
                    worst_sum_rule = max(worst_sum_rule, abs(sum(vals) - 1))
                    khat = [c / math.sqrt(n2) for c in key]
                    lattice = [0.0] * len(args.a)
                    for eps, e in zip(vals, vecs):
                        weight = sum(x * y for x, y in zip(khat, e)) ** 2
                        for i, g in enumerate(growth.integrate(eps, f0)):
                            lattice[i] += weight * g
                    longitudinal = max(vals)
                    cache[key] = ([(lat / fl) ** 2 for lat, fl in zip(lattice, fluid)], longitudinal)
                bins.setdefault(b, []).append((math.sqrt(n2) * kf, cache[key]))
    print(f"# {args.n_grid}^3 lattice in {args.box:g} Mpc/h (spacing {spacing:.4g}, k_Nyquist {math.pi / spacing:.4g} "
          f"h/Mpc), Omega0 {args.omega0:g}, OmegaLambda {args.omega_lambda:g}, from z = {args.z_begin:g} (f = {f0:.5f}); "
          f"Kohn sum rule |sum eps - 1| <= {worst_sum_rule:.1e}; lattice_a = mean over the bin's modes of "
          f"P_lattice(a) / P_fluid(a)")
    print("k_mean,k_over_k_nyquist,modes,largest_eps_mean," + ",".join(f"lattice_a{a:g}" for a in args.a))
    for b in sorted(bins):
        modes = bins[b]
        k_mean = sum(k for k, _ in modes) / len(modes)
        if k_mean >= args.k_max:
            continue
        eps = sum(c[1] for _, c in modes) / len(modes)
        ratios = [sum(c[0][i] for _, c in modes) / len(modes) for i in range(len(args.a))]
        print(f"{k_mean:.6f},{k_mean * spacing / math.pi:.4f},{len(modes)},{eps:.6f}," + ",".join(f"{r:.6f}" for r in ratios))

if __name__ == "__main__":
    main()
