#include "host/mpi/distributed_forces.h"

#include <exception>
#include <string>
#include <thread>

#include "common/refit.h"
#include "host/core/parallel.h"
#include "host/core/timer.h"
#include "host/core/worker_thread.h"
#include "host/mpi/distributed_mesh.h"
#include "host/mpi/gathered_mesh.h"
#include "host/tree/packed_tree.h"

namespace octwalk::mpi {

/// This rank's tree as the essential trees and the remote walks read it: the solver's packed tree, or a
/// one-leaf tree for a single body (the solver needs two), or none.
struct DistributedGravity::LocalTree
{
    TreeView tree{};
    GroupView groups{nullptr, nullptr, nullptr, 0};
    BodyView bodies{nullptr, 0};
    const int32_t* order = nullptr; ///< order[k]: the local index of tree-order body k
    int64_t n            = 0;
    bool hasTree         = false;

    // The one-body tree.
    F4 mac{}, com{}, quad[2]{}, body{}, center{}, half{};
    I2 leaf{0, 1};
    int32_t firstBody = 0;
};

/// What exchangeEssentialTrees returns, from whichever thread ran it.
struct DistributedGravity::Exchange
{
    std::vector<char> send, received;
    std::vector<int64_t> recvCounts;
    int64_t bytesSent = 0, nodesSent = 0;
    double secondsBuild = 0, secondsExchange = 0;
    std::exception_ptr error;

    /// Ready for the next step, the buffers' storage kept.
    void reset()
    {
        send.clear();
        received.clear();
        recvCounts.clear();
        bytesSent = nodesSent = 0;
        secondsBuild = secondsExchange = 0;
        error                          = nullptr;
    }
};

namespace {

/// The boxes of its groups a rank sends the others (groupsBoxes): a 2^20 Plummer sphere over four ranks, 64 boxes
/// make the essential tree of the first quarter for the third 2.5 times smaller than one box does (6.9 -> 2.8 MB)
/// in the same cut time; between two halves the tree is the same and its cut takes 2.3 times longer
/// (benchmarks/bench_let.cpp, benchmarks/results/mpi/bench_let_2cores.txt).
constexpr int32_t kBoxesPerRank = 64;

int mpiThreadLevel()
{
    int level = MPI_THREAD_SINGLE;
    MPI_Query_thread(&level);
    return level;
}

/// Whether a second thread may call MPI while this one does not (MPI_THREAD_SERIALIZED or better).
bool mpiAllowsASecondThread() { return mpiThreadLevel() >= MPI_THREAD_SERIALIZED; }

/// Whether two threads may call MPI at once, each on its own communicator (MPI_THREAD_MULTIPLE).
bool mpiAllowsConcurrentThreads() { return mpiThreadLevel() >= MPI_THREAD_MULTIPLE; }

void checkDistributable(const Parameters& p)
{
    if (p.box_size > 0 && p.pm_grid == kPmGridAuto)
    {
        throw ParameterError("box_size " + std::to_string(p.box_size) +
                             " with pm_grid auto: the distributed evaluation takes the mesh of all ranks' bodies "
                             "(withPmGridFor with their total number)");
    }
    if (p.box_size > 0 && p.pm_grid <= 0)
    {
        throw ParameterError("box_size " + std::to_string(p.box_size) +
                             " with pm_grid 0: the distributed evaluation takes periodic boxes with TreePM only "
                             "(pm_grid > 0); the Ewald sum reaches every body");
    }
    if (p.mac == Mac::Relative)
    {
        throw ParameterError("mac relative: the distributed evaluation takes the octgrav or bonsai MAC only");
    }
}

/// Adds each group's per-body interaction count (its list lengths, leaf bodies counted) to its bodies.
/// @param nodes      per group: its body-node interactions a body
/// @param leafBodies per group: its body-body interactions a body, self included
/// @param self       1 when the targets are the tree's own bodies (each met itself), else 0
void addGroupCosts(const GroupView& groups, const int32_t* nodes, const int64_t* leafBodies, int64_t self,
                   std::vector<int64_t>& cost)
{
    for (int32_t g = 0; g < groups.numGroups; ++g)
    {
        const I2 r        = groups.range[g];
        const int64_t per = int64_t(nodes[g]) + leafBodies[g] - self;
        for (int32_t k = r.x; k < r.x + r.y; ++k) cost[size_t(k)] += per;
    }
}

void addGroupCosts(const GroupView& groups, const WalkCounts& counts, int64_t self, std::vector<int64_t>& cost)
{
    addGroupCosts(groups, counts.nodes.data(), counts.leafBodies.data(), self, cost);
}

/// TreePM's mesh for the ranks: whole on the first rank's device where the mesh runs on the GPU (pm_backend, or
/// auto with the GPU backend: cuFFT takes milliseconds where the host's slabs take seconds), else cut into slabs
/// over the ranks' hosts. The first rank's choice holds for all. Collective.
std::unique_ptr<RankMesh> makeRankMesh(const Communicator& comm, const Parameters& p, Backend active)
{
    const Backend where        = p.pm_backend == Backend::Auto ? active : p.pm_backend;
    const bool onDevice        = where == Backend::Gpu;
    const bool onFirstRanksGpu = comm.allgather<int>(onDevice ? 1 : 0)[0] != 0;
    if (onFirstRanksGpu) return std::make_unique<GatheredMesh>(comm, p, true);
    return std::make_unique<DistributedMesh>(comm, p);
}

} // namespace

DistributedGravity::DistributedGravity(const Communicator& comm, const Parameters& p)
    : comm_(comm), params_(p), solver_(p), local_(std::make_unique<LocalTree>())
{
    checkDistributable(p);
    if (p.box_size > 0)
    {
        periodic_ = treePmPeriodicView(p);
        mesh_     = makeRankMesh(comm, p, solver_.activeBackend());
        solver_.setMeshSchedule(GravitySolver::MeshSchedule::Elsewhere);
    }
}

DistributedGravity::~DistributedGravity() = default;

void DistributedGravity::setEpsilonSquared(double epsilonSquared)
{
    if (epsilonSquared == params_.epsilon_squared) return;
    Parameters p      = params_;
    p.epsilon_squared = epsilonSquared;
    solver_.setParameters(p);
    params_ = p;
}

void DistributedGravity::evaluateLocal(const ParticleSet& local, const F4* previous, std::vector<Vec3d>& acc,
                                       std::vector<double>& pot, std::vector<int64_t>& cost, int64_t& interactions,
                                       const std::function<void()>& afterBuild)
{
    LocalTree& t = *local_;
    t            = LocalTree{};
    t.n          = local.size();
    acc.assign(size_t(t.n), Vec3d{0, 0, 0});
    pot.assign(size_t(t.n), 0.0);
    cost.assign(size_t(t.n), 0);
    interactions = 0;
    if (t.n == 0)
    {
        afterBuild();
        return;
    }
    t.hasTree = true;
    if (t.n == 1)
    {
        // One leaf holding the body: it feels nothing of its own rank, and other ranks see a point mass.
        const Vec3d p = local.pos[0];
        const Moments m{local.mass[0], p, SymTensor<double>{0, 0, 0, 0, 0, 0}, p, p};
        packNode(m, params_.mac, packedInvTheta(params_), packedQuadScale(params_), packedSpreadScale(params_), t.com,
                 t.mac, t.quad);
        t.body = toF4(p, local.mass[0]);
        groupBox(&t.body, t.leaf, t.center, t.half);
        t.tree   = {nullptr, &t.mac, &t.com, t.quad, &t.leaf, 0, 1, kLeafBit, 0, periodic_, packedFarField2(params_)};
        t.groups = {&t.leaf, &t.center, &t.half, 1};
        t.bodies = {&t.body, 1};
        t.order  = &t.firstBody;
        afterBuild();
        return;
    }
    solver_.attachBodies(local.pos.data(), local.mass.data(), local.id.data(), t.n);
    if (previous) solver_.setPreviousAccelerations(previous);
    solver_.setAfterBuild([&] {
        const PackedTree& packed = solver_.packedTree();
        t.tree                   = packed.treeView();
        t.groups                 = packed.groupView();
        t.bodies                 = packed.bodyView();
        afterBuild();
    });
    try
    {
        solver_.computeForcesInTreeOrder(acc, pot);
    }
    catch (...)
    {
        solver_.setAfterBuild(nullptr);
        throw;
    }
    t.order      = solver_.treeOrder().data();
    interactions = solver_.stats().nodeInteractions + solver_.stats().leafInteractions;
    if (solver_.activeBackend() == Backend::Cpu)
    {
        addGroupCosts(t.groups, solver_.cpuCounts(), 1, cost);
        return;
    }
    const GpuEvaluation& gpu = solver_.gpuResult();
    addGroupCosts(t.groups, gpu.nodeCounts.data(), gpu.leafBodyCounts.data(), 1, cost);
}

void DistributedGravity::exchangeEssentialTrees(Exchange& ex)
{
    const LocalTree& t = *local_;
    Stopwatch clock;
    std::vector<int64_t> boxCounts;
    const std::vector<GroupsBox> boxes =
        comm_.allgatherv(groupsBoxes(t.groups, kBoxesPerRank, params_.box_size > 0), &boxCounts);
    ex.secondsExchange += clock.lap();
    std::vector<char>& send = ex.send;
    std::vector<int64_t> sendCounts(static_cast<size_t>(comm_.size()), 0);
    int64_t firstBox = 0;
    for (int r = 0; r < comm_.size(); ++r)
    {
        const auto first = boxes.begin() + firstBox;
        firstBox += boxCounts[size_t(r)];
        if (r == comm_.rank() || !t.hasTree) continue;
        buildEssentialTree(t.tree, t.bodies, std::vector<GroupsBox>(first, first + boxCounts[size_t(r)]), outgoing_,
                           cutScratch_);
        const EssentialTree& let = outgoing_;
        const size_t before      = send.size();
        serializeEssentialTree(let, send);
        sendCounts[size_t(r)] = int64_t(send.size() - before);
        ex.nodesSent += let.numNodes();
    }
    ex.secondsBuild = clock.lap();
    comm_.alltoallv(send, sendCounts, ex.recvCounts, ex.received);
    ex.secondsExchange += clock.lap();
    ex.bytesSent = int64_t(send.size());
}

const F4* DistributedGravity::walkRemoteOnGpu(const EssentialTree& let, const TargetView& targets,
                                              std::vector<int64_t>& cost)
{
    if (!remoteGpu_) remoteGpu_ = std::make_unique<GpuSolver>();
    const LocalTree& t = *local_;
    remoteGpu_->evaluate(let.view(periodic_), t.groups, let.bodyView(), targets, float(params_.epsilon_squared),
                         remoteResult_);
    addGroupCosts(t.groups, remoteResult_.nodeCounts.data(), remoteResult_.leafBodyCounts.data(), 0, cost);
    return remoteResult_.acc.data();
}

void DistributedGravity::addRemote(const EssentialTree& let, int s, std::vector<Vec3d>& acc, std::vector<double>& pot,
                                   std::vector<int64_t>& cost, int64_t& interactions)
{
    const LocalTree& t = *local_;
    // Probe targets (areBodies false): a remote tree's bodies are never the targets themselves.
    const TargetView targets{t.bodies.posMass, int32_t(t.n), false};
    const F4* f = nullptr;
    if (solver_.activeBackend() == Backend::Gpu)
    {
        // The lists are not downloaded, so the check of the CPU walk below is not made here: the device walk
        // builds the lists the CPU twin builds (tests/gpu), and the twin makes the check on every evaluation.
        f = walkRemoteOnGpu(let, targets, cost);
        interactions += remoteResult_.nodeInteractions + remoteResult_.leafInteractions;
    }
    else
    {
        const InteractionTotals totals = evaluateTreeCpu(let.view(periodic_), t.groups, let.bodyView(), targets,
                                                         float(params_.epsilon_squared), scratch_);
        checkClosedLeavesNotOpened(let, scratch_.lists.leafOffset.data(), scratch_.lists.leafList.data(),
                                   t.groups.numGroups, "rank " + std::to_string(s));
        addGroupCosts(t.groups, scratch_.counts, 0, cost);
        interactions += totals.nodes + totals.leafBodies;
        f = scratch_.out.data();
    }
    const double G  = params_.gravitational_constant;
    const int64_t n = t.n;
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < n; ++k)
    {
        acc[size_t(k)] += Vec3d{G * f[k].x, G * f[k].y, G * f[k].z};
        pot[size_t(k)] += G * f[k].w;
    }
}

void DistributedGravity::addMeshForces(DistributedForces& out) const
{
    const double G  = params_.gravitational_constant;
    const int64_t n = int64_t(out.acc.size());
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i)
    {
        out.acc[size_t(i)] += G * meshAcc_[size_t(i)];
        out.pot[size_t(i)] += G * meshPot_[size_t(i)];
    }
}

void DistributedGravity::computeForces(const ParticleSet& local, DistributedForces& out, const F4* previous)
{
    out = DistributedForces{};
    Stopwatch total;
    std::vector<Vec3d> localAcc;
    std::vector<double> localPot;
    std::vector<int64_t> cost;
    // TreePM's long range: its first part here (the slabs: the bodies' masses on them; the first rank's mesh: the
    // bodies' check); on the GPU backend the rest (the transforms, or the gathering and the device's mesh) runs on a
    // host thread beside the walk and beside the essential trees' exchange, on the mesh's own communicator, where
    // MPI lets two threads call it at once; on the CPU backend, whose walk takes every core, after the walk.
    const bool meshBeside = mesh_ && solver_.activeBackend() == Backend::Gpu && mpiAllowsConcurrentThreads();
    if (mesh_)
    {
        mesh_->assignAndSum(local.pos.data(), local.mass.data(), local.size());
        out.secondsMesh = total.lap();
    }
    const auto solveMesh = [&] {
        Stopwatch clock;
        mesh_->solveAndInterpolate(local.mass.data(), local.size(), meshAcc_, meshPot_);
        out.secondsMeshSolve      = clock.lap();
        out.secondsMeshTransforms = mesh_->timings().transforms;
        out.secondsMeshTransposes = mesh_->timings().transposes;
    };
    if (meshBeside && !meshThread_) meshThread_ = std::make_unique<WorkerThread>();
    JobBeside meshJob(meshBeside ? meshThread_.get() : nullptr);
    if (!exchange_) exchange_ = std::make_unique<Exchange>();
    Exchange& ex = *exchange_;
    ex.reset();
    std::thread exchanger;
    out.overlapped           = mpiAllowsASecondThread();
    const auto startExchange = [&] {
        if (!out.overlapped)
        {
            exchangeEssentialTrees(ex);
            return;
        }
        // The cut of the essential trees runs on threads of its own: all of the rank's while the device walks, one
        // while the CPU's walk takes them.
        const int threads = solver_.activeBackend() == Backend::Gpu ? maxThreads() : 1;
        exchanger         = std::thread([this, &ex, threads] {
            try
            {
                setThreadsOfThisThread(threads);
                exchangeEssentialTrees(ex);
            }
            catch (...)
            {
                ex.error = std::current_exception();
            }
        });
    };
    // Once the own tree is built: the mesh's transforms and the essential trees' cut and exchange on host threads
    // while the device walks (the mesh started before the build slowed the build it competed with for the cores).
    const auto afterBuild = [&] {
        meshJob.start(solveMesh);
        startExchange();
    };
    Stopwatch clock;
    try
    {
        evaluateLocal(local, previous, localAcc, localPot, cost, out.localInteractions, afterBuild);
    }
    catch (...)
    {
        // The other ranks still take part in the exchange: let it finish before the error leaves.
        if (exchanger.joinable()) exchanger.join();
        throw;
    }
    out.secondsLocal = clock.lap();
    if (exchanger.joinable()) exchanger.join();
    out.secondsExchangeWait = out.overlapped ? clock.lap() : 0.0;
    if (ex.error) std::rethrow_exception(ex.error);
    out.secondsEssentialBuild = ex.secondsBuild;
    out.secondsExchange       = ex.secondsExchange;
    out.bytesSent             = ex.bytesSent;
    out.nodesSent             = ex.nodesSent;
    out.bytesReceived         = int64_t(ex.received.size());
    clock.lap();

    // The parts in rank order, this rank's own tree at its place: the same order on every rank and run.
    const size_t n = size_t(local_->n);
    std::vector<Vec3d> acc(n, Vec3d{0, 0, 0});
    std::vector<double> pot(n, 0.0);
    int64_t offset = 0;
    for (int s = 0; s < comm_.size(); ++s)
    {
        const int64_t bytes = ex.recvCounts[size_t(s)];
        if (s == comm_.rank())
        {
            for (size_t k = 0; k < n; ++k)
            {
                acc[k] += localAcc[k];
                pot[k] += localPot[k];
            }
        }
        else if (bytes > 0 && n > 0)
        {
            deserializeEssentialTree(ex.received.data() + offset, size_t(bytes), "rank " + std::to_string(s),
                                     incoming_);
            out.nodesReceived += incoming_.numNodes();
            addRemote(incoming_, s, acc, pot, cost, out.remoteInteractions);
        }
        offset += bytes;
    }
    out.secondsRemote = clock.lap();

    out.acc.resize(n);
    out.pot.resize(n);
    out.cost.resize(n);
    for (size_t k = 0; k < n; ++k)
    {
        const size_t i = size_t(local_->order[k]);
        out.acc[i]     = acc[k];
        out.pot[i]     = pot[k];
        out.cost[i]    = cost[k];
    }
    if (mesh_)
    {
        if (meshBeside) meshJob.finish();
        else solveMesh();
        addMeshForces(out);
    }
    out.secondsForce = out.secondsMesh + total.lap();
}

} // namespace octwalk::mpi
