#pragma once
/// @file hermite.h
/// `octwalk hermite`: the 4th-order Hermite predictor-corrector (Makino & Aarseth 1992, PASJ 44, 141)
/// with block (power-of-two) individual time steps, forces, jerks and potentials from the GRAPE-6 API
/// (host/g6/g6lib.h: this integrator is its first client and calls it only through the C functions).
///
/// Time is cut into equal sync intervals of length h <= dt_max ending exactly at t_end (planSteps, as
/// `octwalk run`); every body is synchronised at each interval's end, where diagnostics, snapshots and
/// checkpoints are taken. Inside an interval a body's time and step are integers in units of
/// h / 2^kHermiteTickBits, so block membership and commensurability are exact integer tests.
///
/// A step of body i from t0 to t1 = t0 + dt (a0, j0: its acceleration and jerk at t0):
///   predict x, v to t1 (Taylor series to the snap of its last step, the library's j-predictor),
///   evaluate a1, j1 there (the library, all N bodies as j-particles predicted to t1),
///   snap a2 = (-6 (a0 - a1) - dt (4 j0 + 2 j1)) / dt^2, crackle a3 = (12 (a0 - a1) + 6 dt (j0 + j1)) / dt^3,
///   x1 = x0 + v0 dt + a0 dt^2/2 + j0 dt^3/6 + a2 dt^4/24 + a3 dt^5/120,
///   v1 = v0 + a0 dt + j0 dt^2/2 + a2 dt^3/6 + a3 dt^4/24,
/// and its next step from Aarseth's criterion at t1, dt = sqrt(eta (|a||a2| + |j|^2) / (|j||a3| + |a2|^2)),
/// rounded down to a power of two of h; a step is halved as often as needed and doubled at most once per
/// step, and only when t1 is a multiple of the doubled step.
///
/// The start: a trial step of eta_start |a| / |j| from every body gives its snap and crackle at t_0 (the
/// same interpolation; one evaluation per trial length, N i-particles in all); the first step is the
/// shorter of the trial length and Aarseth's criterion at t_0, and its predictor has the snap. Without the
/// trial, a body whose jerk happens to be small took a first step far too long: at N = 1024, eps = 1/256,
/// dt_max = 1/16 that alone made |dE/E0| = 1.4e-7, now 2e-10 after the first interval.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "host/core/params.h"
#include "host/core/particles.h"
#include "host/sim/run_driver.h"
#include "host/sim/simulation.h"

namespace octwalk {

/// The integrator's settings (N-body units).
struct HermiteSettings
{
    /// Aarseth's accuracy parameter for every step but the first. (0, 1]
    double eta = 0.02;
    /// The first step's parameter: dt = eta_start |a| / |j| at most (a trial step of that length then
    /// gives the snap and crackle for Aarseth's criterion at the start). (0, 1]
    double etaStart = 0.01;
    /// The longest step and the sync interval of outputs [time]; the interval is the largest
    /// (t_end - t_0) / k not above it. > 0, finite
    double dtMax = 1.0 / 16;
};

/// ParameterError naming the first setting out of range and its value.
void validate(const HermiteSettings& s);

/// Steps are multiples of h / 2^kHermiteTickBits: the shortest step a body may take.
inline constexpr int kHermiteTickBits = 48;

/// Conserved quantities at a sync time (G applied); the potential from a fresh evaluation at the
/// synchronised positions.
struct HermiteDiagnostics
{
    double time = 0, kinetic = 0, potential = 0, total = 0, relativeEnergyError = 0, virialRatio = 0;
    Vec3d momentum{0, 0, 0}, angularMomentum{0, 0, 0};
};

/// Steps taken, cumulative over the whole run (a restart continues the counts of its checkpoint).
struct HermiteCounts
{
    /// Block steps: times at which a group of bodies is advanced together.
    int64_t blockSteps = 0;
    /// Body steps: the sum of the block sizes.
    int64_t bodySteps = 0;
};

/// A libg6 cluster id held open for the lifetime of its owner: the lowest id no other integrator holds,
/// closed and given back by the destructor (also when the owner's constructor throws).
class G6Cluster
{
public:
    G6Cluster() = default;
    ~G6Cluster();
    G6Cluster(const G6Cluster&)            = delete;
    G6Cluster& operator=(const G6Cluster&) = delete;
    /// Takes an id and opens it; BackendError when all are taken or g6_open fails.
    void open();
    int id() const { return id_; }

private:
    int id_    = -1;
    bool open_ = false;
};

class HermiteIntegrator
{
public:
    /// Validates the bodies (InputError naming the body: a position, velocity or mass that is not
    /// finite, a mass <= 0; fewer than 2 or more than 2^31 - 1 bodies; without softening, two bodies at one
    /// position), opens the library (the lowest cluster id no other integrator holds; BackendError when it
    /// refuses), computes the initial forces and the first steps.
    /// @param[in] initial   bodies at plan.t0 (G applied by the integrator: masses as given)
    /// @param[in] p         epsilon_squared and gravitational_constant are used; the tree parameters not
    /// @param[in] settings  validated (ParameterError)
    /// @param[in] plan      the sync intervals: plan.h <= settings.dtMax
    HermiteIntegrator(ParticleSet initial, const Parameters& p, const HermiteSettings& settings, StepPlan plan);
    HermiteIntegrator(const HermiteIntegrator&)            = delete;
    HermiteIntegrator& operator=(const HermiteIntegrator&) = delete;

    /// Restores a checkpoint written by writeCheckpoint (FormatError when it is not one of this
    /// integrator's; ParameterError when its settings are out of range); the run continues bit-identically.
    /// @param[out] runSettings  the output cadences stored with it (may be null)
    static std::unique_ptr<HermiteIntegrator> fromCheckpoint(const std::string& path, RunSettings* runSettings);
    /// The same from a checkpoint already read (findRestartCheckpoint's image) from path, which messages name.
    static std::unique_ptr<HermiteIntegrator> fromCheckpoint(CheckpointImage image, const std::string& path,
                                                             RunSettings* runSettings);

    /// Integrates to the end of the next sync interval with block steps. InputError naming the body when
    /// a step would fall below h / 2^kHermiteTickBits or a state becomes non-finite; BackendError when
    /// the library returns an error.
    void advanceInterval();

    bool done() const { return interval_ >= plan_.numSteps; }
    /// Sync intervals done.
    int64_t stepIndex() const { return interval_; }
    double time() const { return plan_.t0 + double(interval_) * plan_.h; }
    const StepPlan& plan() const { return plan_; }
    /// Moves the end of the run to tEnd; ParameterError unless tEnd - t0 is a whole number of intervals
    /// not before the current one (so a restarted run stays bit-identical to an uninterrupted one).
    void extendTo(double tEnd);

    const ParticleSet& state() const { return state_; }
    const Parameters& parameters() const { return params_; }
    const HermiteSettings& settings() const { return settings_; }
    const HermiteCounts& counts() const { return counts_; }
    /// Shortest and longest step now held by a body [time].
    double shortestStep() const;
    double longestStep() const;
    /// The energy sums at the current (synchronised) time: one potential evaluation through the library.
    HermiteDiagnostics diagnostics();
    /// The block size the library takes per call (g6_npipes).
    int pipes() const { return pipes_; }

    /// Seconds inside the library's functions and in advanceInterval (integration and library), in this
    /// process: their ratio is the fraction of the integration spent in the library.
    double librarySeconds() const { return librarySeconds_; }
    double integrationSeconds() const { return integrationSeconds_; }

    /// Writes a checkpoint (host/io/checkpoint.h; the integrator's per-body state in its settings
    /// field, with rs) through an AtomicFile; an existing one becomes path + ".prev".
    void writeCheckpoint(const std::string& path, const RunSettings& rs) const;

private:
    struct Restored;
    explicit HermiteIntegrator(Restored&& r);

    void open();
    void checkBodies() const;
    /// FormatError naming the first body whose step is not a power of two of ticks up to the interval.
    void checkStepTicks() const;
    double tickSeconds() const;
    double tau(int64_t ticks) const;
    void uploadAll();
    void uploadBody(int64_t i, double tj);
    void evaluate(const std::vector<int>& bodies, double ti, const std::vector<Vec3d>& xi, const std::vector<Vec3d>& vi,
                  std::vector<Vec3d>& acc, std::vector<Vec3d>& jerk, std::vector<double>& pot);
    void initialForces();
    /// Snap at the start and the first steps from a trial step per body; adds its library time.
    void startDerivatives(double& librarySeconds);
    /// The next block time (ticks) and its bodies.
    int64_t nextBlock(std::vector<int>& active);
    /// Advances the bodies of `active` (their steps end at blockTicks) by one Hermite step.
    void blockStep(int64_t blockTicks, const std::vector<int>& active);
    int64_t firstStep(int64_t i) const;
    /// Aarseth's step [time] for body i from its new acceleration, jerk and snap and its crackle.
    double aarsethStep(int64_t i, const Vec3d& crackle) const;
    int64_t quantise(int64_t i, double wanted, int64_t current, int64_t time) const;
    /// Why body i cannot take its step `wanted` (below the shortest, or not a number), for an InputError:
    /// an overflowing criterion, a body far faster than the others, or a close encounter.
    std::string stepTooShort(int64_t i, double wanted, int64_t time) const;

    ParticleSet state_;
    Parameters params_;
    HermiteSettings settings_;
    StepPlan plan_;
    int64_t interval_     = 0;
    double initialEnergy_ = 0;
    HermiteCounts counts_;
    /// Per body, at its own time: acceleration, jerk, snap (from its last correction) and potential.
    std::vector<Vec3d> acc_, jerk_, snap_;
    std::vector<double> pot_;
    /// Per body: time since the interval's start and step, in ticks.
    std::vector<int64_t> timeTicks_, stepTicks_;
    /// Bodies by the tick at which their step ends (this interval's; rebuilt at its start).
    std::map<int64_t, std::vector<int>> schedule_;
    /// The time (from the interval's start) at which every j-particle in the library is now given.
    double libraryTime_ = 0;
    G6Cluster cluster_;
    int pipes_             = 0;
    double librarySeconds_ = 0, integrationSeconds_ = 0;
};

/// What the caller sees of a running loop.
struct HermiteRunControl
{
    /// Called after every sync interval (e.g. a progress line); may be empty.
    std::function<void(const HermiteIntegrator&, const HermiteDiagnostics*)> afterInterval;
    /// Polled after every interval; non-zero (a signal number) writes a checkpoint and stops. May be empty.
    std::function<int()> stopRequested;
};

/// Writes dir/run.json: version, units, initial conditions, parameters, integrator settings, times,
/// cadences, step counts and, at the end of a run, wall time and the fraction of it inside the library.
/// @param[in] source             the initial conditions as a JSON value
/// @param[in] restartedFromStep  the checkpoint's interval of a restart, -1 for a new run
/// @param[in] finished           add the timing of this process (at the end of a run)
void writeHermiteRunJson(const std::filesystem::path& dir, const HermiteIntegrator& h, const RunSettings& rs,
                         const std::string& source, int64_t restartedFromStep, bool finished);

/// Integrates h to its end in dir: energy.csv and lagrange.csv every rs.energyEvery intervals,
/// snapshots (snap_NNNNNN, NNNNNN the interval) every rs.snapshotEvery, checkpoints every
/// rs.checkpointEvery, each also at the end. A new run (resume false) first writes the rows and the
/// snapshot of its start; a resumed one continues the files of dir, dropping rows after its interval.
/// Returns 0, or the stop value that ended it early (a checkpoint is then written).
int runHermite(HermiteIntegrator& h, const std::filesystem::path& dir, const RunSettings& rs, bool resume,
               const HermiteRunControl& control = {});

} // namespace octwalk
