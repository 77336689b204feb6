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

PmMesh::PmMesh(double boxSize, int meshSize, double asmth, MassAssignment assignment, double G)
    : boxSize_(boxSize), splitScale_(asmth * boxSize / meshSize), G_(G), assignment_(assignment),
      fft_(pmCheckedMeshSize(boxSize, meshSize, asmth, G))
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
    const int64_t bad = firstIndexWhere(n, [&](int64_t i) { return pmBodyIsBad(pos[i], mass[i], L); });
    if (bad != n) throwBadPmBody(bad, pos[bad], mass[bad], L);
}

// A stable counting sort in fixed blocks of bodies: the permutation is the same for any thread count.
void PmMesh::sortBySlab(const Vec3d* pos, const double* mass, int64_t n)
{
    const int64_t slabs = fft_.n(), width = pmStencilWidth(assignment_);
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
        slab[i] = int32_t(width == 2 ? pmAxisStencil<2>(pos[i].x, cellsPerLength, slabs).cell[0]
                                     : pmAxisStencil<3>(pos[i].x, cellsPerLength, slabs).cell[0]);
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
                const PmStencil<Width> st =
                    pmStencilOf<Width>(order.pos[q].x, order.pos[q].y, order.pos[q].z, cellsPerLength, n);
                const double mx = order.mass[q] * st.x.weight[k];
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
        const PmStencil<Width> st =
            pmStencilOf<Width>(order.pos[q].x, order.pos[q].y, order.pos[q].z, cellsPerLength, n);
        double sum[4] = {0, 0, 0, 0};
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
