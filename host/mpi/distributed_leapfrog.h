#pragma once
/// @file distributed_leapfrog.h
/// The kick-drift-kick leapfrog on bodies spread over ranks: each rank moves its own bodies, the forces come
/// from DistributedGravity, and the domains are cut again (domain.h, weighted by the last interaction counts)
/// when the ranks' costs drift apart, before the force evaluation that follows the drift.

#include <cstdint>

#include "common/integrate.h"
#include "host/core/particles.h"
#include "host/mpi/distributed_forces.h"

namespace octwalk::mpi {

/// Energies of all ranks' bodies, summed in rank order (the same bits on every rank).
struct DistributedEnergy
{
    double kinetic = 0, potential = 0;
    double total() const { return kinetic + potential; }
};

/// The factors of one kick-drift-kick step: vel += kickOpen acc; pos += drift vel (wrapped into a periodic
/// box); the forces with softening epsilonSquared; vel += kickClose acc. A step of dt in time is {dt/2, dt, dt/2,
/// epsilon_squared}; a comoving step (host/sim/comoving.h) keeps the canonical momenta p in vel and takes
/// GADGET-2's kick and drift factors and the softening of its new scale factor.
struct StepFactors
{
    double kickOpen = 0, drift = 0, kickClose = 0;
    double epsilonSquared = 0;
};

class DistributedLeapfrog
{
public:
    /// @param rebalance  the largest rank's cost over the mean above which the domains are cut again (> 1)
    DistributedLeapfrog(const Communicator& comm, const Parameters& p, double rebalance = 1.1);

    /// Cuts the domains by body count, moves the bodies to their ranks and evaluates the first forces.
    /// Collective.
    void start(ParticleSet& local);

    /// Evaluates the forces of the bodies where they are, without cutting the domains: a restart from each
    /// rank's checkpoint, whose bodies (and their order) are those of the interrupted run, so that the
    /// steps that follow are its steps bit for bit. previous: the checkpoint's previousResults() (may be
    /// empty). Collective.
    void resume(const ParticleSet& local, std::vector<F4> previous = {});

    /// Each evaluation's error control (TreePM with err_tol_force_acc > 0, as in one process's run) reads the
    /// forces of the one before, per body (acc xyz, potential; G = 1, in float); none after the domains were cut
    /// again (the bodies moved). These are the ones the last evaluation read (empty: none): a checkpoint stores
    /// them, so that resume evaluates the same forces again.
    const std::vector<F4>& previousResults() const { return taken_; }

    /// One step of dt: half a kick, a drift, the domains cut again when the last evaluation's costs are
    /// out of balance, the forces, half a kick. start() first. Collective.
    void step(ParticleSet& local, double dt);

    /// One step with the given factors (the same ops as step(local, dt) for {dt/2, dt, dt/2, epsilon_squared}).
    void step(ParticleSet& local, const StepFactors& f);

    /// The softening of the next evaluation (start, resume or step(dt)); ParameterError as the parameters'.
    void setEpsilonSquared(double epsilonSquared);
    const Parameters& parameters() const { return gravity_.parameters(); }

    /// Kinetic and potential energy (1/2 sum m phi) of all ranks' bodies at the last forces. Collective.
    DistributedEnergy energy(const ParticleSet& local) const;

    /// This rank's bodies' diagnostic terms at the last forces (common/integrate.h, diagnosticTerms), their velocities
    /// times velocityScale, summed as the single-process run sums them (interleavedSum): the same bits for any
    /// thread count.
    DiagnosticSums localSums(const ParticleSet& local, double velocityScale) const;

    const DistributedForces& forces() const { return forces_; }
    /// The last evaluation's largest rank cost over the mean, and whether the last step cut the domains.
    double imbalance() const { return imbalance_; }
    bool rebalanced() const { return rebalanced_; }

private:
    void kick(ParticleSet& local, double dt) const;
    /// InputError naming the first of this rank's bodies whose force is not finite (raised on that rank alone:
    /// a run ends the job).
    void checkFiniteForces(const ParticleSet& local) const;
    void evaluate(const ParticleSet& local);

    const Communicator& comm_;
    DistributedGravity gravity_;
    double rebalance_;
    DistributedForces forces_;
    /// The last evaluation's forces, for the next one; those the last one read.
    std::vector<F4> previous_, taken_;
    double imbalance_ = 1.0;
    bool rebalanced_  = false;
    bool started_     = false;
};

} // namespace octwalk::mpi
