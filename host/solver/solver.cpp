#include "host/solver/solver.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <new>
#include <numeric>
#include <unordered_map>
#include <sstream>
#include <tuple>
#include <utility>

#include "host/reference/direct.h"
#include "host/reference/ewald_direct.h"
#include "host/reference/ewald_table.h"
#include "common/errors.h"
#include "common/gravity.h"
#include "host/core/parallel.h"
#include "host/core/phases.h"
#include "host/core/timer.h"
#include "host/cpu/forces_cpu.h"
#include "device/pm_gpu.h"
#include "host/pm/pm_mesh.h"
#include "host/core/worker_thread.h"

namespace octwalk {

namespace {

/// Probe points sorted along a Morton curve of their own bounding cube and cut into groups of
/// nGroup, so each group is compact and walks like a group of bodies.
void groupProbes(const std::vector<Vec3d>& points, int nGroup, std::vector<int32_t>& order, std::vector<F4>& sorted,
                 std::vector<I2>& ranges)
{
    int64_t n                  = int64_t(points.size());
    std::vector<uint64_t> keys = mortonKeysInBoundingCube(points.data(), n);
    order.resize(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&keys](int32_t a, int32_t b) { return keys[a] < keys[b]; });
    sorted.resize(n);
    for (int64_t k = 0; k < n; ++k)
    {
        const Vec3d& p = points[order[k]];
        sorted[k]      = {float(p.x), float(p.y), float(p.z), 0.0f};
    }
    ranges.clear();
    for (int32_t f = 0; f < n; f += nGroup) ranges.push_back({f, int32_t(std::min<int64_t>(nGroup, n - f))});
}

void checkProbes(const std::vector<Vec3d>& points, double boxSize)
{
    if (points.empty()) throw InputError("evaluateAt needs at least one probe point, got none");
    for (size_t i = 0; i < points.size(); ++i)
    {
        const Vec3d& p = points[i];
        for (double c : {p.x, p.y, p.z})
        {
            if (!std::isfinite(c) || std::fabs(c) > kMaxCoordinate)
            {
                throw InputError("probe point " + std::to_string(i) + ": coordinate " + std::to_string(c) +
                                 " is not finite or exceeds |x| <= 1e15");
            }
            if (boxSize > 0 && !(c >= 0 && c < boxSize))
            {
                throw InputError("probe point " + std::to_string(i) + ": coordinate " + std::to_string(c) +
                                 " is outside the periodic box [0, " + std::to_string(boxSize) + ") (box_size)");
            }
        }
    }
}

/// Runs `step`; a std::bad_alloc becomes a BackendError naming the step, N and roughly how much memory
/// it needs (bytesPerBody * N), instead of a bare std::bad_alloc that says nothing of either.
template<class Step>
void namingMemory(const char* step, int64_t n, double bytesPerBody, Step&& run)
{
    try
    {
        run();
    }
    catch (const std::bad_alloc&)
    {
        std::ostringstream s;
        s.precision(3);
        s << "out of host memory while " << step << " for N = " << n << " (about "
          << bytesPerBody * double(n) / 1048576.0 << " MiB, " << bytesPerBody << " bytes each)";
        throw BackendError(s.str());
    }
}

/// InputError for a result that is not finite, naming it as `what` `name`. The walk runs in float32, so an
/// unsoftened pair closer than about 1e-19 (or any force beyond float32's range) would otherwise come back
/// as inf or NaN.
[[noreturn]] void throwNotFinite(const Vec3d& a, double pot, const char* what, int64_t name)
{
    std::ostringstream s;
    s << what << " " << name << ": acceleration (" << a.x << ", " << a.y << ", " << a.z << ") and potential " << pot
      << " are not all finite: the force overflows floating point (bodies this close need epsilon_squared > 0)";
    throw InputError(s.str());
}

/// Whether the periodic box takes TreePM's split (else the tree and Ewald's sum).
bool treePmOn(const Parameters& p) { return p.box_size > 0 && p.pm_grid > 0; }

/// Whether the walk scales its groups' opening angles by the periodic error control (common/mac.h). Not under
/// TreePM: the control bounds the tree's error against the pull of the whole box, which the short-range walk
/// never sums (its nodes lie within the cutoff).
bool periodicErrorControl(const Parameters& p) { return p.box_size > 0 && p.err_tol_force_acc > 0 && !treePmOn(p); }

/// Whether TreePM's walk expands the nodes too wide for its fixed bound where their error is small beside each
/// group's acceleration (common/treepm.h shortRangeNodeErrorSmallEnough). Only with the previous step's
/// accelerations (GravitySolver::setPreviousAccelerations, a run's steps after the first): an estimate at the
/// group's centre is no bound on its bodies' |a| where the pulls cancel, as in a perturbed lattice (the starting
/// state of a cosmological box: with a3bc852, which still took the estimate, it raised the median force error of
/// 2^15 bodies at z = 49 from 1.1e-2 to 8.4e-2, `octwalk accuracy --input ic.gadget --theta 0.6 --pm-grid 32` with
/// and without --err-tol-force-acc 0), while a body's own previous |a| is.
bool treePmErrorControl(const Parameters& p) { return treePmOn(p) && p.err_tol_force_acc > 0; }

/// TreePM's error control: sets every group's tolerance (groupHalf.w) to err_tol_force_acc times the smallest
/// |a| of its bodies' previous accelerations (before G).
/// @param previous previous[tree.order[k]] belongs to the k-th body in tree order (G = 1)
void setTreePmGroupTolerances(const F4* previous, const HostTree& tree, const Parameters& p, PackedTree& packed)
{
    const int64_t numGroups = int64_t(packed.groupRange.size());
    const float alpha       = float(p.err_tol_force_acc);
#pragma omp parallel for schedule(static)
    for (int64_t g = 0; g < numGroups; ++g)
    {
        packed.groupHalf[g].w =
            treePmGroupTolerance(packed.groupRange[g], alpha, [&](int32_t k) { return previous[tree.order[k]]; });
    }
}

/// Periodic error control: sets every group's scale (groupHalf.w) by periodicGroupScale() from the
/// estimate of its net force at its centre (group g's at index g, before G).
/// @param totalMass the box's mass M
void setPeriodicGroupScales(const F4* estimate, double totalMass, const Parameters& p, PackedTree& packed)
{
    const int64_t numGroups = int64_t(packed.groupRange.size());
    const float accBox      = float(totalMass / (p.box_size * p.box_size));
    const float theta = float(p.opening_angle), alpha = float(p.err_tol_force_acc);
#pragma omp parallel for schedule(static)
    for (int64_t g = 0; g < numGroups; ++g)
    {
        const F4 a            = estimate[g];
        const float accGroup  = std::sqrt(a.x * a.x + a.y * a.y + a.z * a.z);
        packed.groupHalf[g].w = periodicGroupScale(accGroup, accBox, theta, alpha);
    }
}

/// Periodic error control from the previous step's accelerations (GravitySolver::setPreviousAccelerations):
/// group g's |a_g| is the magnitude of the mass-weighted mean of its bodies' previous accelerations, the net
/// force the estimate walk's probe at the group's centre measures. The smallest |a_i| of the group, the more
/// conservative choice, met the same accuracy at more interactions (clustered box 2^15: +3.5%; README,
/// Periodic boxes). Summed in tree order within each group: the same for any thread count.
/// @param previous previous[tree.order[k]] belongs to the k-th body in tree order (G = 1)
void setPeriodicGroupScalesFromBodies(const F4* previous, const HostTree& tree, const Parameters& p, PackedTree& packed)
{
    const int64_t numGroups = int64_t(packed.groupRange.size());
    const float accBox      = float(tree.poles.mass[0] / (p.box_size * p.box_size));
    const float theta = float(p.opening_angle), alpha = float(p.err_tol_force_acc);
#pragma omp parallel for schedule(static)
    for (int64_t g = 0; g < numGroups; ++g)
    {
        const I2 r = packed.groupRange[g];
        double m   = 0;
        Vec3d sum{0, 0, 0};
        for (int32_t k = r.x; k < r.x + r.y; ++k)
        {
            const F4 a = previous[tree.order[k]];
            m += tree.mass[k];
            sum += tree.mass[k] * Vec3d{a.x, a.y, a.z};
        }
        const double accGroup = m > 0 ? std::sqrt(dot(sum, sum)) / m : 0.0;
        packed.groupHalf[g].w = periodicGroupScale(float(accGroup), accBox, theta, alpha);
    }
}

/// Below this magnitude float32's spacing is at most 2^-63: only there can two distinct float32 coordinates
/// differ by less than 2^-63.
constexpr float kTinyCoordinate = 0x1p-39f;

/// A body's cell for the search of unresolvable pairs: per axis, a coordinate below kTinyCoordinate by its
/// 2^-63 slot (so a partner within 2^-63 lies in the slot or a neighbouring one), any other by its bits (its
/// partner must hold the same float32 there, the next one being 2^-62 or more away).
struct PairCell
{
    int64_t code[3];
    bool operator==(const PairCell& o) const
    {
        return code[0] == o.code[0] && code[1] == o.code[1] && code[2] == o.code[2];
    }
};

struct PairCellHash
{
    size_t operator()(const PairCell& c) const
    {
        uint64_t h = 1469598103934665603ull;
        for (int64_t v : c.code) h = (h ^ uint64_t(v)) * 1099511628211ull;
        return size_t(h);
    }
};

bool isTiny(float v) { return std::fabs(v) < kTinyCoordinate; }

int64_t cellCode(float v)
{
    if (isTiny(v)) return int64_t(std::floor(double(v) * 0x1p63));
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof(bits));
    return (int64_t(1) << 40) + int64_t(bits); // apart from every slot index (|slot| < 2^24)
}

/// InputError for a pair that the float32 walk would silently drop: distinct in float32 but with
/// r^2 + eps^2 below float32's normal range (r below 2^-63 ~ 1.08e-19 unsoftened), where the kernels
/// (common/gravity.h, invSqrtOrZero) give no force instead of a subnormal-precision one. Checked once per
/// tree here, not in the kernels' inner loop. Only a body with a coordinate below 2^-39 in magnitude can
/// be in such a pair (see kTinyCoordinate), so the search costs one pass over the bodies and a hash of those
/// few. A pair equal in float32 counts as coincident and contributes nothing, as documented.
void checkResolvablePairs(const BodySpan& b, double eps2)
{
    const float eps2f = float(eps2);
    if (eps2f >= minNormal<float>()) return;
    // One parallel pass finds whether any body has a small coordinate (a superset of the float32 test below:
    // float rounding is monotone and 2^-39 is a float); usually none does and nothing else is done.
    const double tiny = double(kTinyCoordinate);
    auto small        = [&](int64_t i) {
        const Vec3d& x = b.pos[i];
        return std::fabs(x.x) < tiny || std::fabs(x.y) < tiny || std::fabs(x.z) < tiny;
    };
    const int64_t first = firstIndexWhere(b.n, small);
    if (first == b.n) return;
    auto toFloat = [&](int64_t i) { return Vec3f{float(b.pos[i].x), float(b.pos[i].y), float(b.pos[i].z)}; };
    std::unordered_map<PairCell, std::vector<int64_t>, PairCellHash> cells;
    for (int64_t i = first; i < b.n; ++i)
    {
        const Vec3f x = toFloat(i);
        if (!isTiny(x.x) && !isTiny(x.y) && !isTiny(x.z)) continue;
        cells[PairCell{{cellCode(x.x), cellCode(x.y), cellCode(x.z)}}].push_back(i);
    }
    // Bodies at one float32 point are one member: many bodies at one place cost no pairs.
    for (auto& [cell, members] : cells)
    {
        auto key = [&](int64_t i) {
            const Vec3f x = toFloat(i);
            return std::make_tuple(x.x, x.y, x.z, i);
        };
        std::sort(members.begin(), members.end(), [&](int64_t a, int64_t c) { return key(a) < key(c); });
        members.erase(std::unique(members.begin(), members.end(),
                                  [&](int64_t a, int64_t c) {
                                      const Vec3f xa = toFloat(a), xc = toFloat(c);
                                      return xa.x == xc.x && xa.y == xc.y && xa.z == xc.z;
                                  }),
                      members.end());
    }
    for (const auto& [cell, members] : cells)
    {
        const Vec3f corner    = toFloat(members.front());
        const int64_t span[3] = {isTiny(corner.x) ? 1 : 0, isTiny(corner.y) ? 1 : 0, isTiny(corner.z) ? 1 : 0};
        for (int64_t dx = -span[0]; dx <= span[0]; ++dx)
            for (int64_t dy = -span[1]; dy <= span[1]; ++dy)
                for (int64_t dz = -span[2]; dz <= span[2]; ++dz)
                {
                    const auto other = cells.find(PairCell{{cell.code[0] + dx, cell.code[1] + dy, cell.code[2] + dz}});
                    if (other == cells.end()) continue;
                    for (int64_t i : members)
                    {
                        const Vec3f xi = toFloat(i);
                        for (int64_t j : other->second)
                        {
                            const Vec3f d   = toFloat(j) - xi;
                            const float r2  = softenedDistance2(d, eps2f);
                            const bool seen = d.x != 0.0f || d.y != 0.0f || d.z != 0.0f;
                            if (!seen || r2 >= minNormal<float>()) continue;
                            const Vec3d dd = b.pos[j] - b.pos[i];
                            std::ostringstream s;
                            s.precision(3);
                            s << "bodies " << b.nameOf(std::min(i, j)) << " and " << b.nameOf(std::max(i, j)) << " are "
                              << std::sqrt(dot(dd, dd)) << " apart with epsilon_squared = " << eps2
                              << ": closer than 2^-63 = 1.08e-19, where the float32 walk cannot resolve a pair "
                                 "(its r^2 leaves float32's normal range) and would give it no force; give "
                                 "epsilon_squared >= 1.2e-38 (epsilon >= 1.08e-19) or move them apart";
                            throw InputError(s.str());
                        }
                    }
                }
    }
}

/// No body: the start of a search for the smallest name of a bad one.
constexpr int64_t kNoBody = INT64_MAX;

/// InputError naming the first result that is not finite (throwNotFinite).
void checkFinite(const std::vector<Vec3d>& acc, const std::vector<double>& pot, const char* what,
                 const std::vector<int64_t>* index = nullptr)
{
    const int64_t k = firstIndexWhere(int64_t(acc.size()), [&](int64_t j) { return !finiteResult(acc[j], pot[j]); });
    if (k == int64_t(acc.size())) return;
    throwNotFinite(acc[k], pot[k], what, index ? (*index)[k] : k);
}

/// dst = src, element by element in parallel (first touch by the threads that later read it).
template<class T>
void parallelCopy(const std::vector<T>& src, std::vector<T>& dst)
{
    dst.resize(src.size());
    const int64_t n = int64_t(src.size());
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) dst[i] = src[i];
}

/// InputError when softening leaves every acceleration below float32's normal range (each ~ m d / eps^3),
/// where it has lost its precision or underflowed to zero, although bodies with mass sit at distinct points.
/// out: the walk's float32 results, before G.
void checkNotAllUnderflowed(const F4* out, int64_t numOut, const BodySpan& bodies, double eps2)
{
    if (!(eps2 > 0)) return;
    const float normal = std::numeric_limits<float>::min();
    for (int64_t k = 0; k < numOut; ++k)
    {
        const F4& a = out[k];
        if (std::fabs(a.x) >= normal || std::fabs(a.y) >= normal || std::fabs(a.z) >= normal) return;
    }
    const Vec3d* pos = bodies.pos;
    int64_t first    = -1;
    for (int64_t i = 0; i < bodies.n; ++i)
    {
        if (!(bodies.mass[i] > 0)) continue;
        if (first < 0) first = i;
        else if (pos[i].x != pos[first].x || pos[i].y != pos[first].y || pos[i].z != pos[first].z)
        {
            std::ostringstream s;
            s << "every acceleration underflows float32 (below " << normal << "): parameter epsilon_squared = " << eps2
              << " (epsilon = " << std::sqrt(eps2)
              << ") is too large for bodies this close together (an acceleration is about m d / epsilon^3)";
            throw InputError(s.str());
        }
    }
}

} // namespace

ShortRangeView shortRangeView(const Parameters& p)
{
    const double rs = p.asmth * p.box_size / double(p.pm_grid), cutoff = p.rcut * rs;
    ShortRangeView s;
    s.splitScale              = float(rs);
    s.uPerLength              = float(0.5 / rs);
    s.cutoff                  = float(cutoff);
    s.cutoff2                 = float(cutoff * cutoff);
    const double extent       = shortRangeNodeExtentFactor(p.mac == Mac::Octgrav, p.opening_angle);
    s.nodeExtentFactor        = float(extent);
    const double sizeDistance = kTreePmNodeSizeDistance * rs * rs;
    s.nodeSizeDistance2       = float(sizeDistance * sizeDistance);
    const double farDistance  = kTreePmFarSizeDistance * rs * rs;
    s.farSizeDistance2        = float(farDistance * farDistance);
    s.nodeErrorScale          = float(rs * rs * rs * rs / kTreePmNodeErrorFactor);
    s.nodeTruncationScale     = float(kTreePmTruncationFactor * extent * extent * extent);
    return s;
}

PeriodicView treePmPeriodicView(const Parameters& p)
{
    PeriodicView view{nullptr, 0, float(p.box_size), float(1.0 / p.box_size)};
    view.shortRange = shortRangeView(p);
    return view;
}

GravitySolver::GravitySolver(const Parameters& p) { setParameters(p); }

GravitySolver::~GravitySolver()                                   = default;
GravitySolver::GravitySolver(GravitySolver&&) noexcept            = default;
GravitySolver& GravitySolver::operator=(GravitySolver&&) noexcept = default;

void GravitySolver::setParameters(const Parameters& requested)
{
    validate(requested);
    const Parameters p = withPmGridFor(requested, bodies_.n);
    if (p.pm_grid > 0 && !(p.box_size > 0))
    {
        // box_size is 0 here: validate refuses a negative one.
        throw ParameterError("parameter pm_grid = " + std::to_string(p.pm_grid) +
                             " is invalid with box_size = 0: TreePM is for periodic boxes (box_size > 0)");
    }
    if (p.backend == Backend::Gpu && !gpuAvailable())
    {
        throw BackendError("backend gpu requested, but no CUDA device is available (" + gpuDescription() + ")");
    }
    if (p.pm_grid > 0 && p.pm_backend == Backend::Gpu && !gpuAvailable())
    {
        throw BackendError("pm_backend gpu requested, but no CUDA device is available (" + gpuDescription() + ")");
    }
    params_          = p;
    requestedPmGrid_ = requested.pm_grid;
    treeValid_       = false;
}

void GravitySolver::resolvePmGrid()
{
    if (requestedPmGrid_ != kPmGridAuto) return;
    params_.pm_grid = kPmGridAuto;
    params_         = withPmGridFor(params_, bodies_.n);
}

void GravitySolver::setBodies(const std::vector<Vec3d>& pos, const std::vector<double>& mass,
                              const std::vector<uint64_t>& ids)
{
    if (mass.size() != pos.size())
    {
        throw InputError("setBodies: " + std::to_string(pos.size()) + " positions but " + std::to_string(mass.size()) +
                         " masses");
    }
    if (!ids.empty() && ids.size() != pos.size())
    {
        throw InputError("setBodies: " + std::to_string(pos.size()) + " positions but " + std::to_string(ids.size()) +
                         " ids");
    }
    // validateBodies reads no ids, and checks N before anything is copied.
    validateBodies({pos.data(), mass.data(), ids.empty() ? nullptr : ids.data(), int64_t(pos.size())});
    treeValid_ = false;
    setPreviousAccelerations(nullptr);
    bodies_ = {nullptr, nullptr, nullptr, 0};
    namingMemory("copying the bodies", int64_t(pos.size()), 40, [&] {
        try
        {
            const int64_t n = int64_t(pos.size());
            if (ids.empty())
            {
                id_.resize(pos.size());
#pragma omp parallel for schedule(static)
                for (int64_t i = 0; i < n; ++i) id_[i] = uint64_t(i);
            }
            else parallelCopy(ids, id_);
            parallelCopy(pos, pos_);
            parallelCopy(mass, mass_);
            bodies_ = {pos_.data(), mass_.data(), id_.data(), n};
            resolvePmGrid();
        }
        catch (...)
        {
            // No half-replaced set: positions of one set with masses of another.
            pos_.clear();
            mass_.clear();
            id_.clear();
            throw;
        }
    });
}

void GravitySolver::attachBodies(const Vec3d* pos, const double* mass, const uint64_t* ids, int64_t n)
{
    if (!pos || !mass || !ids) throw InputError("attachBodies: positions, masses and ids are all required");
    validateBodies({pos, mass, ids, n});
    treeValid_ = false;
    setPreviousAccelerations(nullptr);
    bodies_ = {pos, mass, ids, n};
    resolvePmGrid();
}

void GravitySolver::attachBodies(const BodySpan& b, bool checked)
{
    if (!b.pos || !b.mass || !(b.id || b.rank))
        throw InputError("attachBodies: positions, masses and ids (or ranks) are all required");
    if (!checked || b.n < 2 || b.n > kMaxBodies) validateBodies(b);
    treeValid_ = false;
    setPreviousAccelerations(nullptr);
    bodies_ = b;
    resolvePmGrid();
}

Backend resolveBackend(Backend requested)
{
    if (requested == Backend::Auto) return gpuAvailable() ? Backend::Gpu : Backend::Cpu;
    return requested;
}

Backend GravitySolver::activeBackend() const { return resolveBackend(params_.backend); }

void GravitySolver::setGpuKernelConfig(const GpuKernelConfig& config)
{
    checkKernelConfig(config);
    gpuConfig_ = config;
    if (gpu_) gpu_->setKernelConfig(config);
}

void GravitySolver::setEwaldWalkConfig(const EwaldWalkConfig& config)
{
    if (config.minEntries < 0)
    {
        throw ParameterError("EwaldWalkConfig: minEntries " + std::to_string(config.minEntries) + " (must be >= 0)");
    }
    ewaldWalk_ = config;
    treeValid_ = false;
}

GpuSolver& GravitySolver::gpu()
{
    if (!gpu_)
    {
        gpu_ = std::make_unique<GpuSolver>();
        gpu_->setKernelConfig(gpuConfig_);
    }
    return *gpu_;
}

void GravitySolver::buildTree()
{
    if (bodies_.n == 0) throw InputError("no bodies set: call setBodies before evaluating forces");
    const BodySpan& bodies = bodies_;
    PhaseTimes& t          = times_;
    const double begin     = steadyClockSeconds();
    Stopwatch clock;
    checkResolvablePairs(bodies, params_.epsilon_squared);
    sortBodies(bodies, tree_, params_.box_size);
    t[Phase::Sort] = clock.lap();
    buildCells(params_.n_leaf, tree_);
    t[Phase::Cells] = clock.lap();
    computeMultipoles(tree_);
    t[Phase::Multipoles] = clock.lap();
    makeGroups(params_.n_group, tree_, params_.merge_groups);
    t[Phase::Groups] = clock.lap();
    packTree(tree_, params_, packed_);
    if (treePmOn(params_))
    {
        // No Ewald correction: the table is not needed (nor computed).
        packed_.periodic = treePmPeriodicView(params_);
    }
    else packed_.periodic = periodicView(params_.box_size);
    packed_.periodic.walk = ewaldWalk_;
    setScalesFromPrevious();
    t[Phase::Packing] = clock.lap();
    treeValid_        = true;
    chainSpans(t, PhaseGroup::Host, begin);

    stats_.numGroups   = int64_t(packed_.groupRange.size());
    stats_.numInternal = packed_.numInternal;
    stats_.numLeaves   = packed_.numLeaves;
    stats_.depth       = packed_.depth;
}

void GravitySolver::setPreviousAccelerations(const F4* acc)
{
    previousCopy_.clear();
    previousAcc_ = acc;
}

void GravitySolver::setPreviousAccelerations(const std::vector<Vec3d>& acc)
{
    const double invG = 1.0 / params_.gravitational_constant;
    const int64_t n   = int64_t(acc.size());
    previousCopy_.resize(acc.size());
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i)
    {
        const Vec3d a    = invG * acc[i];
        previousCopy_[i] = {float(a.x), float(a.y), float(a.z), 0.0f};
    }
    previousAcc_ = previousCopy_.data();
}

void GravitySolver::setScalesFromPrevious()
{
    usedPrevious_ = false;
    if (!previousAcc_) return;
    if (!previousCopy_.empty() && int64_t(previousCopy_.size()) != bodies_.n)
    {
        const size_t count = previousCopy_.size();
        setPreviousAccelerations(nullptr);
        throw InputError("setPreviousAccelerations: " + std::to_string(count) + " accelerations for " +
                         std::to_string(bodies_.n) + " bodies");
    }
    if (periodicErrorControl(params_) && params_.mac != Mac::Relative)
    {
        setPeriodicGroupScalesFromBodies(previousAcc_, tree_, params_, packed_);
        usedPrevious_ = true;
    }
    if (treePmErrorControl(params_))
    {
        setTreePmGroupTolerances(previousAcc_, tree_, params_, packed_);
        usedPrevious_ = true;
    }
    previousAcc_ = nullptr;
    previousCopy_.clear();
}

InteractionTotals GravitySolver::evaluateCpu(const TargetView& targets)
{
    PhaseTimes& t = times_;
    t.clear(PhaseGroup::Walk);
    TreeView tree         = packed_.treeView();
    GroupView groups      = currentGroups_;
    int32_t overflowGroup = 0;
    const double begin    = steadyClockSeconds();
    Stopwatch clock;
    counts_.resize(groups.numGroups);
    countInteractionsCpu(tree, groups, counts_.view(), &overflowGroup);
    checkWalkOverflow("pass 1", overflowGroup);
    t[Phase::WalkCount] = clock.lap();
    lists_.resizeOffsets(groups.numGroups);
    scanCountsCpu(counts_.view(), lists_.view());
    lists_.resizeLists();
    t[Phase::Scan] = clock.lap();
    ListView lists = lists_.view();
    writeInteractionsCpu(tree, groups, lists, &overflowGroup);
    checkWalkOverflow("pass 2", overflowGroup);
    t[Phase::WalkWrite] = clock.lap();

    cpuNodeAcc_.resize(targets.numTargets);
    cpuOut_.resize(targets.numTargets);
    float eps2 = float(params_.epsilon_squared);
    bodyNodeForcesCpu(tree, groups, lists, targets, eps2, cpuNodeAcc_.data());
    t[Phase::BodyNode] = clock.lap();
    bodyLeafForcesCpu(tree, groups, lists, packed_.bodyView(), targets, eps2, cpuNodeAcc_.data(), cpuOut_.data());
    t[Phase::BodyLeaf] = clock.lap();
    chainSpans(t, PhaseGroup::Walk, begin);
    return interactionTotals(groups, counts_.view());
}

InteractionTotals GravitySolver::evaluateGpu(const TargetView& targets)
{
    GpuEvaluation& result = gpuResult_;
    gpu().evaluate(packed_.treeView(), currentGroups_, packed_.bodyView(), targets, float(params_.epsilon_squared),
                   result);
    for (size_t k = 0; k < kNumPhases; ++k)
    {
        if (kPhases[k].group == PhaseGroup::Walk) times_.seconds[k] = result.times.seconds[k];
    }
    copySpans(times_.spans, result.times.spans, PhaseGroup::Walk);
    return {result.nodeInteractions, result.leafInteractions};
}

F4* GravitySolver::evaluateTargets(const TargetView& targets)
{
    stats_.numTargets        = targets.numTargets;
    const bool onGpu         = activeBackend() == Backend::Gpu;
    InteractionTotals totals = onGpu ? evaluateGpu(targets) : evaluateCpu(targets);
    stats_.nodeInteractions  = totals.nodes;
    stats_.leafInteractions  = totals.leafBodies - (targets.areBodies ? targets.numTargets : 0);
    return onGpu ? gpuResult_.acc.data() : cpuOut_.data();
}

const F4* GravitySolver::evaluateBodies()
{
    const int64_t n = bodies_.n;
    namingMemory("building the tree", n, 160, [&] { buildTree(); });
    if (afterBuild_) std::exchange(afterBuild_, nullptr)();
    currentGroups_ = packed_.groupView();
    const F4* out  = nullptr;
    TargetView targets{packed_.bodies.data(), int32_t(packed_.bodies.size()), true};
    meshSeconds_          = 0;
    const bool meshHere   = treePmOn(params_) && !shortRangeOnly();
    const bool meshBeside = meshHere && meshBesideTheWalk();
    if (meshBeside && !meshThread_) meshThread_ = std::make_unique<WorkerThread>();
    JobBeside mesh(meshBeside ? meshThread_.get() : nullptr);
    mesh.start([this] { computeMeshForces(); });
    PhaseTimes estimateTimes;
    const bool relative = params_.mac == Mac::Relative;
    if (relative || (periodicErrorControl(params_) && !usedPrevious_))
    {
        // The relative criterion needs phi and |a| per group, the periodic one |a|: estimated at the
        // centre of each group's box, with the group's own walk at a larger theta (a small fraction of
        // a full evaluation).
        std::vector<F4> probes;
        std::vector<I2> ranges;
        relativeProbes(packed_, probes, ranges);
        const double estimateTheta =
            std::max(params_.opening_angle, relative ? kRelativeEstimateTheta : kPeriodicEstimateTheta);
        const Mac estimateMac = relative ? Mac::Bonsai : params_.mac;
        packMacRadii(tree_, estimateMac, estimateTheta, packed_);
        // The extent bound of TreePM's drop test scales with the theta the radii were packed with.
        ShortRangeView& shortRange  = packed_.periodic.shortRange;
        const float extentFactor    = shortRange.nodeExtentFactor;
        shortRange.nodeExtentFactor = float(shortRangeNodeExtentFactor(estimateMac == Mac::Octgrav, estimateTheta));
        currentGroups_              = {ranges.data(), packed_.groupCenter.data(), packed_.groupHalf.data(),
                                       currentGroups_.numGroups};
        namingMemory("walking the tree (acceleration estimate)", n, 100, [&] {
            const F4* estimate = evaluateTargets({probes.data(), int32_t(probes.size()), false});
            if (relative) setRelativeGroupScales(estimate, ranges.data(), packed_);
            else setPeriodicGroupScales(estimate, tree_.poles.mass[0], params_, packed_);
        });
        currentGroups_              = packed_.groupView();
        shortRange.nodeExtentFactor = extentFactor;
        packMacRadii(tree_, params_.mac, params_.opening_angle, packed_);
        estimateTimes = times_;
    }
    F4* results = nullptr;
    namingMemory("walking the tree", n, 100, [&] { results = evaluateTargets(targets); });
    if (meshHere)
    {
        if (meshBeside) mesh.finish();
        else computeMeshForces();
        addMeshForces(results);
    }
    out = results;
    // The walk phases include the estimate's (its interactions are not counted in stats_).
    for (size_t k = 0; k < kNumPhases; ++k)
    {
        if (kPhases[k].group == PhaseGroup::Walk) times_.seconds[k] += estimateTimes.seconds[k];
    }
    return out;
}

bool GravitySolver::shortRangeOnly() const { return treePmOn(params_) && meshSchedule_ == MeshSchedule::Elsewhere; }

bool GravitySolver::meshBesideTheWalk() const
{
    // On the GPU backend the host's cores are free while the device walks; on the CPU backend the walk takes
    // every core, so the mesh follows it. Its results do not depend on when it runs.
    if (meshSchedule_ == MeshSchedule::Automatic) return activeBackend() == Backend::Gpu;
    return meshSchedule_ == MeshSchedule::BesideTheWalk;
}

bool GravitySolver::meshOnDevice() const
{
    const Backend where = params_.pm_backend == Backend::Auto ? activeBackend() : params_.pm_backend;
    return where == Backend::Gpu;
}

void GravitySolver::computeMeshForces()
{
    const double begin  = steadyClockSeconds();
    const Parameters& p = params_;
    const int64_t n     = bodies_.n;
    if (meshOnDevice())
    {
        mesh_.reset();
        meshAcc_ = {};
        meshPot_ = {};
        keepMeshOf(gpuMesh_, p);
        // The bodies copied by every thread into page-locked arrays, and the results written into such: the
        // device's copies then run at full bus speed (0.54 GB each way at 2^24 bodies).
        namingMemory("computing the particle mesh's forces", n, 64.0, [&] {
            deviceMesh_.pos.resize(size_t(n));
            deviceMesh_.mass.resize(size_t(n));
            deviceMesh_.acc.resize(size_t(n));
            deviceMesh_.pot.resize(size_t(n));
#pragma omp parallel for schedule(static)
            for (int64_t k = 0; k < n; ++k)
            {
                deviceMesh_.pos[size_t(k)]  = tree_.pos[size_t(k)];
                deviceMesh_.mass[size_t(k)] = tree_.mass[size_t(k)];
            }
            gpuMesh_->computeForces(deviceMesh_.pos.data(), deviceMesh_.mass.data(), n, deviceMesh_.acc.data(),
                                    deviceMesh_.pot.data());
        });
        meshSeconds_ = steadyClockSeconds() - begin;
        return;
    }
    gpuMesh_.reset();
    deviceMesh_ = {};
    keepMeshOf(mesh_, p);
    // What the call allocates on its first use: 44 bytes a body in the mesh's slab order and 32 in meshAcc_ and
    // meshPot_, and 56 a mesh cell for the four interpolated fields (host/pm/pm_mesh.h), here per body.
    const double cells        = std::pow(double(p.pm_grid), 3);
    const double bytesPerBody = 76.0 + 56.0 * cells / double(std::max<int64_t>(n, 1));
    namingMemory("computing the particle mesh's forces", n, bytesPerBody,
                 [&] { mesh_->computeForces(tree_.pos.data(), tree_.mass.data(), n, meshAcc_, meshPot_); });
    meshSeconds_ = steadyClockSeconds() - begin;
}

void GravitySolver::addMeshForces(F4* out)
{
    const double begin = steadyClockSeconds();
    const int64_t n    = bodies_.n;
    const bool device  = gpuMesh_ != nullptr;
    const Vec3d* acc   = device ? deviceMesh_.acc.data() : meshAcc_.data();
    const double* pot  = device ? deviceMesh_.pot.data() : meshPot_.data();
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < n; ++k) out[k] = addMeshTerm(out[k], acc[k], pot[k]);
    meshSeconds_ += steadyClockSeconds() - begin;
}

namespace {

/// Stores G times the evaluation's results (tree order k) at slot(k) of acc and pot, checking finiteness
/// on the way: the bad body with the smallest name (nameOfSlot) is the one reported, for any thread count.
template<class Slot, class Name>
void storeScaled(const F4* out, int64_t n, double G, Slot slot, Name nameOfSlot, std::vector<Vec3d>& acc,
                 std::vector<double>& pot)
{
    acc.resize(size_t(n));
    pot.resize(size_t(n));
    int64_t firstBad = kNoBody;
#pragma omp parallel for schedule(static) reduction(min : firstBad)
    for (int64_t k = 0; k < n; ++k)
    {
        const int64_t i = slot(k);
        acc[i]          = {G * out[k].x, G * out[k].y, G * out[k].z};
        pot[i]          = G * out[k].w;
        if (!finiteResult(acc[i], pot[i])) firstBad = std::min(firstBad, nameOfSlot(i));
    }
    if (firstBad == kNoBody) return;
    int64_t i = 0;
    while (nameOfSlot(i) != firstBad) ++i;
    throwNotFinite(acc[i], pot[i], "body", firstBad);
}

} // namespace

void GravitySolver::computeForces(std::vector<Vec3d>& acc, std::vector<double>& pot)
{
    const F4* out = evaluateBodies();
    // The scatter back to the caller's order.
    storeScaled(
        out, bodies_.n, params_.gravitational_constant, [&](int64_t k) { return int64_t(tree_.order[k]); },
        [&](int64_t i) { return bodies_.nameOf(i); }, acc, pot);
    if (!shortRangeOnly()) checkNotAllUnderflowed(out, bodies_.n, bodies_, params_.epsilon_squared);
}

void GravitySolver::computeForcesInTreeOrder(std::vector<Vec3d>& acc, std::vector<double>& pot)
{
    const F4* out = evaluateBodies();
    storeScaled(
        out, bodies_.n, params_.gravitational_constant, [](int64_t k) { return k; },
        [&](int64_t k) { return bodies_.nameOf(tree_.order[k]); }, acc, pot);
    if (!shortRangeOnly()) checkNotAllUnderflowed(out, bodies_.n, bodies_, params_.epsilon_squared);
}

const F4* GravitySolver::evaluateInTreeOrder() { return evaluateBodies(); }

void GravitySolver::checkTreeOrderResults(const F4* out, bool anyNotFinite) const
{
    // The error path only: the same body and message as storeScaled's, found serially.
    if (anyNotFinite) throwFirstNotFinite(out, [this](int64_t k) { return tree_.order[k]; });
    if (!shortRangeOnly()) checkNotAllUnderflowed(out, bodies_.n, bodies_, params_.epsilon_squared);
}

void GravitySolver::checkAttachedOrderResults(const F4* out) const
{
    throwFirstNotFinite(out, [](int64_t k) { return k; });
    if (!shortRangeOnly()) checkNotAllUnderflowed(out, bodies_.n, bodies_, params_.epsilon_squared);
}

template<class AttachedIndex>
void GravitySolver::throwFirstNotFinite(const F4* out, AttachedIndex attachedIndex) const
{
    const double G   = params_.gravitational_constant;
    int64_t firstBad = kNoBody, at = 0;
    for (int64_t k = 0; k < bodies_.n; ++k)
    {
        const Vec3d a{G * out[k].x, G * out[k].y, G * out[k].z};
        const int64_t name = bodies_.nameOf(attachedIndex(k));
        if (!finiteResult(a, G * out[k].w) && name < firstBad)
        {
            firstBad = name;
            at       = k;
        }
    }
    if (firstBad != kNoBody)
    {
        throwNotFinite({G * out[at].x, G * out[at].y, G * out[at].z}, G * out[at].w, "body", firstBad);
    }
}

void GravitySolver::swapTreeOrderBodies(std::vector<Vec3d>& pos, std::vector<double>& mass)
{
    tree_.pos.swap(pos);
    tree_.mass.swap(mass);
}

void GravitySolver::evaluateAt(const std::vector<Vec3d>& points, std::vector<Vec3d>& acc, std::vector<double>& pot)
{
    checkProbes(points, params_.box_size);
    if (treePmOn(params_))
    {
        throw ParameterError(
            "evaluateAt: probe points are not available with TreePM (pm_grid = " + std::to_string(params_.pm_grid) +
            "): the mesh's long-range force is interpolated to the bodies only; use pm_grid 0 "
            "(the tree and Ewald's sum) for probes in a periodic box");
    }
    if (!treeValid_) namingMemory("building the tree", bodies_.n, 160, [&] { buildTree(); });
    std::vector<int32_t> order;
    std::vector<F4> sorted;
    std::vector<I2> ranges;
    std::vector<F4> center, half;
    groupProbes(points, params_.n_group, order, sorted, ranges);
    center.resize(ranges.size());
    half.resize(ranges.size());
    groupBoxes(sorted.data(), ranges.data(), int64_t(ranges.size()), center.data(), half.data());
    currentGroups_ = {ranges.data(), center.data(), half.data(), int32_t(ranges.size())};
    const F4* out  = nullptr;
    namingMemory("walking the tree for probe points", int64_t(points.size()), 100, [&] {
        out = evaluateTargets({sorted.data(), int32_t(sorted.size()), false});
    });

    double G = params_.gravitational_constant;
    acc.resize(points.size());
    pot.resize(points.size());
    for (size_t k = 0; k < points.size(); ++k)
    {
        acc[order[k]] = {G * out[k].x, G * out[k].y, G * out[k].z};
        pot[order[k]] = G * out[k].w;
    }
    currentGroups_ = packed_.groupView();
    checkFinite(acc, pot, "probe point");
}

void GravitySolver::computeDirect(const std::vector<int64_t>& targets, std::vector<Vec3d>& acc,
                                  std::vector<double>& pot)
{
    if (bodies_.n == 0) throw InputError("no bodies set: call setBodies before computing direct sums");
    std::vector<int64_t> all;
    const std::vector<int64_t>* list = &targets;
    if (targets.empty())
    {
        all.resize(size_t(bodies_.n));
        std::iota(all.begin(), all.end(), 0);
        list = &all;
    }
    for (int64_t t : *list)
    {
        if (t < 0 || t >= bodies_.n)
        {
            throw InputError("computeDirect: target index " + std::to_string(t) + " is out of range [0, " +
                             std::to_string(bodies_.n) + ")");
        }
    }
    if (params_.box_size > 0)
    {
        validateInBox({bodies_.pos, bodies_.mass, nullptr, bodies_.n}, params_.box_size);
        ewaldDirectSum(bodies_.pos, bodies_.mass, bodies_.n, *list, params_.box_size, params_.epsilon_squared,
                       params_.gravitational_constant, acc, pot);
    }
    else
    {
        directSum(bodies_.pos, bodies_.mass, bodies_.n, *list, params_.epsilon_squared, params_.gravitational_constant,
                  acc, pot);
    }
    checkFinite(acc, pot, "body", list);
}

} // namespace octwalk
