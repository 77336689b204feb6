#pragma once
/// @file distributed_forces.h
/// Gravity on the bodies of many ranks: each rank walks its own tree for its bodies (GravitySolver, on
/// either backend) and the essential trees of every other rank (host/mpi/let.h) cut for the box of its
/// groups, and adds the parts in rank order. Octgrav's or Bonsai's MAC (let.h says why), in isolated boxes or in
/// periodic ones under TreePM: there the trees give the short range (the essential trees hold the bodies within
/// its reach), and the ranks' bodies share one mesh for the long range: whole on the first rank's device where the
/// mesh runs on the GPU (host/mpi/gathered_mesh.h), else cut into slabs over the ranks (host/mpi/distributed_mesh.h).
///
///   mpi::MpiEnvironment env(&argc, &argv);
///   mpi::Communicator comm;
///   ParticleSet mine = ...;                     // any split of the bodies over the ranks
///   mpi::redistribute(comm, mine);              // host/mpi/domain.h
///   mpi::DistributedGravity gravity(comm, p);
///   mpi::DistributedForces f;
///   gravity.computeForces(mine, f);             // f.acc[i], f.pot[i] belong to mine's body i
///   mpi::redistribute(comm, mine, f.cost);      // the next decomposition balances the interactions

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "common/vec.h"
#include "host/core/params.h"
#include "host/core/particles.h"
#include "host/core/worker_thread.h"
#include "host/mpi/communicator.h"
#include "host/mpi/rank_mesh.h"
#include "host/mpi/let.h"
#include "host/mpi/tree_walk.h"
#include "host/solver/solver.h"

namespace octwalk::mpi {

/// What one distributed evaluation returns for this rank's bodies (their order in the ParticleSet).
struct DistributedForces
{
    std::vector<Vec3d> acc; ///< G applied
    std::vector<double> pot;
    /// Per body: its body-node and body-body interactions (self excluded) in its own rank's tree and in the
    /// essential trees of the others: the cost that domain.h's decompose balances.
    std::vector<int64_t> cost;
    /// This rank's totals: interactions with its own tree and with the other ranks' trees.
    int64_t localInteractions = 0, remoteInteractions = 0;
    /// The essential trees this rank sent and received: bytes, and nodes (closed ones included).
    int64_t bytesSent = 0, bytesReceived = 0, nodesSent = 0, nodesReceived = 0;
    /// Wall seconds of this rank's phases: the whole evaluation; its own tree's build and walk; the essential
    /// trees' build (for every other rank) and their exchange (the group boxes' allgather and the Alltoallv,
    /// waits included: where a slower rank shows), both started once the own tree is built and, where MPI
    /// allows a second thread to call it (MPI_THREAD_SERIALIZED), done while that tree is walked; the wait
    /// for them after the walk (what the overlap did not hide); the walks of the received trees.
    double secondsForce = 0, secondsLocal = 0, secondsEssentialBuild = 0, secondsExchange = 0, secondsExchangeWait = 0,
           secondsRemote = 0;
    /// Whether the essential trees travelled while the own tree was walked.
    bool overlapped = false;
    /// TreePM: wall seconds of the long range's first part (the bodies sent to the mesh's slabs and their masses
    /// assigned), before the trees, and of its transforms and interpolation (on the GPU backend on a host thread
    /// while the device walks, where MPI allows it, else after the walks); both within secondsForce.
    double secondsMesh = 0, secondsMeshSolve = 0;
    /// TreePM: of secondsMeshSolve, the mesh's serial transforms (planes and rows) and its transposes.
    double secondsMeshTransforms = 0, secondsMeshTransposes = 0;
};

class DistributedGravity
{
public:
    /// ParameterError for a periodic box without TreePM (pm_grid 0) or Mac::Relative (not distributed yet).
    /// comm must outlive this.
    DistributedGravity(const Communicator& comm, const Parameters& p);
    ~DistributedGravity();

    const Parameters& parameters() const { return params_; }
    /// The softening of the next evaluation (a comoving run's changes with a); ParameterError as the
    /// parameters' for a bad value.
    void setEpsilonSquared(double epsilonSquared);

    /// Forces on this rank's bodies from the bodies of all ranks. Collective: every rank calls it, with any
    /// number of bodies (none too). InputError as GravitySolver's for bad bodies (in a periodic box, a body
    /// outside [0, box_size)^3 too). The same bodies on the
    /// same ranks give the same bits, for any thread count. On the GPU backend both the own tree and the
    /// received essential trees are walked on the device (GpuSolver::evaluate, the CPU twin's arrays).
    /// @param previous  null, or per body of local its previous acceleration (xyz, G = 1, as
    ///                  GravitySolver::setPreviousAccelerations takes them): TreePM's error control
    ///                  (err_tol_force_acc) then sets each group's tolerance from them, as in one process's run
    void computeForces(const ParticleSet& local, DistributedForces& out, const F4* previous = nullptr);

    /// The local solver (its tree, timings and statistics of the last local evaluation).
    const GravitySolver& localSolver() const { return solver_; }

private:
    struct LocalTree;
    struct Exchange;
    /// Builds and walks the local tree for the local bodies: fills local_ and the local part of the sums.
    /// previous: as computeForces'. afterBuild runs once the tree is built (and packed), before its walk.
    void evaluateLocal(const ParticleSet& local, const F4* previous, std::vector<Vec3d>& acc, std::vector<double>& pot,
                       std::vector<int64_t>& cost, int64_t& interactions, const std::function<void()>& afterBuild);
    /// The essential trees of this rank's tree for every other rank, exchanged: the received bytes, their
    /// sizes per rank and the phases' seconds.
    void exchangeEssentialTrees(Exchange& ex);
    /// Adds source rank s's essential tree's forces and costs to the sums.
    void addRemote(const EssentialTree& let, int s, std::vector<Vec3d>& acc, std::vector<double>& pot,
                   std::vector<int64_t>& cost, int64_t& interactions);
    /// The walk of a received essential tree for this rank's groups on the device: results (G = 1, tree order)
    /// and per-group counts into remoteGpu_'s evaluation.
    const F4* walkRemoteOnGpu(const EssentialTree& let, const TargetView& targets, std::vector<int64_t>& cost);
    /// TreePM: adds the mesh's forces (G applied) to out's, body by body.
    void addMeshForces(DistributedForces& out) const;

    const Communicator& comm_;
    Parameters params_;
    GravitySolver solver_;
    std::unique_ptr<LocalTree> local_;
    TreeWalkScratch scratch_;
    std::unique_ptr<GpuSolver> remoteGpu_; ///< created at the first remote walk on the GPU backend
    GpuEvaluation remoteResult_;
    // Kept from step to step: a fresh buffer of the essential trees' size is faulted in page by page, which
    // took longer than cutting the trees.
    std::unique_ptr<Exchange> exchange_;
    EssentialTree outgoing_, incoming_;
    EssentialTreeScratch cutScratch_;
    /// TreePM: the walks' periodic box and short range, and the long range (null in an isolated box).
    PeriodicView periodic_{nullptr, 0, 0.0f, 0.0f};
    std::unique_ptr<RankMesh> mesh_;
    /// Runs the mesh's transforms beside the walks on the GPU backend; kept, with its OpenMP team, between steps.
    std::unique_ptr<WorkerThread> meshThread_;
    std::vector<Vec3d> meshAcc_;
    std::vector<double> meshPot_;
};

} // namespace octwalk::mpi
