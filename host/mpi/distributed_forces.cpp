#include "host/mpi/distributed_forces.h"

#include <string>

#include "common/refit.h"
#include "host/core/timer.h"
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

namespace {

void checkDistributable(const Parameters& p)
{
    if (p.box_size > 0)
    {
        throw ParameterError("box_size " + std::to_string(p.box_size) +
                             ": the distributed evaluation takes isolated boxes only (box_size 0)");
    }
    if (p.mac == Mac::Relative)
    {
        throw ParameterError("mac relative: the distributed evaluation takes the octgrav or bonsai MAC only");
    }
}

/// Adds each group's per-body interaction count (its list lengths, leaf bodies counted) to its bodies.
/// @param self 1 when the targets are the tree's own bodies (each met itself), else 0
void addGroupCosts(const GroupView& groups, const WalkCounts& counts, int64_t self, std::vector<int64_t>& cost)
{
    for (int32_t g = 0; g < groups.numGroups; ++g)
    {
        const I2 r        = groups.range[g];
        const int64_t per = int64_t(counts.nodes[g]) + counts.leafBodies[g] - self;
        for (int32_t k = r.x; k < r.x + r.y; ++k) cost[size_t(k)] += per;
    }
}

} // namespace

DistributedGravity::DistributedGravity(const Communicator& comm, const Parameters& p)
    : comm_(comm), params_(p), solver_(p), local_(std::make_unique<LocalTree>())
{
    checkDistributable(p);
}

DistributedGravity::~DistributedGravity() = default;

void DistributedGravity::evaluateLocal(const ParticleSet& local, std::vector<Vec3d>& acc, std::vector<double>& pot,
                                       std::vector<int64_t>& cost, int64_t& interactions)
{
    LocalTree& t = *local_;
    t            = LocalTree{};
    t.n          = local.size();
    acc.assign(size_t(t.n), Vec3d{0, 0, 0});
    pot.assign(size_t(t.n), 0.0);
    cost.assign(size_t(t.n), 0);
    interactions = 0;
    if (t.n == 0) return;
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
        t.tree   = {nullptr,
                    &t.mac,
                    &t.com,
                    t.quad,
                    &t.leaf,
                    0,
                    1,
                    kLeafBit,
                    0,
                    PeriodicView{nullptr, 0, 0.0f, 0.0f},
                    packedFarField2(params_)};
        t.groups = {&t.leaf, &t.center, &t.half, 1};
        t.bodies = {&t.body, 1};
        t.order  = &t.firstBody;
        return;
    }
    solver_.attachBodies(local.pos.data(), local.mass.data(), local.id.data(), t.n);
    solver_.computeForcesInTreeOrder(acc, pot);
    const PackedTree& packed = solver_.packedTree();
    t.tree                   = packed.treeView();
    t.groups                 = packed.groupView();
    t.bodies                 = packed.bodyView();
    t.order                  = solver_.treeOrder().data();
    interactions             = solver_.stats().nodeInteractions + solver_.stats().leafInteractions;
    if (solver_.activeBackend() == Backend::Cpu)
    {
        addGroupCosts(t.groups, solver_.cpuCounts(), 1, cost);
        return;
    }
    // The device keeps its per-group counts: pass 1 of the CPU twin gives the same ones.
    int32_t overflowGroup = 0;
    scratch_.counts.resize(t.groups.numGroups);
    countInteractionsCpu(t.tree, t.groups, scratch_.counts.view(), &overflowGroup);
    checkWalkOverflow("pass 1", overflowGroup);
    addGroupCosts(t.groups, scratch_.counts, 1, cost);
}

std::vector<char> DistributedGravity::exchangeEssentialTrees(std::vector<int64_t>& recvCounts, DistributedForces& out)
{
    const LocalTree& t = *local_;
    Stopwatch clock;
    const std::vector<GroupsBox> boxes = comm_.allgather(groupsBox(t.groups));
    out.secondsExchange += clock.lap();
    std::vector<char> send;
    std::vector<int64_t> sendCounts(static_cast<size_t>(comm_.size()), 0);
    for (int r = 0; r < comm_.size(); ++r)
    {
        if (r == comm_.rank() || !t.hasTree) continue;
        const EssentialTree let = buildEssentialTree(t.tree, t.bodies, boxes[size_t(r)]);
        const size_t before     = send.size();
        serializeEssentialTree(let, send);
        sendCounts[size_t(r)] = int64_t(send.size() - before);
        out.nodesSent += let.numNodes();
    }
    out.secondsEssentialBuild  = clock.lap();
    std::vector<char> received = comm_.alltoallv(send, sendCounts, recvCounts);
    out.secondsExchange += clock.lap();
    out.bytesSent     = int64_t(send.size());
    out.bytesReceived = int64_t(received.size());
    return received;
}

void DistributedGravity::addRemote(const EssentialTree& let, int s, std::vector<Vec3d>& acc, std::vector<double>& pot,
                                   std::vector<int64_t>& cost, int64_t& interactions)
{
    const LocalTree& t = *local_;
    // Probe targets (areBodies false): a remote tree's bodies are never the targets themselves.
    const TargetView targets{t.bodies.posMass, int32_t(t.n), false};
    const InteractionTotals totals =
        evaluateTreeCpu(let.view(), t.groups, let.bodyView(), targets, float(params_.epsilon_squared), scratch_);
    checkClosedLeavesNotOpened(let, scratch_.lists.leafOffset.data(), scratch_.lists.leafList.data(),
                               t.groups.numGroups, "rank " + std::to_string(s));
    const double G  = params_.gravitational_constant;
    const F4* f     = scratch_.out.data();
    const int64_t n = t.n;
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < n; ++k)
    {
        acc[size_t(k)] += Vec3d{G * f[k].x, G * f[k].y, G * f[k].z};
        pot[size_t(k)] += G * f[k].w;
    }
    addGroupCosts(t.groups, scratch_.counts, 0, cost);
    interactions += totals.nodes + totals.leafBodies;
}

void DistributedGravity::computeForces(const ParticleSet& local, DistributedForces& out)
{
    out = DistributedForces{};
    std::vector<Vec3d> localAcc;
    std::vector<double> localPot;
    std::vector<int64_t> cost;
    Stopwatch clock;
    evaluateLocal(local, localAcc, localPot, cost, out.localInteractions);
    out.secondsLocal = clock.lap();
    std::vector<int64_t> recvCounts;
    const std::vector<char> received = exchangeEssentialTrees(recvCounts, out);
    clock.lap();

    // The parts in rank order, this rank's own tree at its place: the same order on every rank and run.
    const size_t n = size_t(local_->n);
    std::vector<Vec3d> acc(n, Vec3d{0, 0, 0});
    std::vector<double> pot(n, 0.0);
    int64_t offset = 0;
    for (int s = 0; s < comm_.size(); ++s)
    {
        const int64_t bytes = recvCounts[size_t(s)];
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
            const EssentialTree let =
                deserializeEssentialTree(received.data() + offset, size_t(bytes), "rank " + std::to_string(s));
            out.nodesReceived += let.numNodes();
            addRemote(let, s, acc, pot, cost, out.remoteInteractions);
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
}

} // namespace octwalk::mpi
