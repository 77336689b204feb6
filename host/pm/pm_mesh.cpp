#include "host/pm/pm_mesh.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/errors.h"
#include "common/pm.h"
#include "common/treepm.h"
#include "host/core/parallel.h"
#include "host/core/timer.h"

namespace octwalk {

PmMesh::PmMesh(double boxSize, int meshSize, double asmth, MassAssignment assignment, double G, bool interlaced)
    : boxSize_(boxSize), splitScale_(asmth * boxSize / meshSize), G_(G), assignment_(assignment),
      interlaced_(interlaced), fft_(pmCheckedMeshSize(boxSize, meshSize, asmth, G))
{
    const int n = meshSize;
    k_.resize(size_t(n));
    axisFactor_.resize(size_t(n));
    for (int i = 0; i < n; ++i)
    {
        const PmAxisFactor f = pmAxisFactor(i, n, boxSize, splitScale_, assignment);
        k_[i]                = f.k;
        axisFactor_[i]       = f.factor;
    }
    potentialSpectrum_.resize(size_t(fft_.spectrumSize()));
}

void PmMesh::computeForces(const Vec3d* pos, const double* mass, int64_t n, std::vector<Vec3d>& acc,
                           std::vector<double>& pot)
{
    timings_ = PmTimings{};
    if (n == 0)
    {
        checkPmBodies(pos, mass, n, boxSize_);
        acc.clear();
        pot.clear();
        return;
    }
    Stopwatch clock;
    checkPmBodies(pos, mass, n, boxSize_);
    timings_.check = clock.lap();
    assignMasses(pos, mass, n);
    // The fields write every body's four values: sized here, not filled.
    acc.resize(size_t(n));
    pot.resize(size_t(n));
    solveAndInterpolate([&](int component, int64_t i, double sum) { pmBodyField(component, acc[i], pot[i]) = sum; });
    if (interlaced_) averageWithShiftedMesh(pos, mass, n, acc, pot);
    clock.lap();
    addNonPairTerms(mass, n, deterministicSum<double>(n, [&](int64_t i) { return mass[i]; }), pot);
    timings_.interpolate += clock.lap();
}

void PmMesh::assignMasses(const Vec3d* pos, const double* mass, int64_t n)
{
    Stopwatch clock;
    const PmPlanes whole = planes();
    pmSortByPlane(whole, pos, mass, n, order_);
    timings_.sort += clock.lap();
    if (assignment_ == MassAssignment::Cic) pmAssignMass<2>(whole, order_, fft_.real());
    else pmAssignMass<3>(whole, order_, fft_.real());
    timings_.assign += clock.lap();
}

// The second pass on the bodies' places on the shifted mesh; each body's sums are averaged in one rounding per
// component, (unshifted + shifted) / 2, as the device's mesh averages them.
void PmMesh::averageWithShiftedMesh(const Vec3d* pos, const double* mass, int64_t n, std::vector<Vec3d>& acc,
                                    std::vector<double>& pot)
{
    Stopwatch clock;
    const double halfCell = 0.5 * boxSize_ / double(fft_.n());
    shifted_.resize(size_t(n));
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) shifted_[size_t(i)] = pmShiftedPosition(pos[i], halfCell, boxSize_);
    timings_.sort += clock.lap();
    assignMasses(shifted_.data(), mass, n);
    solveAndInterpolate([&](int component, int64_t i, double sum) {
        double& value = pmBodyField(component, acc[i], pot[i]);
        value         = 0.5 * (value + sum);
    });
}

// The potential, then the acceleration along x, y, z: each transformed back into the grid's real array and
// interpolated to the bodies before the next, so that the mesh holds no field beside the transform's own arrays.
template<class Write>
void PmMesh::solveAndInterpolate(Write&& write)
{
    Stopwatch clock;
    fft_.forward();
    timings_.fft += clock.lap();
    applyGreensFunction();
    std::copy(fft_.spectrum(), fft_.spectrum() + fft_.spectrumSize(), potentialSpectrum_.begin());
    timings_.green += clock.lap();
    for (int component = 0; component < 4; ++component)
    {
        if (component > 0) differentiate(component - 1);
        timings_.green += clock.lap();
        fft_.backward();
        timings_.fft += clock.lap();
        auto out = [&](int64_t i, double sum) { write(component, i, sum); };
        if (assignment_ == MassAssignment::Cic) pmInterpolate<2>(planes(), order_, fft_.real(), out);
        else pmInterpolate<3>(planes(), order_, fft_.real(), out);
        timings_.interpolate += clock.lap();
    }
}

void checkPmBodies(const Vec3d* pos, const double* mass, int64_t n, double boxSize)
{
    const int64_t bad = firstIndexWhere(n, [&](int64_t i) { return pmBodyIsBad(pos[i], mass[i], boxSize); });
    if (bad != n) throwBadPmBody(bad, pos[bad], mass[bad], boxSize);
}

PmPlanes PmMesh::planes() const
{
    const int64_t n = fft_.n();
    return {n, double(n) / boxSize_, pmStencilWidth(assignment_), 0, n, true};
}

// phi(k) = -4 pi G / k^2 exp(-k^2 r_s^2) / W(k)^2 times the mesh's masses, over L^3: the backward
// transform's sum over k is then the potential (G applied). k = 0 has no potential (the background).
void PmMesh::applyGreensFunction()
{
    const int64_t n = fft_.n(), half = n / 2 + 1;
    const double scale             = pmGreenScale(G_, boxSize_);
    std::complex<double>* spectrum = fft_.spectrum();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i)
    {
        for (int64_t j = 0; j < n; ++j)
        {
            std::complex<double>* row = spectrum + (i * n + j) * half;
            const double kxy2         = k_[i] * k_[i] + k_[j] * k_[j];
            const double fxy          = scale * axisFactor_[i] * axisFactor_[j];
            for (int64_t l = 0; l < half; ++l)
            {
                row[l] *= pmModeFactor(kxy2, fxy, k_[l], axisFactor_[l]);
            }
        }
    }
}

// a(k) = -i k_axis phi(k), zero on the Nyquist plane of an even axis (pmSlope).
void PmMesh::differentiate(int axis)
{
    const int64_t n = fft_.n(), half = n / 2 + 1;
    const std::complex<double>* phi = potentialSpectrum_.data();
    std::complex<double>* out       = fft_.spectrum();
    auto slope                      = [&](int64_t index) { return pmSlope(index, n, k_[index]); };
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i)
    {
        for (int64_t j = 0; j < n; ++j)
        {
            const int64_t offset = (i * n + j) * half;
            const double kRow    = axis == 0 ? slope(i) : slope(j);
            for (int64_t l = 0; l < half; ++l)
            {
                const double k  = axis == 2 ? slope(l) : kRow;
                out[offset + l] = phi[offset + l] * std::complex<double>(0.0, -k);
            }
        }
    }
}

void PmMesh::addNonPairTerms(const double* mass, int64_t n, double totalMass, std::vector<double>& pot) const
{
    pmAddNonPairTerms(G_, splitScale_, boxSize_, mass, n, totalMass, pot);
}

} // namespace octwalk
