// TreePM (or tree + Ewald) forces of a periodic box against the exact Ewald sum: the figures of docs/periodic.md's
// accuracy and CPU speed tables.
//
//   octwalk_treepm_accuracy uniform|clustered LOG2N PM_GRID THETA [RCUT] [SAMPLE] [ASMTH] [ASSIGNMENT] [ERR_TOL]
//                           [N_LEAF] [N_GROUP] [INTERLACE]
//   octwalk_treepm_accuracy SNAPSHOT EPSILON PM_GRID THETA [RCUT] [SAMPLE] [ASMTH] [ASSIGNMENT] [ERR_TOL] [N_LEAF]
//                           [N_GROUP] [INTERLACE]
//   octwalk_treepm_accuracy pairs PM_GRID [ASMTH] [RCUT] [ASSIGNMENT] [INTERLACE]
//   octwalk_treepm_accuracy steps SNAPSHOT EPSILON PM_GRID THETA REBUILD_EVERY STEPS DLNA [SAMPLE] [G] [LAG]
//                           [ERR_TOL] [RCUT] [ASMTH]
//   octwalk_treepm_accuracy split SNAPSHOT EPSILON PM_GRID ASMTH RCUT [SAMPLE]
//   octwalk_treepm_accuracy far uniform|clustered|SNAPSHOT LOG2N|EPSILON PM_GRID THETA
//
// PM_GRID 0 is tree + Ewald; ERR_TOL is err_tol_force_acc (default 0.002; 0: no error control); INTERLACE 0 takes one
// mesh (pm_interlace false), 1 (the default) the interlaced pair. The uniform box is
// 2^LOG2N random bodies in a unit box (no softening), the clustered one docs/periodic.md's in a box of side 10
// (softening 1e-3 L); a SNAPSHOT with a BoxSize is measured in its box with softening EPSILON. Prints the median, p99
// and largest relative force error on SAMPLE (default 256) sampled bodies, the interactions per body and the time of
// two evaluations, the second from the first's accelerations as in a run's steps (its figures), and of the mesh.
//
// "pairs" measures the force of one body on another against the Ewald sum as a function of their distance r, in bins
// of r / r_s: one body of unit mass at a random place and 8192 tracers (mass 1e-9 each) at random distances
// (uniform in log r from r_s / 16 to L / 2) and directions around it, theta 0.3 so that the tree adds nothing; the
// error of the split itself (the mesh's, and the pull left out beyond the cutoff) where the short and the long range
// meet.
//
// "split" measures the split itself on a periodic SNAPSHOT: the host mesh's long-range forces (TSC; one mesh, then
// interlaced) plus the short-range pairs summed directly in double (host/reference/short_range_direct.h), no tree,
// against the Ewald sum: the error the mesh and the cutoff leave, which no theta removes.
//
// "far" measures TreePM's far field (common/far_field.h) against the same tree without it: after two evaluations (the
// second from the first's accelerations), the tree's forces on every body with far_field_ratio 6, 4 and 3 and the
// size-distance bound at 1, 2, 4 and 8 r_s^2 (kTreePmFarSizeDistance: 2), each against the forces with no far field,
// relative to the body's total acceleration, and the share of the node interactions each sums in the expansions.
//
// "steps" measures the forces of a run's own steps: a comoving run from the SNAPSHOT (its a and cosmology, the
// default TreePM settings) of STEPS steps of DLNA in ln a with --rebuild-every REBUILD_EVERY (1: the classic step,
// a fresh tree each step; 0: the pipelined step, whose forces come from a topology built steps earlier from
// predicted positions and refitted since), then the last step's accelerations against the Ewald sum of the state
// they were computed for. G defaults to GADGET's units' (Mpc/h, 1e10 Msun/h, km/s: 43.0071), the snapshot's; LAG
// is --rebuild-lag (default: the run's, 2 below 2^18 bodies, 1 from there, as a GPU run of 2^21 takes it); ERR_TOL,
// RCUT and ASMTH replace the defaults of err_tol_force_acc, rcut and asmth (a negative LAG keeps the run's lag).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/far_field.h"
#include "host/core/timer.h"
#include "host/cpu/forces_cpu.h"
#include "host/models/models.h"
#include "host/reference/direct.h"
#include "host/reference/error_stats.h"
#include "host/reference/ewald_direct.h"
#include "host/reference/short_range_direct.h"
#include "host/pm/pm_mesh.h"
#include "common/errors.h"
#include "host/io/snapshot.h"
#include "host/sim/comoving.h"
#include "host/sim/simulation.h"
#include "host/solver/solver.h"
#include "host/study/split_errors.h"

using namespace octwalk;

namespace {

struct PeriodicBox
{
    double L;
    std::vector<Vec3d> pos;
    std::vector<double> mass;
};

PeriodicBox boxOf(const ParticleSet& s) { return {s.boxSize, s.pos, s.mass}; }

PeriodicBox uniformBox(int64_t n) { return boxOf(makeUniformBox(n, 1.0, 7)); }

/// docs/periodic.md's clustered box in L = 10.
PeriodicBox clusteredBox(int64_t n) { return boxOf(makeClusteredBox(n, 10.0, 9)); }

/// The "pairs" study (host/study/split_errors.h): one row per bin of r / r_s, the median, 90th percentile and
/// largest relative error of the tracers' accelerations against the Ewald sum of the one body.
int pairErrors(int argc, char** argv)
{
    Parameters p;
    p.backend       = Backend::Cpu;
    p.box_size      = 1.0;
    p.pm_grid       = std::atoi(argv[2]);
    p.opening_angle = 0.3;
    if (argc > 3) p.asmth = std::atof(argv[3]);
    if (argc > 4) p.rcut = std::atof(argv[4]);
    if (argc > 5) p.pm_assignment = std::string(argv[5]) == "cic" ? MassAssignment::Cic : MassAssignment::Tsc;
    if (argc > 6) p.pm_interlace = std::atoi(argv[6]) != 0;
    std::vector<std::vector<double>> bins(18);
    for (const PairError& e : treePmPairErrors(p, 8192, 5))
    {
        const int bin = int(std::floor(2 * std::log2(e.r))) + 8;
        if (bin >= 0 && bin < int(bins.size())) bins[size_t(bin)].push_back(e.error);
    }
    std::printf("pairs, pm_grid %d%s, asmth %g, rcut %g, %s: relative force error against the Ewald sum\n", p.pm_grid,
                p.pm_interlace ? " interlaced" : "", p.asmth, p.rcut,
                p.pm_assignment == MassAssignment::Cic ? "cic" : "tsc");
    std::printf("%14s %6s %10s %10s %10s\n", "r / r_s", "pairs", "median", "p90", "max");
    for (size_t b = 0; b < bins.size(); ++b)
    {
        std::vector<double>& e = bins[b];
        if (e.empty()) continue;
        std::sort(e.begin(), e.end());
        const double from = std::exp2((double(b) - 8) / 2), to = std::exp2((double(b) - 7) / 2);
        std::printf("%6.3g - %5.3g %6zu %10.3g %10.3g %10.3g\n", from, to, e.size(), e[e.size() / 2],
                    e[size_t(0.9 * double(e.size()))], e.back());
    }
    return 0;
}

/// The bodies of a named box: uniform or clustered (2^LOG2N, their softening), or a periodic snapshot's (LOG2N
/// read as the softening length instead).
PeriodicBox namedBox(const std::string& name, const char* size, double& eps)
{
    if (name == "uniform" || name == "clustered")
    {
        const int64_t n = int64_t(1) << std::atoi(size);
        eps             = name == "clustered" ? 1e-3 * 10.0 : 0.0;
        return name == "clustered" ? clusteredBox(n) : uniformBox(n);
    }
    const ParticleSet set = readSnapshot(name);
    if (!(set.boxSize > 0)) throw InputError("snapshot '" + name + "' has no BoxSize: not a periodic box");
    eps = std::atof(size);
    return {set.boxSize, set.pos, set.mass};
}

/// The CPU backend in a box of side L with softening eps, PM_GRID and THETA as given on the command line.
Parameters boxParameters(double L, double eps, const char* pmGrid, const char* theta)
{
    Parameters p;
    p.backend         = Backend::Cpu;
    p.box_size        = L;
    p.epsilon_squared = eps * eps;
    p.pm_grid         = std::atoi(pmGrid);
    p.opening_angle   = std::atof(theta);
    return p;
}

/// The "split" study (the file comment).
int splitErrors(int argc, char** argv)
{
    if (argc < 7)
    {
        std::fprintf(stderr, "usage: %s split SNAPSHOT EPSILON PM_GRID ASMTH RCUT [SAMPLE]\n", argv[0]);
        return 2;
    }
    double eps            = 0;
    const PeriodicBox box = namedBox(argv[2], argv[3], eps);
    const int64_t n       = int64_t(box.pos.size());
    const int grid        = std::atoi(argv[4]);
    const double asmth = std::atof(argv[5]), rcut = std::atof(argv[6]);
    const int64_t sample           = argc > 7 ? std::atoll(argv[7]) : 256;
    const std::vector<int64_t> idx = sampleIndices(n, sample, 3);
    std::vector<Vec3d> ref, shortAcc;
    std::vector<double> refPot, shortPot;
    ewaldDirectSum(box.pos.data(), box.mass.data(), n, idx, box.L, eps * eps, 1.0, ref, refPot);
    for (const bool interlaced : {false, true})
    {
        PmMesh mesh(box.L, grid, asmth, MassAssignment::Tsc, 1.0, interlaced);
        std::vector<Vec3d> meshAcc, got;
        std::vector<double> meshPot;
        mesh.computeForces(box.pos.data(), box.mass.data(), n, meshAcc, meshPot);
        if (!interlaced)
        {
            shortRangeDirectSum(box.pos.data(), box.mass.data(), n, idx,
                                {box.L, mesh.splitScale(), rcut * mesh.splitScale()}, eps * eps, 1.0, shortAcc,
                                shortPot);
        }
        for (size_t k = 0; k < idx.size(); ++k) got.push_back(meshAcc[size_t(idx[k])] + shortAcc[k]);
        const ErrorStats e = errorStats(relativeErrors(got, ref));
        std::printf("split %s %s, pm_grid %d%s, asmth %g, rcut %g: mesh + short-range pairs in double: median %.3g "
                    "p99 %.3g max %.3g\n",
                    argv[2], argv[3], grid, interlaced ? " interlaced" : "", asmth, rcut, e.median, e.p99, e.max);
    }
    return 0;
}

/// The "steps" study (the file comment).
int stepErrors(int argc, char** argv)
{
    if (argc < 9)
    {
        std::fprintf(stderr,
                     "usage: %s steps SNAPSHOT EPSILON PM_GRID THETA REBUILD_EVERY STEPS DLNA [SAMPLE] [G] [LAG] "
                     "[ERR_TOL] [RCUT] [ASMTH]\n",
                     argv[0]);
        return 2;
    }
    const ParticleSet start = readSnapshot(argv[2]);
    if (!start.cosmology) throw InputError(std::string(argv[2]) + ": no cosmology in the snapshot's header");
    Parameters p = boxParameters(start.boxSize, std::atof(argv[3]), argv[4], argv[5]);
    ForceOptions forces;
    forces.rebuildEvery = std::atoll(argv[6]);
    const int64_t steps = std::atoll(argv[7]);
    ComovingSettings s;
    s.cosmology              = *start.cosmology;
    s.aBegin                 = start.time;
    s.dlna                   = std::atof(argv[8]);
    s.aEnd                   = start.time * std::exp(double(steps) * s.dlna);
    const int64_t sample     = argc > 9 ? std::atoll(argv[9]) : 256;
    p.gravitational_constant = argc > 10 ? std::atof(argv[10]) : 43.0071;
    if (argc > 11 && std::atoll(argv[11]) >= 0) forces.rebuildLag = std::atoll(argv[11]);
    if (argc > 12) p.err_tol_force_acc = std::atof(argv[12]);
    if (argc > 13) p.rcut = std::atof(argv[13]);
    if (argc > 14) p.asmth = std::atof(argv[14]);
    Simulation sim(start, p, s, forces);
    Stopwatch clock;
    while (!sim.done()) sim.step();
    const double seconds           = clock.lap();
    const ParticleSet& state       = sim.state();
    const std::vector<Vec3d> acc   = sim.accelerations();
    const int64_t n                = state.size();
    const std::vector<int64_t> idx = sampleIndices(n, sample, 3);
    std::vector<Vec3d> ref, got;
    std::vector<double> refPot;
    ewaldDirectSum(state.pos.data(), state.mass.data(), n, idx, p.box_size, p.epsilon_squared, p.gravitational_constant,
                   ref, refPot);
    for (int64_t i : idx) got.push_back(acc[size_t(i)]);
    const ErrorStats e        = errorStats(relativeErrors(got, ref));
    const InteractionStats st = sim.pipeline() ? sim.pipeline()->stats() : sim.solver().stats();
    std::printf("steps %s, pm_grid %d, theta %g, err_tol %g, rcut %g, asmth %g, rebuild every %lld lag %lld (%s), "
                "%lld steps of dlna %g to a = %.4f: "
                "last step's forces median %.3g p99 %.3g max %.3g, %.0f interactions per body, %.2f s\n",
                argv[2], p.pm_grid, p.opening_angle, p.err_tol_force_acc, p.rcut, p.asmth,
                static_cast<long long>(sim.forceOptions().rebuildEvery),
                static_cast<long long>(sim.forceOptions().rebuildLag), sim.pipeline() ? "pipelined" : "classic",
                static_cast<long long>(sim.stepIndex()), s.dlna, sim.time(), e.median, e.p99, e.max,
                double(st.nodeInteractions + st.leafInteractions) / double(n), seconds);
    return 0;
}

/// The tree's forces (the solver's packed tree and its lists) in tree order under the view t.
std::vector<F4> packedTreeForces(const GravitySolver& s, const ListView& lists, const TreeView& t, float eps2)
{
    const PackedTree& packed = s.packedTree();
    const int32_t n          = int32_t(packed.bodies.size());
    const TargetView targets{packed.bodies.data(), n, true};
    std::vector<F4> node(static_cast<size_t>(n)), acc(static_cast<size_t>(n));
    bodyNodeForcesCpu(t, packed.groupView(), lists, targets, eps2, node.data());
    bodyLeafForcesCpu(t, packed.groupView(), lists, packed.bodyView(), targets, eps2, node.data(), acc.data());
    return acc;
}

/// The "far" study (the file comment).
int farFieldStudy(int argc, char** argv)
{
    if (argc < 6)
    {
        std::fprintf(stderr, "usage: %s far uniform|clustered|SNAPSHOT LOG2N|EPSILON PM_GRID THETA\n", argv[0]);
        return 2;
    }
    double eps            = 0;
    const PeriodicBox box = namedBox(argv[2], argv[3], eps);
    Parameters p          = boxParameters(box.L, eps, argv[4], argv[5]);
    GravitySolver s(p);
    s.setBodies(box.pos, box.mass);
    std::vector<Vec3d> acc;
    std::vector<double> pot;
    s.computeForces(acc, pot);
    s.setPreviousAccelerations(acc);
    s.computeForces(acc, pot);
    const TreeView base = s.packedTree().treeView();
    if (!shortRangeOn(base.periodic.shortRange)) throw InputError("the far study needs TreePM: PM_GRID > 0");
    const float eps2 = float(p.epsilon_squared), rs = base.periodic.shortRange.splitScale;
    // The lists do not depend on the far field: one copy serves every variant.
    InteractionLists lists            = s.cpuLists();
    TreeView plain                    = base;
    plain.farField2                   = 0.0f;
    const std::vector<F4> without     = packedTreeForces(s, lists.view(), plain, eps2);
    const std::vector<int32_t>& order = s.treeOrder();
    std::printf("far %s %s, pm_grid %d, theta %g, r_s %g: tree forces with the far field against without it, relative "
                "to the total acceleration (%lld node interactions)\n",
                argv[2], argv[3], p.pm_grid, p.opening_angle, double(rs),
                static_cast<long long>(s.stats().nodeInteractions));
    for (const double ratio : {6.0, 4.0, 3.0})
    {
        for (const double bound : {1.0, 2.0, 4.0, 8.0})
        {
            TreeView t                             = base;
            t.farField2                            = float(ratio * ratio);
            const double sizeDistance              = bound * double(rs) * double(rs);
            t.periodic.shortRange.farSizeDistance2 = float(sizeDistance * sizeDistance);
            const FarFieldCounts c     = farFieldCountsCpu(t, s.packedTree().groupView(), lists.view(), eps2);
            const std::vector<F4> with = packedTreeForces(s, lists.view(), t, eps2);
            std::vector<double> rel;
            for (size_t k = 0; k < with.size(); ++k)
            {
                const Vec3d change{double(with[k].x) - double(without[k].x), double(with[k].y) - double(without[k].y),
                                   double(with[k].z) - double(without[k].z)};
                const Vec3d total = acc[size_t(order[k])];
                rel.push_back(std::sqrt(dot(change, change) / dot(total, total)));
            }
            const ErrorStats e = errorStats(rel);
            std::printf(
                "ratio %g, bound %g r_s^2: far share %.3f of the node interactions; change median %.3g p99 %.3g "
                "max %.3g\n",
                ratio, bound, double(c.interactions) / double(s.stats().nodeInteractions), e.median, e.p99, e.max);
        }
    }
    return 0;
}

} // namespace

int main(int argc, char** argv)
{
    if (argc >= 3 && std::string(argv[1]) == "pairs") return pairErrors(argc, argv);
    if (argc >= 2 && std::string(argv[1]) == "steps") return stepErrors(argc, argv);
    if (argc >= 2 && std::string(argv[1]) == "split") return splitErrors(argc, argv);
    if (argc >= 2 && std::string(argv[1]) == "far") return farFieldStudy(argc, argv);
    if (argc < 5)
    {
        std::fprintf(
            stderr,
            "usage: %s uniform|clustered LOG2N PM_GRID THETA [RCUT] [SAMPLE] [ASMTH] [tsc|cic] [ERR_TOL] [N_LEAF] "
            "[N_GROUP] [INTERLACE]\n"
            "       %s SNAPSHOT EPSILON PM_GRID THETA [RCUT] [SAMPLE] [ASMTH] [tsc|cic] [ERR_TOL] [N_LEAF] [N_GROUP] "
            "[INTERLACE]\n"
            "       %s pairs PM_GRID [ASMTH] [RCUT] [tsc|cic] [INTERLACE]\n",
            argv[0], argv[0], argv[0]);
        return 2;
    }
    double eps            = 0;
    const PeriodicBox box = namedBox(argv[1], argv[2], eps);
    const int64_t n       = int64_t(box.pos.size());
    Parameters p          = boxParameters(box.L, eps, argv[3], argv[4]);
    if (argc > 5) p.rcut = std::atof(argv[5]);
    const int64_t sample = argc > 6 ? std::atoll(argv[6]) : 256;
    if (argc > 7) p.asmth = std::atof(argv[7]);
    if (argc > 8) p.pm_assignment = std::string(argv[8]) == "cic" ? MassAssignment::Cic : MassAssignment::Tsc;
    if (argc > 9) p.err_tol_force_acc = std::atof(argv[9]);
    if (argc > 10) p.n_leaf = std::atoi(argv[10]);
    if (argc > 11) p.n_group = std::atoi(argv[11]);
    if (argc > 12) p.pm_interlace = std::atoi(argv[12]) != 0;

    // Two evaluations, the second from the first's accelerations as a run's steps take them (the error controls
    // of tree + Ewald and of TreePM read them): its forces and time are the figures.
    GravitySolver solver(p);
    solver.setBodies(box.pos, box.mass);
    std::vector<Vec3d> acc;
    std::vector<double> pot;
    Stopwatch clock;
    solver.computeForces(acc, pot);
    const double first = clock.lap();
    solver.setPreviousAccelerations(acc);
    clock.lap();
    solver.computeForces(acc, pot);
    const double second = clock.lap();

    const std::vector<int64_t> idx = sampleIndices(n, sample, 3);
    std::vector<Vec3d> ref, got;
    std::vector<double> refPot;
    ewaldDirectSum(box.pos.data(), box.mass.data(), n, idx, box.L, p.epsilon_squared, 1.0, ref, refPot);
    for (int64_t i : idx) got.push_back(acc[size_t(i)]);
    const ErrorStats e       = errorStats(relativeErrors(got, ref));
    const InteractionStats s = solver.stats();
    std::printf(
        "%s %s, pm_grid %d%s, theta %g, rcut %g, asmth %g, n_leaf %d, n_group %d: median %.3g p99 %.3g max %.3g, "
        "%.0f interactions per body, evaluations %.3f / %.3f s (mesh %.3f s)\n",
        argv[1], argv[2], p.pm_grid, p.pm_grid > 0 && p.pm_interlace ? " interlaced" : "", p.opening_angle, p.rcut,
        p.asmth, int(p.n_leaf), int(p.n_group), e.median, e.p99, e.max,
        double(s.nodeInteractions + s.leafInteractions) / double(n), first, second, solver.meshSeconds());
    return 0;
}
