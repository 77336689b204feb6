#include "host/models/cosmo_ics.h"

#include <algorithm>
#include <cmath>
#include <new>
#include <sstream>
#include <vector>

#include "common/errors.h"
#include "host/core/number_text.h"
#include "host/models/fft_grid.h"
#include "host/tree/octree.h"

namespace octwalk {
namespace {

uint64_t splitmix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

using Complex = std::complex<double>;

double& component(Vec3d& v, int axis) { return axis == 0 ? v.x : axis == 1 ? v.y : v.z; }

/// Fills the grid's spectrum with value(kx, ky, kz) at every stored mode (signed integer wavenumbers),
/// zero at k = 0 and on the Nyquist planes. Each mode is written by one thread: the result does not
/// depend on the thread count.
template<class Value>
void fillSpectrum(FftGrid& grid, Value value)
{
    const int n = grid.n(), nz = n / 2 + 1;
    Complex* out = grid.spectrum();
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; ++i)
    {
        for (int j = 0; j < n; ++j)
        {
            for (int l = 0; l < nz; ++l)
            {
                const int kx = grid.wavenumber(i), ky = grid.wavenumber(j), kz = l;
                const bool nyquist                 = 2 * i == n || 2 * j == n || 2 * l == n;
                const bool mean                    = kx == 0 && ky == 0 && kz == 0;
                out[(int64_t(i) * n + j) * nz + l] = nyquist || mean ? Complex(0.0) : value(kx, ky, kz);
            }
        }
    }
}

/// The mode's index in a spectrum array of the grid (the layout of fft_grid.h).
int64_t modeIndex(int n, int kx, int ky, int kz)
{
    const int i = kx < 0 ? kx + n : kx, j = ky < 0 ? ky + n : ky;
    return (int64_t(i) * n + j) * (n / 2 + 1) + kz;
}

/// The backward transform of value(kx, ky, kz) into `out` (n^3 reals).
template<class Value>
void transformInto(FftGrid& grid, Value value, std::vector<double>& out)
{
    fillSpectrum(grid, value);
    grid.backward();
    out.assign(grid.real(), grid.real() + grid.realSize());
}

/// The second-order source sum_{i>j} (phi_ii phi_jj - phi_ij^2), with phi_ij(k) = k_i k_j delta(k) / k^2
/// (phi the first-order potential, nabla^2 phi = delta).
std::vector<double> secondOrderSource(FftGrid& grid, const std::vector<Complex>& delta, double kFundamental)
{
    const int n     = grid.n();
    auto derivative = [&](int a, int b) {
        return [&, a, b](int kx, int ky, int kz) {
            const double k[3] = {kx * kFundamental, ky * kFundamental, kz * kFundamental};
            const double k2   = k[0] * k[0] + k[1] * k[1] + k[2] * k[2];
            return delta[modeIndex(n, kx, ky, kz)] * (k[a] * k[b] / k2);
        };
    };
    std::vector<double> source, yy, zz;
    transformInto(grid, derivative(0, 0), source);
    transformInto(grid, derivative(1, 1), yy);
    transformInto(grid, derivative(2, 2), zz);
    const int64_t size = grid.realSize();
#pragma omp parallel for schedule(static)
    for (int64_t x = 0; x < size; ++x) source[x] = source[x] * yy[x] + (source[x] + yy[x]) * zz[x];
    std::vector<double>().swap(yy);
    std::vector<double>().swap(zz);
    for (auto [a, b] : {std::pair{0, 1}, std::pair{0, 2}, std::pair{1, 2}})
    {
        fillSpectrum(grid, derivative(a, b));
        grid.backward();
        const double* r = grid.real();
#pragma omp parallel for schedule(static)
        for (int64_t x = 0; x < size; ++x) source[x] -= r[x] * r[x];
    }
    return source;
}

/// Adds value(kx, ky, kz)'s backward transform times positionScale to the positions' and times
/// velocityScale to the velocities' component `axis`.
template<class Value>
void addTransformed(FftGrid& grid, Value value, int axis, double positionScale, double velocityScale, ParticleSet& out)
{
    fillSpectrum(grid, value);
    grid.backward();
    const double* psi   = grid.real();
    const int64_t count = grid.realSize();
#pragma omp parallel for schedule(static)
    for (int64_t x = 0; x < count; ++x)
    {
        component(out.pos[x], axis) += positionScale * psi[x];
        component(out.vel[x], axis) += velocityScale * psi[x];
    }
}

/// The PLT-corrected Zel'dovich displacement and velocity: psi = i k delta / k^2 split into its
/// component c e along the growing eigenvector e and the rest; the position gets psi + (R - 1) c e, the
/// velocity aH (f psi_rest + f_L R c e), where v = a H f psi is the velocity of a mode growing at rate f.
void displacePlt(FftGrid& grid, const PltCorrector& plt, const std::vector<Complex>& delta, double kFundamental,
                 double aH, double fluidRate, ParticleSet& out)
{
    const int n = grid.n();
    // mode(kx, ky, kz, axis, position) is the position's (or the velocity's) spectrum on axis.
    auto mode = [&](int kx, int ky, int kz, int axis, bool position) {
        const double k[3]         = {kx * kFundamental, ky * kFundamental, kz * kFundamental};
        const double k2           = k[0] * k[0] + k[1] * k[1] + k[2] * k[2];
        const Complex psiOverK    = delta[modeIndex(n, kx, ky, kz)] * Complex(0.0, 1.0 / k2);
        const PltCorrection corr  = plt.at(kx, ky, kz);
        const Complex along       = psiOverK * (corr.e[0] * k[0] + corr.e[1] * k[1] + corr.e[2] * k[2]);
        const Complex psi         = psiOverK * k[axis];
        const Complex alongOnAxis = along * corr.e[axis];
        if (position) return psi + (corr.amplitudeScale - 1.0) * alongOnAxis;
        return aH * (fluidRate * (psi - alongOnAxis) + corr.growthRate * corr.amplitudeScale * alongOnAxis);
    };
    for (int axis = 0; axis < 3; ++axis)
    {
        addTransformed(
            grid, [&](int kx, int ky, int kz) { return mode(kx, ky, kz, axis, true); }, axis, 1.0, 0.0, out);
        addTransformed(
            grid, [&](int kx, int ky, int kz) { return mode(kx, ky, kz, axis, false); }, axis, 0.0, 1.0, out);
    }
}

} // namespace

IcUnits icUnits(const std::string& name)
{
    if (name == "nbody") return IcUnits{"nbody", 1.0, 1.0, 1.0};
    if (name == "gadget-mpc") return IcUnits{"gadget-mpc", 1.0, 43.0071, 100.0};
    if (name == "gadget-kpc") return IcUnits{"gadget-kpc", 1e-3, 43007.1, 0.1};
    throw ParameterError("units = '" + name + "' is invalid: use nbody, gadget-mpc or gadget-kpc");
}

void validateCosmoIcs(const CosmoIcParams& p)
{
    if (p.nGrid < 2 || p.nGrid * p.nGrid * p.nGrid > kMaxBodies || p.nGrid > 1023)
    {
        throw ParameterError("n-grid = " + std::to_string(p.nGrid) +
                             " is invalid: must be >= 2 and n-grid^3 <= 2^30 - 1 (n-grid <= 1023)");
    }
    if (!(std::isfinite(p.boxSize) && p.boxSize > 0))
    {
        throw ParameterError("box-size = " + exactDigits(p.boxSize) + " is invalid: must be finite and > 0");
    }
    if (!(std::isfinite(p.zBegin) && p.zBegin >= 0))
    {
        throw ParameterError("z-begin = " + exactDigits(p.zBegin) + " is invalid: must be finite and >= 0");
    }
    if (p.lptOrder != 1 && p.lptOrder != 2)
    {
        throw ParameterError("lpt = " + std::to_string(p.lptOrder) + " is invalid: use 1 (Zel'dovich) or 2 (2LPT)");
    }
    if (!(p.cosmology.omega0 > 0))
    {
        throw ParameterError("Omega0 = " + exactDigits(p.cosmology.omega0) +
                             " is invalid for initial conditions: must be > 0 (the particles carry the matter)");
    }
    const double aBegin = 1.0 / (1.0 + p.zBegin);
    if (p.plt && !(std::isfinite(p.pltATarget) && p.pltATarget > aBegin))
    {
        throw ParameterError("plt-a-target = " + exactDigits(p.pltATarget) +
                             " is invalid: must be finite and > a_begin = " + exactDigits(aBegin));
    }
    validateCosmology(p.cosmology, aBegin, p.plt ? std::max(1.0, p.pltATarget) : 1.0);
}

namespace {

LatticeGrowthTable pltGrowthTable(const CosmoIcParams& p, const LatticeModes& modes)
{
    validateCosmoIcs(p);
    return LatticeGrowthTable(p.cosmology, 1.0 / (1.0 + p.zBegin), p.pltATarget, modes.smallestGrowingEps(),
                              modes.largestGrowingEps());
}

} // namespace

PltCorrector::PltCorrector(const CosmoIcParams& p)
    : modes_(int(p.nGrid)), growth_(pltGrowthTable(p, modes_)),
      fluidRatio_(growthFactor(p.cosmology, p.pltATarget) / growthFactor(p.cosmology, 1.0 / (1.0 + p.zBegin)))
{}

PltCorrection PltCorrector::at(int kx, int ky, int kz) const
{
    const GrowingMode mode     = modes_.growingMode(kx, ky, kz);
    const LatticeGrowthAt grow = growth_.at(mode.eps);
    return PltCorrection{mode.e, mode.eps, fluidRatio_ / grow.ratio, grow.rate};
}

Complex whiteNoiseMode(uint64_t seed, int64_t kx, int64_t ky, int64_t kz)
{
    // One draw per pair {k, -k}: the half with kz > 0, or kz = 0 and ky > 0, or kz = ky = 0 and kx > 0.
    if (kx == 0 && ky == 0 && kz == 0) return Complex(0.0);
    const bool upper = kz > 0 || (kz == 0 && (ky > 0 || (ky == 0 && kx > 0)));
    if (!upper)
    {
        kx = -kx;
        ky = -ky;
        kz = -kz;
    }
    uint64_t h         = splitmix64(seed);
    h                  = splitmix64(h ^ uint64_t(kx));
    h                  = splitmix64(h ^ uint64_t(ky));
    h                  = splitmix64(h ^ uint64_t(kz));
    const double u1    = (double(splitmix64(h + 1) >> 11) + 1.0) * 0x1.0p-53; // (0, 1]
    const double u2    = double(splitmix64(h + 2) >> 11) * 0x1.0p-53;         // [0, 1)
    const double r     = std::sqrt(-std::log(u1));
    const double phase = 2.0 * M_PI * u2;
    const Complex g(r * std::cos(phase), r * std::sin(phase));
    return upper ? g : std::conj(g);
}

Complex icMode(const CosmoIcParams& p, int64_t kx, int64_t ky, int64_t kz)
{
    Complex g = whiteNoiseMode(p.seed, kx, ky, kz);
    // k = 0 is the only mode of modulus 0 (u1 > 0 keeps every other draw away from it).
    if (p.fixAmplitudes && std::abs(g) > 0.0) g /= std::abs(g);
    return p.invertPhases ? -g : g;
}

namespace {

/// The wavenumber [h/Mpc] of the mode with integer |k|^2 = m, computed as makeCosmoIcs computes it.
double modeK(const CosmoIcParams& p, int64_t m)
{
    const double kFundamental = 2.0 * M_PI / p.boxSize;
    return kFundamental * std::sqrt(double(m)) * (1.0 / p.units.lengthInMpcOverH);
}

/// The first |kz| in [0, h] at which pred turns true (pred monotone: false, then true); h + 1 when never.
template<class Pred>
int64_t firstTrue(int64_t h, Pred pred)
{
    int64_t lo = 0, hi = h + 1;
    while (lo < hi)
    {
        const int64_t mid = lo + (hi - lo) / 2;
        if (pred(mid)) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

} // namespace

SpectrumCoverage spectrumCoverage(const CosmoIcParams& p, const LinearPower& power)
{
    validateCosmoIcs(p);
    SpectrumCoverage c;
    // Each axis runs over |k_i| <= (n - 1) / 2: the Nyquist plane k_i = n/2 of an even grid is zero.
    const int64_t h = (p.nGrid - 1) / 2;
    if (h == 0) return c;
    c.boxKMin         = modeK(p, 1);
    c.boxKMax         = modeK(p, 3 * h * h);
    c.modes           = (2 * h + 1) * (2 * h + 1) * (2 * h + 1) - 1;
    const double kMin = power.kMin(), kMax = power.kMax();
    for (int64_t kx = -h; kx <= h; ++kx)
    {
        for (int64_t ky = -h; ky <= h; ++ky)
        {
            // |k| grows with |kz|: the covered |kz| are one run [first, last].
            const int64_t s     = kx * kx + ky * ky;
            const int64_t first = firstTrue(h, [&](int64_t z) { return s + z * z > 0 && modeK(p, s + z * z) >= kMin; });
            const int64_t after = firstTrue(h, [&](int64_t z) { return modeK(p, s + z * z) > kMax; });
            for (int64_t z = first; z < after; ++z) c.covered += z == 0 ? 1 : 2;
        }
    }
    return c;
}

std::string boxModesText(const CosmoIcParams& p, const SpectrumCoverage& c)
{
    std::ostringstream s;
    s.precision(4);
    s << "k = " << c.boxKMin << " to " << c.boxKMax << " h/Mpc (n-grid " << p.nGrid << ", box " << p.boxSize << " "
      << (p.units.lengthInMpcOverH == 1.0 ? "Mpc/h" : "kpc/h") << ")";
    return s.str();
}

ParticleSet makeCosmoIcs(const CosmoIcParams& p, const LinearPower& power)
{
    validateCosmoIcs(p);
    const SpectrumCoverage coverage = spectrumCoverage(p, power);
    if (coverage.modes > 0 && coverage.covered == 0)
    {
        std::ostringstream s;
        s.precision(4);
        s << "the power spectrum (" << power.description() << ") covers k = " << power.kMin() << " to " << power.kMax()
          << " h/Mpc, none of the box's modes, " << boxModesText(p, coverage)
          << ": the field would be zero (an unperturbed lattice); give a table that spans that range";
        throw ParameterError(s.str());
    }
    const double a            = 1.0 / (1.0 + p.zBegin);
    const double d1           = growthFactor(p.cosmology, a);
    const double kFundamental = 2.0 * M_PI / p.boxSize; // internal units
    const double boxMpc       = p.boxSize * p.units.lengthInMpcOverH;
    const double kToHperMpc   = 1.0 / p.units.lengthInMpcOverH;
    const double volumeMpc    = boxMpc * boxMpc * boxMpc;
    // delta(k) at a_begin: <|delta_k|^2> = D^2 P(k) / V, with delta(x) = sum_k delta_k e^{ik.x}.
    return makeLptIcs(p, [&](int kx, int ky, int kz) {
        const double k = kFundamental * std::sqrt(double(kx) * kx + double(ky) * ky + double(kz) * kz);
        return icMode(p, kx, ky, kz) * (d1 * std::sqrt(power(k * kToHperMpc) / volumeMpc));
    });
}

ParticleSet makeLptIcs(const CosmoIcParams& p, const std::function<Complex(int, int, int)>& delta0)
{
    validateCosmoIcs(p);
    const Cosmology& c  = p.cosmology;
    const int n         = int(p.nGrid);
    const double box    = p.boxSize;
    const double a      = 1.0 / (1.0 + p.zBegin);
    const double e      = hubbleRate(c, a);
    const double omegaA = c.omega0 / (a * a * a * e * e);
    // Velocities v = a H f psi; 2LPT: psi2 = -(3/7) Omega(a)^(-1/143) grad phi2, growing with f2 = 2 Omega^(6/11).
    const double aH        = a * p.units.hubble0 * e;
    const double velocity1 = aH * growthRate(c, a);
    const double velocity2 = aH * 2.0 * std::pow(omegaA, 6.0 / 11.0);
    const double d2Factor  = -3.0 / 7.0 * std::pow(omegaA, -1.0 / 143.0);

    const double kFundamental = 2.0 * M_PI / box; // internal units

    ParticleSet out;
    try
    {
        FftGrid grid(n);
        // The field at the lattice's points, half a cell off the grid's (below): e^{i k.x} there is the grid's
        // e^{i k.x_grid} times e^{i pi (kx + ky + kz) / n}.
        fillSpectrum(grid, [&](int kx, int ky, int kz) {
            return delta0(kx, ky, kz) * std::polar(1.0, M_PI * double(kx + ky + kz) / double(n));
        });
        const std::vector<Complex> delta(grid.spectrum(), grid.spectrum() + grid.spectrumSize());

        const int64_t count = grid.realSize();
        out.resize(count);
        const double spacing = box / n;
        // The lattice sits half a spacing off the box's faces, at the centres of the n^3 cells: a lattice on the
        // faces lies on the boundaries of every octree cell and every mesh cell of n or fewer per side, where the
        // tree's and the mesh's errors do not average out over the lattice (docs/cosmology.md: tree + Ewald
        // pulled the largest scales 0.5-0.7% too hard at theta 0.5-0.6, TreePM on n^3 cells up to 1.3% too
        // weakly). The grid's values are the fields at these points (the phase above).
        for (int64_t x = 0; x < count; ++x)
        {
            const int64_t i = x / (int64_t(n) * n), j = (x / n) % n, l = x % n;
            out.pos[x] = Vec3d{(i + 0.5) * spacing, (j + 0.5) * spacing, (l + 0.5) * spacing};
            out.vel[x] = Vec3d{0.0, 0.0, 0.0};
            out.id[x]  = uint64_t(x);
        }
        // Adds the displacement whose Fourier transform is sign i k_axis source(k) / k^2 to the
        // positions, and velocityScale times it to the velocities.
        auto displace = [&](const std::vector<Complex>& source, double sign, double velocityScale) {
            for (int axis = 0; axis < 3; ++axis)
            {
                fillSpectrum(grid, [&](int kx, int ky, int kz) {
                    const double k[3] = {kx * kFundamental, ky * kFundamental, kz * kFundamental};
                    const double k2   = k[0] * k[0] + k[1] * k[1] + k[2] * k[2];
                    return source[modeIndex(n, kx, ky, kz)] * Complex(0.0, sign * k[axis] / k2);
                });
                grid.backward();
                const double* psi = grid.real();
#pragma omp parallel for schedule(static)
                for (int64_t x = 0; x < count; ++x)
                {
                    component(out.pos[x], axis) += psi[x];
                    component(out.vel[x], axis) += velocityScale * psi[x];
                }
            }
        };
        // Zel'dovich: psi1 = -grad phi1 with nabla^2 phi1 = delta, i.e. psi1(k) = i k delta(k) / k^2.
        if (p.plt) displacePlt(grid, PltCorrector(p), delta, kFundamental, aH, growthRate(c, a), out);
        else displace(delta, 1.0, velocity1);
        if (p.lptOrder == 2)
        {
            std::vector<double> source = secondOrderSource(grid, delta, kFundamental);
            std::copy(source.begin(), source.end(), grid.real());
            std::vector<double>().swap(source);
            grid.forward();
            // phi2(k) = -S(k) / k^2 (nabla^2 phi2 = S); psi2 = D2 grad phi2 = i k D2 phi2(k) = -i k D2 S(k) / k^2.
            std::vector<Complex> scaledSource(grid.spectrum(), grid.spectrum() + grid.spectrumSize());
            for (Complex& v : scaledSource) v *= d2Factor / double(count); // D2 S(k); forward() has no 1/n^3
            // Velocities of the second-order part grow with f2: v2 = a H f2 psi2.
            displace(scaledSource, -1.0, velocity2);
        }
    }
    catch (const std::bad_alloc&)
    {
        throw BackendError("out of host memory making cosmological initial conditions of " + std::to_string(n) +
                           "^3 particles");
    }

    const double rhoCrit = 3.0 * p.units.hubble0 * p.units.hubble0 / (8.0 * M_PI * p.units.gravitationalConstant);
    const double mass    = c.omega0 * rhoCrit * box * box * box / double(out.size());
    const double below   = std::nextafter(box, 0.0);
    for (int64_t x = 0; x < out.size(); ++x)
    {
        for (int axis = 0; axis < 3; ++axis)
        {
            double v = std::fmod(component(out.pos[x], axis), box);
            if (v < 0) v += box;
            component(out.pos[x], axis) = v < box ? v : below;
        }
        out.mass[x] = mass;
        out.type[x] = 1;
    }
    out.time      = a;
    out.boxSize   = box;
    out.cosmology = c;
    return out;
}

} // namespace octwalk
