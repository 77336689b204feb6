#include "host/reference/ewald_direct.h"

#include <cmath>
#include <complex>

#include "common/gravity.h"
#include "host/reference/minimum_image.h"

namespace octwalk {

namespace {

constexpr double kPi = 3.14159265358979323846;
/// Real-space images up to erfc(kRealCut) = 2e-17 relative; wave vectors up to exp(-kWaveCut^2 / 4) = 2e-16.
constexpr double kRealCut = 6.0;
constexpr double kWaveCut = 12.0;

using Complex = std::complex<double>;

/// The splitting and its cut-offs for one box.
struct Ewald
{
    double L, alpha, realCut;
    int hMax; ///< largest |h| of a wave vector k = 2 pi h / L on any axis

    Ewald(double boxSize, double alphaL)
        : L(boxSize), alpha(alphaL / boxSize), realCut(kRealCut / alpha),
          hMax(int(std::floor(kWaveCut * alphaL / (2.0 * kPi))))
    {}

    /// The background's potential per unit mass (it makes the mean potential over the box zero).
    double background() const { return kPi / (alpha * alpha * L * L * L); }
};

/// One wave vector of the half space (the other half is its mirror image, folded into the weight).
struct Wave
{
    int hx, hy, hz;
    Vec3d k;
    double weight; ///< 2 * (4 pi / L^3) * exp(-k^2 / 4 alpha^2) / k^2
};

std::vector<Wave> waves(const Ewald& e)
{
    std::vector<Wave> out;
    const double kMax = kWaveCut * e.alpha;
    for (int hx = 0; hx <= e.hMax; ++hx)
    {
        for (int hy = -e.hMax; hy <= e.hMax; ++hy)
        {
            for (int hz = -e.hMax; hz <= e.hMax; ++hz)
            {
                bool upperHalf = hx > 0 || (hx == 0 && (hy > 0 || (hy == 0 && hz > 0)));
                if (!upperHalf) continue;
                Vec3d k{2 * kPi * hx / e.L, 2 * kPi * hy / e.L, 2 * kPi * hz / e.L};
                double k2 = dot(k, k);
                if (k2 > kMax * kMax) continue;
                double w = 2.0 * 4.0 * kPi / (e.L * e.L * e.L) * std::exp(-k2 / (4 * e.alpha * e.alpha)) / k2;
                out.push_back({hx, hy, hz, k, w});
            }
        }
    }
    return out;
}

/// exp(i 2 pi h x / L) for h in [-hMax, hMax] on each axis of one point: a wave's phase is a product
/// of three of them.
struct AxisPhases
{
    std::vector<Complex> p; ///< 3 * (2 hMax + 1)
    int hMax = 0;

    void set(const Vec3d& x, const Ewald& e)
    {
        hMax = e.hMax;
        p.resize(3 * size_t(2 * hMax + 1));
        const double c[3] = {x.x, x.y, x.z};
        for (int a = 0; a < 3; ++a)
        {
            for (int h = -hMax; h <= hMax; ++h)
                p[a * (2 * hMax + 1) + (h + hMax)] = std::polar(1.0, 2 * kPi * h * c[a] / e.L);
        }
    }

    Complex of(const Wave& w) const
    {
        int row = 2 * hMax + 1;
        return p[w.hx + hMax] * p[row + w.hy + hMax] * p[2 * row + w.hz + hMax];
    }
};

/// Adds the real-space part of a unit mass at offset d (source - target): every image d + nL within
/// realCut; the image d itself (n = 0) without its Newtonian 1/r part (the caller adds that, softened
/// or not at all), which leaves erf(alpha s)/s, smooth at s = 0.
void addRealSpace(const Ewald& e, Vec3d d, Vec3d& acc, double& pot)
{
    const double twoOverSqrtPi = 2.0 / std::sqrt(kPi);
    const double a             = e.alpha;
    int lo[3], hi[3];
    const double c[3] = {d.x, d.y, d.z};
    for (int k = 0; k < 3; ++k)
    {
        lo[k] = int(std::ceil((-e.realCut - c[k]) / e.L));
        hi[k] = int(std::floor((e.realCut - c[k]) / e.L));
    }
    for (int nx = lo[0]; nx <= hi[0]; ++nx)
    {
        for (int ny = lo[1]; ny <= hi[1]; ++ny)
        {
            for (int nz = lo[2]; nz <= hi[2]; ++nz)
            {
                Vec3d r{d.x + nx * e.L, d.y + ny * e.L, d.z + nz * e.L};
                double s2   = dot(r, r);
                double s    = std::sqrt(s2);
                double x    = a * s;
                bool itself = nx == 0 && ny == 0 && nz == 0;
                if (itself)
                {
                    if (x < 1e-3)
                    {
                        // Series of erf(x)/s and of (erf(x) - 2x/sqrt(pi) exp(-x^2)) / s^3: no cancellation.
                        pot += twoOverSqrtPi * a * (1.0 - x * x / 3.0);
                        acc += (-twoOverSqrtPi * a * a * a * (2.0 / 3.0 - 0.4 * x * x)) * r;
                        continue;
                    }
                    pot += std::erf(x) / s;
                    acc += (-(std::erf(x) - twoOverSqrtPi * x * std::exp(-x * x)) / (s2 * s)) * r;
                    continue;
                }
                if (s >= e.realCut) continue;
                pot -= std::erfc(x) / s;
                acc += ((std::erfc(x) + twoOverSqrtPi * x * std::exp(-x * x)) / (s2 * s)) * r;
            }
        }
    }
}

/// Adds the Fourier-space part of sources whose phase sum against the target is sum = sum_j m_j
/// exp(i k.(x_j - x_target)) for each wave.
void addWave(const Wave& w, Complex sum, Vec3d& acc, double& pot)
{
    pot -= w.weight * sum.real();
    acc += (w.weight * sum.imag()) * w.k;
}

/// Adds a radial term f(|r|) to the derivatives, given g_n = (1/s d/ds)^n f for n = 0..3:
/// d_i f = g1 r_i, d_ij f = g2 r_i r_j + g1 delta_ij, d_ijk f = g3 r_i r_j r_k + g2 (delta_ij r_k + ...).
void addRadial(const double g[4], Vec3d r, EwaldDerivatives& t)
{
    const double x[3]                   = {r.x, r.y, r.z};
    static const int hessPair[6][2]     = {{0, 0}, {1, 1}, {2, 2}, {0, 1}, {0, 2}, {1, 2}};
    static const int thirdTriple[10][3] = {{0, 0, 0}, {1, 1, 1}, {2, 2, 2}, {0, 0, 1}, {0, 0, 2},
                                           {0, 1, 1}, {1, 1, 2}, {0, 2, 2}, {1, 2, 2}, {0, 1, 2}};
    t.pot += g[0];
    t.acc += g[1] * r;
    for (int h = 0; h < 6; ++h)
    {
        int i = hessPair[h][0], j = hessPair[h][1];
        t.hess[h] += g[2] * x[i] * x[j] + (i == j ? g[1] : 0.0);
    }
    for (int h = 0; h < 10; ++h)
    {
        int i = thirdTriple[h][0], j = thirdTriple[h][1], k = thirdTriple[h][2];
        t.third[h] +=
            g[3] * x[i] * x[j] * x[k] + g[2] * ((i == j ? x[k] : 0.0) + (i == k ? x[j] : 0.0) + (j == k ? x[i] : 0.0));
    }
}

/// B_n = (-1/s d/ds)^n erfc(alpha s)/s, n = 0..3 (the usual recursion; no cancellation).
void erfcTerms(double alpha, double s, double b[4])
{
    const double s2 = s * s;
    const double e  = std::exp(-alpha * alpha * s2) / (alpha * std::sqrt(kPi));
    b[0]            = std::erfc(alpha * s) / s;
    double power    = 1.0;
    for (int n = 1; n < 4; ++n)
    {
        power *= 2.0 * alpha * alpha;
        b[n] = ((2 * n - 1) * b[n - 1] + power * e) / s2;
    }
}

/// g_n = (1/s d/ds)^n erf(alpha s)/s, n = 0..3: the nearest image without its 1/s. Near s = 0 by its
/// Taylor series (1/s^(2n+1) - B_n cancels there), else through B_n.
void erfTerms(double alpha, double s, double g[4])
{
    const double x = alpha * s;
    if (x < 1.0)
    {
        // erf(alpha s)/s = (2 alpha/sqrt(pi)) sum_k c_k s^(2k), c_k = (-1)^k alpha^(2k) / (k! (2k+1)); each
        // (1/s d/ds) takes s^(2k) to 2k s^(2k-2).
        for (int n = 0; n < 4; ++n) g[n] = 0.0;
        double ck = 2.0 * alpha / std::sqrt(kPi); // (2 alpha/sqrt(pi)) (-1)^k alpha^(2k) / k!
        for (int k = 0; k < 30; ++k)
        {
            double falling = 1.0; // 2k (2k-2) ... (2k-2n+2)
            for (int n = 0; n < 4 && n <= k; ++n)
            {
                g[n] += ck / (2 * k + 1) * falling * std::pow(s, 2 * (k - n));
                falling *= 2.0 * (k - n);
            }
            ck *= -alpha * alpha / (k + 1);
        }
        return;
    }
    double b[4];
    erfcTerms(alpha, s, b);
    double inv = 1.0 / s, sign = 1.0, doubleFactorial = 1.0, invPower = inv;
    for (int n = 0; n < 4; ++n)
    {
        g[n] = sign * (doubleFactorial * invPower - b[n]);
        sign = -sign;
        doubleFactorial *= 2 * n + 1;
        invPower *= inv * inv;
    }
}

} // namespace

EwaldTerm ewaldCorrectionExact(Vec3d d, double L, double alphaL)
{
    const Ewald e(L, alphaL);
    EwaldTerm t{{0, 0, 0}, e.background()};
    addRealSpace(e, d, t.acc, t.pot);
    AxisPhases phase;
    phase.set(d, e);
    for (const Wave& w : waves(e)) addWave(w, phase.of(w), t.acc, t.pot);
    return t;
}

EwaldDerivatives ewaldCorrectionDerivatives(Vec3d d, double L, double alphaL)
{
    const Ewald e(L, alphaL);
    EwaldDerivatives t{e.background(), {0, 0, 0}, {0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0}};
    int lo[3], hi[3];
    const double c[3] = {d.x, d.y, d.z};
    for (int k = 0; k < 3; ++k)
    {
        lo[k] = int(std::ceil((-e.realCut - c[k]) / e.L));
        hi[k] = int(std::floor((e.realCut - c[k]) / e.L));
    }
    for (int nx = lo[0]; nx <= hi[0]; ++nx)
    {
        for (int ny = lo[1]; ny <= hi[1]; ++ny)
        {
            for (int nz = lo[2]; nz <= hi[2]; ++nz)
            {
                Vec3d r{d.x + nx * e.L, d.y + ny * e.L, d.z + nz * e.L};
                double s = std::sqrt(dot(r, r));
                double g[4];
                if (nx == 0 && ny == 0 && nz == 0)
                {
                    erfTerms(e.alpha, s, g);
                }
                else
                {
                    if (s >= e.realCut) continue;
                    // -erfc(alpha s)/s: g_n = (-1)^(n+1) B_n.
                    erfcTerms(e.alpha, s, g);
                    g[0] = -g[0];
                    g[2] = -g[2];
                }
                addRadial(g, r, t);
            }
        }
    }
    // Waves: pot -= w cos(k.d), so acc = w sin k, hess = w cos k k, third = -w sin k k k.
    static const int thirdTriple[10][3] = {{0, 0, 0}, {1, 1, 1}, {2, 2, 2}, {0, 0, 1}, {0, 0, 2},
                                           {0, 1, 1}, {1, 1, 2}, {0, 2, 2}, {1, 2, 2}, {0, 1, 2}};
    for (const Wave& w : waves(e))
    {
        double phase = dot(w.k, d);
        double wc = w.weight * std::cos(phase), ws = w.weight * std::sin(phase);
        const double k[3] = {w.k.x, w.k.y, w.k.z};
        t.pot -= wc;
        t.acc += ws * w.k;
        const double hk[6] = {k[0] * k[0], k[1] * k[1], k[2] * k[2], k[0] * k[1], k[0] * k[2], k[1] * k[2]};
        for (int h = 0; h < 6; ++h) t.hess[h] += wc * hk[h];
        for (int h = 0; h < 10; ++h)
            t.third[h] -= ws * k[thirdTriple[h][0]] * k[thirdTriple[h][1]] * k[thirdTriple[h][2]];
    }
    return t;
}

double ewaldSelfPotential(double L, double alphaL) { return ewaldCorrectionExact({0, 0, 0}, L, alphaL).pot; }

void ewaldDirectSum(const Vec3d* pos, const double* mass, int64_t n, const std::vector<int64_t>& targets, double L,
                    double eps2, double G, std::vector<Vec3d>& acc, std::vector<double>& pot, double alphaL)
{
    const Ewald e(L, alphaL);
    const std::vector<Wave> waveList = waves(e);
    const int64_t numWaves           = int64_t(waveList.size());

    // Structure factors sum_j m_j exp(i k.x_j), each summed over j in index order (any thread count).
    std::vector<AxisPhases> phases(static_cast<size_t>(n));
#pragma omp parallel for schedule(static)
    for (int64_t j = 0; j < n; ++j) phases[j].set(pos[j], e);
    std::vector<Complex> structure(static_cast<size_t>(numWaves));
#pragma omp parallel for schedule(dynamic, 8)
    for (int64_t w = 0; w < numWaves; ++w)
    {
        Complex s{0, 0};
        for (int64_t j = 0; j < n; ++j) s += mass[j] * phases[j].of(waveList[w]);
        structure[w] = s;
    }
    double totalMass = 0;
    for (int64_t j = 0; j < n; ++j) totalMass += mass[j];

    const int64_t numTargets = int64_t(targets.size());
    acc.resize(numTargets);
    pot.resize(numTargets);
#pragma omp parallel for schedule(dynamic, 4)
    for (int64_t t = 0; t < numTargets; ++t)
    {
        const int64_t i = targets[t];
        Vec3d a{0, 0, 0};
        double p = totalMass * e.background();
        for (int64_t j = 0; j < n; ++j)
        {
            Vec3d d{minimumImage(pos[j].x - pos[i].x, L), minimumImage(pos[j].y - pos[i].y, L),
                    minimumImage(pos[j].z - pos[i].z, L)};
            Vec3d aj{0, 0, 0};
            double pj = 0;
            if (j != i) bodyBody(d, 1.0, eps2, aj, pj);
            addRealSpace(e, d, aj, pj);
            a += mass[j] * aj;
            p += mass[j] * pj;
        }
        for (int64_t w = 0; w < numWaves; ++w)
        {
            addWave(waveList[w], structure[w] * std::conj(phases[i].of(waveList[w])), a, p);
        }
        acc[t] = G * a;
        pot[t] = G * p;
    }
}

} // namespace octwalk
