#include "host/pm/pm_mesh.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>

#include "common/errors.h"
#include "common/treepm.h"
#include "host/core/parallel.h"
#include "host/core/timer.h"

namespace octwalk {

namespace {

constexpr double kPi = 3.14159265358979323846;
/// The largest mesh: n^3 cells must index in 64 bits with room to spare.
constexpr int kMaxMeshSize = 1 << 15;

/// The shortest text that reads back as value (1e-09, not 1.0000000000000001e-09).
std::string text(double value)
{
    char buffer[32];
    return std::string(buffer, std::to_chars(buffer, buffer + sizeof buffer, value).ptr);
}

/// meshSize after every parameter of the mesh has been checked (ParameterError naming the bad one).
int checkedMeshSize(double boxSize, int meshSize, double asmth, double G)
{
    if (!(std::isfinite(boxSize) && boxSize > 0))
        throw ParameterError("PM mesh: box size L = " + text(boxSize) + " is invalid: must be finite and > 0");
    if (meshSize < 2 || meshSize > kMaxMeshSize)
        throw ParameterError("PM mesh: mesh size n = " + std::to_string(meshSize) + " is invalid: must be in [2, " +
                             std::to_string(kMaxMeshSize) + "]");
    if (!(std::isfinite(asmth) && asmth > 0))
        throw ParameterError("PM mesh: split scale asmth = " + text(asmth) +
                             " cells is invalid: must be finite and > 0 (r_s = asmth L / n)");
    if (!std::isfinite(G)) throw ParameterError("PM mesh: G = " + text(G) + " is invalid: must be finite");
    return meshSize;
}

/// The cells of one axis that a body's cloud covers and its weights there (Width 2: CIC, 3: TSC).
template<int Width>
struct AxisStencil
{
    int64_t cell[Width];
    double weight[Width];
};

/// The stencil of coordinate x for mesh points at i L / n, i in [0, n), cellsPerLength = n / L.
template<int Width>
AxisStencil<Width> axisStencil(double x, double cellsPerLength, int64_t n)
{
    static_assert(Width == 2 || Width == 3, "CIC or TSC");
    const double g = x * cellsPerLength;
    AxisStencil<Width> s;
    int64_t first;
    if constexpr (Width == 2)
    {
        const double base = std::floor(g), d = g - base;
        first       = int64_t(base);
        s.weight[0] = 1.0 - d;
        s.weight[1] = d;
    }
    else
    {
        const double nearest = std::floor(g + 0.5), d = g - nearest;
        first       = int64_t(nearest) - 1;
        s.weight[0] = 0.5 * (0.5 - d) * (0.5 - d);
        s.weight[1] = 0.75 - d * d;
        s.weight[2] = 0.5 * (0.5 + d) * (0.5 + d);
    }
    // x * n / L may round up to n, and a cloud reaches past either face: the periodic cell. first + k lies
    // in [-1, n + 2], so at most two steps of n (selects, not an integer division per cell).
    for (int k = 0; k < Width; ++k)
    {
        int64_t c = first + k;
        c         = c < 0 ? c + n : c;
        c         = c >= n ? c - n : c;
        s.cell[k] = c >= n ? c - n : c;
    }
    return s;
}

template<int Width>
struct Stencil
{
    AxisStencil<Width> x, y, z;
};

template<int Width>
Stencil<Width> stencilOf(const Vec3d& p, double cellsPerLength, int64_t n)
{
    return {axisStencil<Width>(p.x, cellsPerLength, n), axisStencil<Width>(p.y, cellsPerLength, n),
            axisStencil<Width>(p.z, cellsPerLength, n)};
}

int stencilWidth(MassAssignment a) { return a == MassAssignment::Cic ? 2 : 3; }

/// sin(x) / x.
double sinc(double x) { return x == 0 ? 1.0 : std::sin(x) / x; }

} // namespace

PmMesh::PmMesh(double boxSize, int meshSize, double asmth, MassAssignment assignment, double G)
    : boxSize_(boxSize), splitScale_(asmth * boxSize / meshSize), G_(G), assignment_(assignment),
      fft_(checkedMeshSize(boxSize, meshSize, asmth, G))
{
    const int n = meshSize, power = stencilWidth(assignment);
    k_.resize(size_t(n));
    axisFactor_.resize(size_t(n));
    for (int i = 0; i < n; ++i)
    {
        const int h    = fft_.wavenumber(i);
        const double k = 2 * kPi * h / boxSize;
        const double w = std::pow(sinc(kPi * h / n), power);
        k_[i]          = k;
        axisFactor_[i] = std::exp(-k * k * splitScale_ * splitScale_) / (w * w);
    }
    potentialSpectrum_.resize(size_t(fft_.spectrumSize()));
}

void PmMesh::computeForces(const Vec3d* pos, const double* mass, int64_t n, std::vector<Vec3d>& acc,
                           std::vector<double>& pot)
{
    timings_ = PmTimings{};
    if (n == 0)
    {
        checkBodies(pos, mass, n);
        acc.clear();
        pot.clear();
        return;
    }
    assignMasses(pos, mass, n);
    solve();
    interpolate(acc, pot);
    Stopwatch clock;
    addNonPairTerms(mass, n, deterministicSum<double>(n, [&](int64_t i) { return mass[i]; }), pot);
    timings_.interpolate += clock.lap();
}

void PmMesh::assignMasses(const Vec3d* pos, const double* mass, int64_t n)
{
    timings_ = PmTimings{};
    Stopwatch clock;
    checkBodies(pos, mass, n);
    timings_.check = clock.lap();
    sortBySlab(pos, mass, n);
    timings_.sort = clock.lap();
    if (assignment_ == MassAssignment::Cic) assignMass<2>(order_);
    else assignMass<3>(order_);
    timings_.assign = clock.lap();
}

void PmMesh::solve()
{
    Stopwatch clock;
    fft_.forward();
    timings_.fft += clock.lap();
    applyGreensFunction();
    std::copy(fft_.spectrum(), fft_.spectrum() + fft_.spectrumSize(), potentialSpectrum_.begin());
    timings_.green += clock.lap();

    // The potential, then the acceleration along x, y, z: each transformed back and stored as one component
    // of fields_, so that one pass over the bodies interpolates all four from the same stencil.
    for (int component = 0; component < 4; ++component)
    {
        if (component > 0) differentiate(component - 1);
        timings_.green += clock.lap();
        fft_.backward();
        timings_.fft += clock.lap();
        storeComponent(component);
        timings_.interpolate += clock.lap();
    }
}

void PmMesh::interpolate(std::vector<Vec3d>& acc, std::vector<double>& pot)
{
    Stopwatch clock;
    // interpolate writes every body's four values: sized here, not filled.
    acc.resize(order_.body.size());
    pot.resize(order_.body.size());
    if (assignment_ == MassAssignment::Cic) interpolate<2>(order_, acc, pot);
    else interpolate<3>(order_, acc, pot);
    timings_.interpolate += clock.lap();
}

void PmMesh::checkBodies(const Vec3d* pos, const double* mass, int64_t n) const
{
    const double L    = boxSize_;
    auto outside      = [L](double x) { return !(x >= 0.0 && x < L); };
    const int64_t bad = firstIndexWhere(n, [&](int64_t i) {
        return !std::isfinite(mass[i]) || outside(pos[i].x) || outside(pos[i].y) || outside(pos[i].z);
    });
    if (bad == n) return;
    const std::string body = "PM mesh: body " + std::to_string(bad);
    if (!std::isfinite(mass[bad])) throw InputError(body + " has mass " + text(mass[bad]) + ": must be finite");
    const double c[3]    = {pos[bad].x, pos[bad].y, pos[bad].z};
    const char* names[3] = {"x", "y", "z"};
    for (int d = 0; d < 3; ++d)
    {
        if (outside(c[d]))
            throw InputError(body + ": position " + names[d] + " = " + text(c[d]) +
                             " is outside the periodic box [0, " + text(L) + ")");
    }
}

// A stable counting sort in fixed blocks of bodies: the permutation is the same for any thread count.
void PmMesh::sortBySlab(const Vec3d* pos, const double* mass, int64_t n)
{
    const int64_t slabs = fft_.n(), width = stencilWidth(assignment_);
    const double cellsPerLength = double(slabs) / boxSize_;
    SlabOrder& order            = order_;
    order.slab.resize(size_t(n));
    order.body.resize(size_t(n));
    order.start.resize(size_t(slabs + 1));
    order.pos.resize(size_t(n));
    order.mass.resize(size_t(n));
    std::vector<int32_t>& slab = order.slab;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i)
    {
        slab[i] = int32_t(width == 2 ? axisStencil<2>(pos[i].x, cellsPerLength, slabs).cell[0]
                                     : axisStencil<3>(pos[i].x, cellsPerLength, slabs).cell[0]);
    }
    const int64_t numBlocks = std::clamp<int64_t>(n / 65536, 1, 64);
    std::vector<int64_t> count(size_t(numBlocks * slabs), 0);
#pragma omp parallel for schedule(static, 1)
    for (int64_t b = 0; b < numBlocks; ++b)
    {
        const Chunk c = chunkOf(n, int(b), int(numBlocks));
        for (int64_t i = c.begin; i < c.end; ++i) ++count[b * slabs + slab[i]];
    }
    // count becomes each block's first place in each slab: slabs in order, blocks in order within a slab.
    int64_t next = 0;
    for (int64_t s = 0; s < slabs; ++s)
    {
        order.start[s] = next;
        for (int64_t b = 0; b < numBlocks; ++b)
        {
            const int64_t c      = count[b * slabs + s];
            count[b * slabs + s] = next;
            next += c;
        }
    }
    order.start[slabs] = next;
#pragma omp parallel for schedule(static, 1)
    for (int64_t b = 0; b < numBlocks; ++b)
    {
        const Chunk c = chunkOf(n, int(b), int(numBlocks));
        for (int64_t i = c.begin; i < c.end; ++i) order.body[count[b * slabs + slab[i]]++] = i;
    }
#pragma omp parallel for schedule(static)
    for (int64_t q = 0; q < n; ++q)
    {
        order.pos[q]  = pos[order.body[q]];
        order.mass[q] = mass[order.body[q]];
    }
}

// Each x slab of the mesh gathers from the bodies whose clouds reach it, in slab order and index order
// within a slab: one thread writes a slab, in the same order whatever the thread count (no atomics).
template<int Width>
void PmMesh::assignMass(const SlabOrder& order)
{
    const int64_t n             = fft_.n();
    const double cellsPerLength = double(n) / boxSize_;
    double* mesh                = fft_.real();
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t s = 0; s < n; ++s)
    {
        double* plane = mesh + s * n * n;
        std::fill(plane, plane + n * n, 0.0);
        // A body whose cloud starts at slab s - k covers slab s with its k-th x weight.
        for (int k = 0; k < Width; ++k)
        {
            const int64_t first = ((s - k) % n + n) % n;
            for (int64_t q = order.start[first]; q < order.start[first + 1]; ++q)
            {
                const Stencil<Width> st = stencilOf<Width>(order.pos[q], cellsPerLength, n);
                const double mx         = order.mass[q] * st.x.weight[k];
                for (int a = 0; a < Width; ++a)
                {
                    double* row     = plane + st.y.cell[a] * n;
                    const double my = mx * st.y.weight[a];
                    for (int c = 0; c < Width; ++c) row[st.z.cell[c]] += my * st.z.weight[c];
                }
            }
        }
    }
}

// phi(k) = -4 pi G / k^2 exp(-k^2 r_s^2) / W(k)^2 times the mesh's masses, over L^3: the backward
// transform's sum over k is then the potential (G applied). k = 0 has no potential (the background).
void PmMesh::applyGreensFunction()
{
    const int64_t n = fft_.n(), half = n / 2 + 1;
    const double scale             = -4 * kPi * G_ / (boxSize_ * boxSize_ * boxSize_);
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
                const double k2 = kxy2 + k_[l] * k_[l];
                row[l] *= k2 > 0 ? fxy * axisFactor_[l] / k2 : 0.0;
            }
        }
    }
}

// a(k) = -i k_axis phi(k). The Nyquist plane of the axis (n even) has no sign, -i k there would not be
// Hermitian: it is zero, which also keeps the mesh force antisymmetric (no net self-force on the mesh).
void PmMesh::differentiate(int axis)
{
    const int64_t n = fft_.n(), half = n / 2 + 1;
    const bool even                 = n % 2 == 0;
    const std::complex<double>* phi = potentialSpectrum_.data();
    std::complex<double>* out       = fft_.spectrum();
    auto slope                      = [&](int64_t index) { return even && index == n / 2 ? 0.0 : k_[index]; };
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

void PmMesh::storeComponent(int component)
{
    const int64_t cells = fft_.realSize();
    const double* mesh  = fft_.real();
    if (component < 3)
    {
        std::vector<double>& out = components_[size_t(component)];
        out.resize(size_t(cells));
#pragma omp parallel for schedule(static)
        for (int64_t c = 0; c < cells; ++c) out[size_t(c)] = mesh[c];
        return;
    }
    // The last one is in the transform's own array: all four are now written side by side in one pass.
    fields_.resize(size_t(cells));
    MeshPoint* out    = fields_.data();
    const double *phi = components_[0].data(), *ax = components_[1].data(), *ay = components_[2].data();
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < cells; ++c) out[c] = {{phi[c], ax[c], ay[c], mesh[c]}};
}

template<int Width>
void PmMesh::interpolate(const SlabOrder& order, std::vector<Vec3d>& acc, std::vector<double>& pot) const
{
    const int64_t n = fft_.n(), numBodies = int64_t(order.body.size());
    const double cellsPerLength = double(n) / boxSize_;
    const MeshPoint* mesh       = fields_.data();
    // In slab order: neighbouring bodies read neighbouring planes. Each component is summed over the stencil in
    // the same order, so the four are what four separate passes would give.
#pragma omp parallel for schedule(static)
    for (int64_t q = 0; q < numBodies; ++q)
    {
        const Stencil<Width> st = stencilOf<Width>(order.pos[q], cellsPerLength, n);
        double sum[4]           = {0, 0, 0, 0};
        for (int a = 0; a < Width; ++a)
        {
            for (int b = 0; b < Width; ++b)
            {
                const MeshPoint* row = mesh + (st.x.cell[a] * n + st.y.cell[b]) * n;
                const double wxy     = st.x.weight[a] * st.y.weight[b];
                for (int c = 0; c < Width; ++c)
                {
                    const double w        = wxy * st.z.weight[c];
                    const MeshPoint& cell = row[st.z.cell[c]];
                    for (int k = 0; k < 4; ++k) sum[k] += w * cell.value[k];
                }
            }
        }
        const int64_t i = order.body[q];
        pot[i]          = sum[0];
        acc[i]          = {sum[1], sum[2], sum[3]};
    }
}

void PmMesh::addNonPairTerms(const double* mass, int64_t n, double totalMass, std::vector<double>& pot) const
{
    const double background = G_ * totalMass * shortRangeBackgroundPotential(splitScale_, boxSize_);
    const double self       = G_ * shortRangeSelfPotential(splitScale_);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) pot[i] += background + self * mass[i];
}

} // namespace octwalk
