#include "host/study/study.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "common/walk.h"
#include "device/gpu_solver.h"
#include "host/reference/direct.h"
#include "host/reference/ewald_direct.h"
#include "host/tree/octree.h"
#include "common/errors.h"
#include "host/core/timer.h"

namespace octwalk {

namespace {

std::vector<F4> packedInCallerOrder(const ParticleSet& bodies)
{
    if (bodies.size() > int64_t(INT32_MAX)) throw InputError("the GPU direct kernel takes at most 2^31 - 1 bodies");
    std::vector<F4> out(bodies.size());
    for (int64_t i = 0; i < bodies.size(); ++i)
    {
        const Vec3d& p = bodies.pos[i];
        out[i]         = {float(p.x), float(p.y), float(p.z), float(bodies.mass[i])};
    }
    return out;
}

std::vector<int32_t> toInt32(const std::vector<int64_t>& index)
{
    return std::vector<int32_t>(index.begin(), index.end());
}

// ---------------------------------------------------------------------------------------------
// Walk traffic

/// Parent of every node (-1 for the root), from the children words.
std::vector<int32_t> parentsOf(const TreeView& tree)
{
    std::vector<int32_t> parent(size_t(tree.numInternal) + size_t(tree.numLeaves), -1);
    for (int32_t c = 0; c < tree.numInternal; ++c)
    {
        for (int word = 0; word < 2; ++word)
        {
            U4 kids = tree.children[2 * c + word];
            for (uint32_t e : {kids.x, kids.y, kids.z, kids.w})
            {
                if (e != kEmptyChild) parent[e & ~kLeafBit] = c;
            }
        }
    }
    return parent;
}

/// Counts list entries and the internal cells the walk opened. A cell is opened exactly when
/// some entry below it was reached, so the opened cells of a group are the ancestors of the
/// entries it reports; each is counted once through a per-group stamp.
struct TrafficSink
{
    const int32_t* parent;
    int32_t* stamp;
    int32_t group;
    int64_t nodes = 0, leaves = 0, opened = 0;

    void node(int32_t n)
    {
        ++nodes;
        markAncestors(n);
    }
    void leaf(int32_t n)
    {
        ++leaves;
        markAncestors(n);
    }
    void markAncestors(int32_t n)
    {
        for (int32_t c = parent[n]; c >= 0 && stamp[c] != group; c = parent[c])
        {
            stamp[c] = group;
            ++opened;
        }
    }
};

} // namespace

// ---------------------------------------------------------------------------------------------
// Accuracy

std::vector<Parameters> expandGrid(const Parameters& base, const StudyGrid& grid)
{
    std::vector<Parameters> settings;
    for (Mac mac : grid.mac)
        for (bool quadrupole : grid.quadrupole)
            for (int nLeaf : grid.nLeaf)
                for (int nGroup : grid.nGroup)
                    for (double theta : grid.theta)
                    {
                        Parameters p     = base;
                        p.mac            = mac;
                        p.use_quadrupole = quadrupole;
                        p.n_leaf         = nLeaf;
                        p.n_group        = nGroup;
                        p.opening_angle  = theta;
                        validate(p);
                        settings.push_back(p);
                    }
    return settings;
}

DirectReference directReference(const ParticleSet& bodies, int64_t sample, uint64_t seed, double eps2, double G,
                                Backend backend, double boxSize)
{
    if (sample < 1) throw ParameterError("reference sample = " + std::to_string(sample) + " is invalid: must be >= 1");
    DirectReference ref;
    ref.numBodies = bodies.size();
    ref.index     = sampleIndices(bodies.size(), sample, seed);
    ref.backend   = boxSize > 0 ? Backend::Cpu : resolveBackend(backend);
    if (boxSize > 0)
    {
        Stopwatch clock;
        validateInBox({bodies.pos.data(), bodies.mass.data(), nullptr, bodies.size()}, boxSize);
        ewaldDirectSum(bodies.pos.data(), bodies.mass.data(), bodies.size(), ref.index, boxSize, eps2, G, ref.acc,
                       ref.pot);
        ref.seconds     = clock.lap();
        ref.description = "cpu Ewald summation in float64 (periodic box " + std::to_string(boxSize) + ")";
        return ref;
    }
    if (ref.backend == Backend::Gpu)
    {
        std::vector<F4> packed = packedInCallerOrder(bodies);
        std::vector<F4> out;
        GpuSolver gpu;
        gpu.direct({packed.data(), int32_t(packed.size())}, toInt32(ref.index), float(eps2), true, out, ref.seconds);
        ref.acc.resize(out.size());
        ref.pot.resize(out.size());
        for (size_t k = 0; k < out.size(); ++k)
        {
            ref.acc[k] = {G * double(out[k].x), G * double(out[k].y), G * double(out[k].z)};
            ref.pot[k] = G * double(out[k].w);
        }
        ref.description = "gpu direct summation: float32 positions, masses and results, float64 accumulation (" +
                          gpuDescription() + ")";
        return ref;
    }
    Stopwatch clock;
    directSum(bodies.pos.data(), bodies.mass.data(), bodies.size(), ref.index, eps2, G, ref.acc, ref.pot);
    ref.seconds     = clock.lap();
    ref.description = "cpu direct summation in float64";
    return ref;
}

double AccuracyResult::potentialError() const
{
    double scale = std::fabs(referencePotentialEnergy);
    return scale > 0 ? (potentialEnergy - referencePotentialEnergy) / scale : 0.0;
}

std::vector<AccuracyResult> accuracySweep(const ParticleSet& bodies, const std::vector<Parameters>& settings,
                                          const DirectReference& ref, int repeat,
                                          const std::function<void(const AccuracyResult&)>& onResult)
{
    if (repeat < 1) throw ParameterError("repeat = " + std::to_string(repeat) + " is invalid: must be >= 1");
    if (ref.numBodies != bodies.size())
    {
        throw InputError("the reference was computed for " + std::to_string(ref.numBodies) + " bodies, not " +
                         std::to_string(bodies.size()));
    }
    std::vector<AccuracyResult> results;
    if (settings.empty()) return results;
    GravitySolver solver(settings.front());
    solver.setBodies(bodies.pos, bodies.mass, bodies.id);

    double refW = 0;
    for (size_t k = 0; k < ref.index.size(); ++k) refW += 0.5 * bodies.mass[ref.index[k]] * ref.pot[k];

    std::vector<Vec3d> acc, sampleAcc(ref.index.size());
    std::vector<double> pot;
    for (const Parameters& p : settings)
    {
        solver.setParameters(p);
        std::vector<double> host, walk, walkForces;
        for (int r = 0; r < repeat; ++r)
        {
            solver.computeForces(acc, pot);
            host.push_back(solver.timings().host());
            walk.push_back(solver.timings().walk());
            walkForces.push_back(solver.timings().walkForces());
        }
        AccuracyResult res;
        res.params  = p;
        res.backend = solver.activeBackend();
        for (size_t k = 0; k < ref.index.size(); ++k)
        {
            sampleAcc[k] = acc[ref.index[k]];
            res.potentialEnergy += 0.5 * bodies.mass[ref.index[k]] * pot[ref.index[k]];
        }
        res.referencePotentialEnergy = refW;
        res.errors                   = relativeErrors(sampleAcc, ref.acc);
        res.error                    = errorStats(res.errors);
        res.nodesPerBody             = solver.stats().nodesPerBody();
        res.leavesPerBody            = solver.stats().leavesPerBody();
        res.hostSeconds              = median(host);
        res.walkSeconds              = median(walk);
        res.walkForcesSeconds        = median(walkForces);
        if (onResult) onResult(res);
        results.push_back(std::move(res));
    }
    return results;
}

// ---------------------------------------------------------------------------------------------
// Profile

const char* const kWalkTrafficFormula =
    "bytes requested by the walk (not DRAM traffic), counted over all groups with the shared walk: "
    "pass 1 = groups * (32 B group box + 16 B counts written) + 32 B * opened cells + 16 B * visited entries; "
    "pass 2 = groups * 32 B + 32 B * opened cells + 16 B * visited entries + 4 B * (node + leaf list entries); "
    "visited entries = node entries + leaf entries + opened internal cells (root included); "
    "32 B = the two children words of an opened cell, 16 B = the nodeMac F4 of a visited entry; "
    "walk bandwidth = (pass 1 + pass 2 bytes) / (median pass 1 + median pass 2 time)";

double WalkTraffic::pass1Bytes() const
{
    return double(numGroups) * (32 + 16) + 32.0 * double(openedCells) + 16.0 * double(visitedEntries());
}

double WalkTraffic::pass2Bytes() const
{
    return double(numGroups) * 32 + 32.0 * double(openedCells) + 16.0 * double(visitedEntries()) +
           4.0 * double(nodeEntries + leafEntries);
}

WalkTraffic walkTraffic(const TreeView& tree, const GroupView& groups)
{
    std::vector<int32_t> parent = parentsOf(tree);
    int64_t nodes = 0, leaves = 0, opened = 0;
    bool overflow = false;
#pragma omp parallel reduction(+ : nodes, leaves, opened) reduction(|| : overflow)
    {
        // Per thread: the stamp of the group that last opened each cell, and the walk's stack.
        std::vector<int32_t> stamp(size_t(tree.numInternal), -1);
        std::vector<uint32_t> stack(size_t(walkStackCapacity(tree.depth)));
#pragma omp for schedule(dynamic, 64)
        for (int32_t g = 0; g < groups.numGroups; ++g)
        {
            TrafficSink sink{parent.data(), stamp.data(), g};
            WalkStatus s = walkGroup(tree, groups.center[g], groups.half[g], stack.data(), int32_t(stack.size()), sink);
            overflow     = overflow || s != WalkStatus::Ok;
            nodes += sink.nodes;
            leaves += sink.leaves;
            opened += sink.opened;
        }
    }
    if (overflow) throw std::logic_error("walkTraffic: walk stack overflow (the capacity bound is wrong)");
    WalkTraffic t;
    t.numGroups   = groups.numGroups;
    t.nodeEntries = nodes;
    t.leafEntries = leaves;
    t.openedCells = opened;
    return t;
}

DirectTiming timeDirect(const ParticleSet& bodies, int64_t sample, uint64_t seed, double eps2, Backend backend)
{
    DirectTiming d;
    std::vector<int64_t> index = sampleIndices(bodies.size(), sample, seed);
    d.sample                   = int64_t(index.size());
    if (resolveBackend(backend) == Backend::Gpu)
    {
        std::vector<F4> packed = packedInCallerOrder(bodies);
        BodyView view{packed.data(), int32_t(packed.size())};
        std::vector<F4> out;
        GpuSolver gpu;
        // The first launch pays for module loading and allocation inside the timed events.
        gpu.direct(view, {0}, float(eps2), false, out, d.sampleSeconds);
        gpu.direct(view, toInt32(index), float(eps2), false, out, d.sampleSeconds);
        d.kernel = "gpu tiled direct kernel, float32 accumulation, CUDA events";
    }
    else
    {
        std::vector<Vec3d> acc;
        std::vector<double> pot;
        Stopwatch clock;
        directSum(bodies.pos.data(), bodies.mass.data(), bodies.size(), index, eps2, 1.0, acc, pot);
        d.sampleSeconds = clock.lap();
        d.kernel        = "cpu direct summation in float64 (OpenMP), steady clock";
    }
    d.seconds = d.sampleSeconds * double(bodies.size()) / double(d.sample);
    return d;
}

double ProfileResult::nodeGflops() const
{
    double t = median[Phase::BodyNode];
    return t > 0 ? kFlopsPerBodyNode * double(stats.nodeInteractions) / t / 1e9 : 0.0;
}

double ProfileResult::leafGflops() const
{
    double t = median[Phase::BodyLeaf];
    return t > 0 ? kFlopsPerBodyBody * double(stats.leafInteractions) / t / 1e9 : 0.0;
}

double ProfileResult::walkBytesPerSecond() const
{
    double t = median.walkPasses();
    return t > 0 ? traffic.bytes() / t : 0.0;
}

double ProfileResult::bodiesPerSecond() const { return total > 0 ? double(n) / total : 0.0; }

double ProfileResult::speedup() const { return direct.sample > 0 && total > 0 ? direct.seconds / total : 0.0; }

double ProfileResult::stepBodiesPerSecond() const
{
    double wall = stepMedian[StepPhase::StepWall];
    return steps > 0 && wall > 0 ? double(n) / wall : 0.0;
}

namespace {

/// The medians, counts, traffic and direct timing of a profile from the counted evaluations.
void summarize(ProfileResult& r, const ParticleSet& bodies, const GravitySolver& solver,
               const std::vector<PhaseTimes>& phases, const std::vector<double>& walls, int64_t directSample,
               uint64_t seed)
{
    std::vector<double> totals, fractions;
    for (const PhaseTimes& t : phases)
    {
        totals.push_back(t.total());
        fractions.push_back(t.total() > 0 ? t.walk() / t.total() : 0.0);
    }
    r.n              = bodies.size();
    r.params         = solver.parameters();
    r.backend        = solver.activeBackend();
    r.counted        = int(phases.size());
    r.median         = medianPhases(phases);
    r.total          = median(totals);
    r.wall           = median(walls);
    r.deviceFraction = median(fractions);
    r.stats          = solver.stats();
    r.traffic        = walkTraffic(solver.packedTree().treeView(), solver.packedTree().groupView());
    if (directSample > 0)
    {
        r.direct = timeDirect(bodies, std::min(directSample, r.n), seed, r.params.epsilon_squared, r.backend);
    }
}

} // namespace

ProfileResult profileForces(const ParticleSet& bodies, const Parameters& p, int repeat, int64_t directSample,
                            uint64_t seed)
{
    if (repeat < 2)
    {
        throw ParameterError("repeat = " + std::to_string(repeat) +
                             " is invalid: must be >= 2 (the first is a warm-up)");
    }
    GravitySolver solver(p);
    solver.setBodies(bodies.pos, bodies.mass, bodies.id);

    std::vector<PhaseTimes> phases;
    std::vector<double> walls;
    std::vector<Vec3d> acc;
    std::vector<double> pot;
    for (int k = 0; k < repeat; ++k)
    {
        Stopwatch clock;
        solver.computeForces(acc, pot);
        double wall = clock.lap();
        if (k == 0) continue; // warm-up: first allocations, page faults, CUDA context and modules
        phases.push_back(solver.timings());
        walls.push_back(wall);
    }
    ProfileResult r;
    summarize(r, bodies, solver, phases, walls, directSample, seed);
    return r;
}

ProfileResult profileOfSteps(const ParticleSet& bodies, const GravitySolver& solver,
                             const std::vector<StepTimes>& steps, int64_t directSample, uint64_t seed)
{
    if (steps.empty()) throw InputError("profileOfSteps: no steps were timed");
    std::vector<PhaseTimes> phases;
    std::vector<double> walls;
    for (const StepTimes& t : steps)
    {
        phases.push_back(t.forces);
        walls.push_back(t[StepPhase::ForceWall]);
    }
    ProfileResult r;
    summarize(r, bodies, solver, phases, walls, directSample, seed);
    r.steps      = int(steps.size());
    r.stepMedian = medianStepTimes(steps);
    return r;
}

} // namespace octwalk
