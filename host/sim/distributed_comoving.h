#pragma once
/// @file distributed_comoving.h
/// A comoving run (host/sim/comoving.h) on bodies spread over ranks: Simulation's clock and step in the scale
/// factor, with the forces of mpi::DistributedLeapfrog (periodic, TreePM). The step criterion takes the largest
/// acceleration of all ranks (each rank's criterion, then the smallest: the same number on every rank, exact),
/// and the softening of each step's new scale factor. From start() on, the bodies' vel holds the canonical
/// momenta p = a^2 dx/dt (as a comoving checkpoint stores them; the bodies move between ranks with them);
/// peculiar velocities v = p / a are what diagnostics and snapshots show.

#include <cstdint>

#include "host/core/params.h"
#include "host/core/particles.h"
#include "host/mpi/communicator.h"
#include "host/mpi/distributed_leapfrog.h"
#include "host/sim/simulation.h"

namespace octwalk {

class DistributedComoving
{
public:
    /// comm must outlive this. clock: a new run's (startClock) or a checkpoint's.
    DistributedComoving(const mpi::Communicator& comm, const Parameters& p, const Simulation::Comoving& clock);

    /// A new run's clock at a_begin: the checks of a single-process comoving run's settings (ParameterError) and H0
    /// from the mass of all ranks' bodies (InputError on every rank when it does not fit the units). The bodies'
    /// places in the box are the caller's to check (on the rank that reads them, before the ranks part). Collective.
    static Simulation::Comoving startClock(const mpi::Communicator& comm, const ParticleSet& local, const Parameters& p,
                                           const ComovingSettings& s);

    /// A new run: local's peculiar velocities become momenta, the domains are cut, the first forces are
    /// evaluated and the Layzer-Irvine bookkeeping starts. Collective.
    void start(ParticleSet& local);
    /// A restart: local holds the momenta and the domains of the interrupted run, previous its checkpoint's
    /// forces (mpi::DistributedLeapfrog::resume). Collective.
    void resume(const ParticleSet& local, std::vector<F4> previous);
    /// One step from a to the next scale factor (comoving.h). InputError when the step does not advance a.
    /// Collective.
    void step(ParticleSet& local);

    bool done() const { return clock_.a >= clock_.settings.aEnd; }
    const Simulation::Comoving& clock() const { return clock_; }
    /// The step the current state allows in ln a (--dlna, or the criterion over all ranks), as of the last forces.
    double stepLimit() const { return stepLimit_; }
    const mpi::DistributedLeapfrog& leapfrog() const { return lf_; }
    mpi::DistributedLeapfrog& leapfrog() { return lf_; }

    /// K of the peculiar velocities, W = sum m phi / (2 a), the momentum sum m v, summed on each rank and then in
    /// rank order (time = a). Collective.
    Diagnostics diagnostics(const ParticleSet& local) const;

private:
    /// The softening of scale factor a, squared (comovingSoftening).
    double epsilonSquaredAt(double a) const;
    /// Updates stepLimit_ from the last forces. Collective.
    void updateStepLimit();
    /// 2K + W at the current a, the Layzer-Irvine integrand. Collective.
    double layzerIrvineRate(const ParticleSet& local) const;

    const mpi::Communicator& comm_;
    mpi::DistributedLeapfrog lf_;
    Simulation::Comoving clock_;
    double epsilonSquared_ = 0, epsilon_ = 0; ///< the comoving softening of the parameters
    double stepLimit_ = 0;
    double rate_      = 0; ///< 2K + W at the current a
};

} // namespace octwalk
