#include "host/study/power_spectrum.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <sstream>

#include "common/errors.h"
#include "host/core/number_text.h"
#include "host/models/fft_grid.h"

namespace octwalk {
namespace {

using Complex = std::complex<double>;

/// The assignment weights of one axis: up to 3 cells starting at `first` (mod n).
struct AxisWeights
{
    int64_t first;
    int count;
    double w[3];
};

/// u: the position in cell units, in [0, n) (plus 0.5 for the interlaced grid).
AxisWeights axisWeights(double u, MassAssignment scheme)
{
    if (scheme == MassAssignment::Cic)
    {
        double cell = std::floor(u), d = u - cell;
        return {int64_t(cell), 2, {1.0 - d, d, 0.0}};
    }
    double nearest = std::floor(u + 0.5), d = u - nearest;
    return {int64_t(nearest) - 1, 3, {0.5 * (0.5 - d) * (0.5 - d), 0.75 - d * d, 0.5 * (0.5 + d) * (0.5 + d)}};
}

/// Adds every particle's mass to the mesh (serial: the sums then do not depend on the thread count).
void assignMass(const ParticleSet& particles, double boxSize, MassAssignment scheme, double shift, FftGrid& grid)
{
    const int n  = grid.n();
    double* mesh = grid.real();
    std::fill(mesh, mesh + grid.realSize(), 0.0);
    const double toCells = n / boxSize;
    auto wrap            = [n](int64_t i) { return ((i % n) + n) % n; };
    for (int64_t b = 0; b < particles.size(); ++b)
    {
        const Vec3d& p = particles.pos[b];
        AxisWeights ax = axisWeights(p.x * toCells + shift, scheme);
        AxisWeights ay = axisWeights(p.y * toCells + shift, scheme);
        AxisWeights az = axisWeights(p.z * toCells + shift, scheme);
        const double m = particles.mass[b];
        for (int i = 0; i < ax.count; ++i)
        {
            const int64_t xi = wrap(ax.first + i) * n;
            for (int j = 0; j < ay.count; ++j)
            {
                const int64_t row = (xi + wrap(ay.first + j)) * n;
                const double wxy  = m * ax.w[i] * ay.w[j];
                for (int l = 0; l < az.count; ++l) mesh[row + wrap(az.first + l)] += wxy * az.w[l];
            }
        }
    }
}

double sinc(double x) { return x == 0 ? 1.0 : std::sin(x) / x; }

} // namespace

MassAssignment parseMassAssignment(const std::string& name)
{
    if (name == "cic") return MassAssignment::Cic;
    if (name == "tsc") return MassAssignment::Tsc;
    throw ParameterError("assignment = '" + name + "' is invalid: use cic or tsc");
}

std::string toString(MassAssignment a) { return a == MassAssignment::Cic ? "cic" : "tsc"; }

void validatePowerOptions(const PowerOptions& o)
{
    if (o.nMesh < 4 || o.nMesh > 2048)
    {
        throw ParameterError("n-mesh = " + std::to_string(o.nMesh) + " is invalid: must be in [4, 2048]");
    }
    if (o.nBins < 0) throw ParameterError("n-bins = " + std::to_string(o.nBins) + " is invalid: must be >= 0");
    // Up to k_Nyquist + kF/2 the mesh has at most (n/2 + 1)^2 distinct |k|^2 (integers in units of kF^2): more
    // bins than that are empty by construction, and each costs memory (1e8 of them took 5.5 GB).
    const int64_t half = o.nMesh / 2 + 1, most = half * half;
    if (o.nBins > most)
    {
        throw ParameterError("n-bins = " + std::to_string(o.nBins) + " is invalid: must be <= " + std::to_string(most) +
                             " for n-mesh " + std::to_string(o.nMesh) +
                             " ((n-mesh/2 + 1)^2, the distinct |k| up to k_Nyquist: more bins are empty)");
    }
}

PowerSpectrum measurePowerSpectrum(const ParticleSet& particles, double boxSize, const PowerOptions& options)
{
    validatePowerOptions(options);
    if (!(std::isfinite(boxSize) && boxSize > 0))
    {
        throw ParameterError("box-size = " + exactDigits(boxSize) + " is invalid: must be finite and > 0");
    }
    double totalMass = 0, sumSquares = 0;
    ParticleSet wrapped;
    wrapped.pos.resize(particles.pos.size());
    wrapped.mass = particles.mass;
    for (int64_t b = 0; b < particles.size(); ++b)
    {
        const Vec3d& p = particles.pos[b];
        if (!(std::isfinite(p.x) && std::isfinite(p.y) && std::isfinite(p.z)))
        {
            throw InputError("body " + std::to_string(b) + " has a non-finite position");
        }
        auto wrap = [boxSize](double x) {
            double v = std::fmod(x, boxSize);
            return v < 0 ? v + boxSize : v;
        };
        wrapped.pos[b] = Vec3d{wrap(p.x), wrap(p.y), wrap(p.z)};
        totalMass += particles.mass[b];
        sumSquares += particles.mass[b] * particles.mass[b];
    }
    if (!(totalMass > 0) || !std::isfinite(totalMass))
    {
        throw InputError("the particles' total mass is " + exactDigits(totalMass) + ": a power spectrum needs it > 0");
    }

    const int n = options.nMesh;
    FftGrid grid(n);
    assignMass(wrapped, boxSize, options.assignment, 0.0, grid);
    grid.forward();
    const int64_t modes = grid.spectrumSize();
    std::vector<Complex> delta(grid.spectrum(), grid.spectrum() + modes);
    if (options.interlace)
    {
        assignMass(wrapped, boxSize, options.assignment, 0.5, grid);
        grid.forward();
        // The shifted grid holds delta(k) e^{-i k.s} with s = half a cell on each axis: undo the shift and average.
        const Complex* shifted = grid.spectrum();
#pragma omp parallel for schedule(static)
        for (int i = 0; i < n; ++i)
        {
            for (int j = 0; j < n; ++j)
            {
                for (int l = 0; l <= n / 2; ++l)
                {
                    const int64_t m    = (int64_t(i) * n + j) * (n / 2 + 1) + l;
                    const double phase = M_PI * (grid.wavenumber(i) + grid.wavenumber(j) + l) / n;
                    delta[m]           = 0.5 * (delta[m] + shifted[m] * Complex(std::cos(phase), std::sin(phase)));
                }
            }
        }
    }

    const double kF     = 2 * M_PI / boxSize;
    const int nBins     = options.nBins > 0 ? options.nBins : n / 2;
    const double kLow   = 0.5 * kF;
    const double kHigh  = (n / 2 + 0.5) * kF;
    const double volume = boxSize * boxSize * boxSize;
    const int order     = options.assignment == MassAssignment::Cic ? 2 : 3;
    auto edge           = [&](int b) {
        double t = double(b) / nBins;
        return options.logBins ? kLow * std::pow(kHigh / kLow, t) : kLow + t * (kHigh - kLow);
    };
    PowerSpectrum result;
    result.boxSize   = boxSize;
    result.shotNoise = volume * sumSquares / (totalMass * totalMass);
    result.bins.resize(nBins);
    std::vector<double> sumK(nBins, 0.0), sumP(nBins, 0.0);
    for (int i = 0; i < n; ++i)
    {
        const int kx = grid.wavenumber(i);
        for (int j = 0; j < n; ++j)
        {
            const int ky = grid.wavenumber(j);
            for (int l = 0; l <= n / 2; ++l)
            {
                if (kx == 0 && ky == 0 && l == 0) continue;
                const double k = kF * std::sqrt(double(kx) * kx + double(ky) * ky + double(l) * l);
                if (k < kLow || k >= kHigh) continue;
                double t = options.logBins ? std::log(k / kLow) / std::log(kHigh / kLow) : (k - kLow) / (kHigh - kLow);
                int b    = std::min(nBins - 1, int(t * nBins));
                // The half spectrum holds k and -k once, but for the planes l = 0 and l = n/2.
                const int weight = (l == 0 || 2 * l == n) ? 1 : 2;
                const double w   = std::pow(sinc(M_PI * kx / n) * sinc(M_PI * ky / n) * sinc(M_PI * l / n), order);
                const Complex d  = delta[(int64_t(i) * n + j) * (n / 2 + 1) + l] / (totalMass * w);
                sumK[b] += weight * k;
                sumP[b] += weight * volume * std::norm(d);
                result.bins[b].modes += weight;
            }
        }
    }
    for (int b = 0; b < nBins; ++b)
    {
        PowerBin& bin = result.bins[b];
        bin.kLow      = edge(b);
        bin.kHigh     = edge(b + 1);
        if (bin.modes > 0)
        {
            bin.kMean = sumK[b] / double(bin.modes);
            bin.power = sumP[b] / double(bin.modes);
        }
    }
    return result;
}

} // namespace octwalk
