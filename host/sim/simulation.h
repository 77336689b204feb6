#pragma once
/// @file simulation.h
/// Shared-timestep kick-drift-kick leapfrog on the host state (positions and velocities in
/// double), forces from the tree (or exact direct summation), diagnostics and checkpoints.
///
/// The run ends exactly at t_end with equal sub-steps, as Octgrav does: the number of steps is
/// ceil((t_end - t_0) / timestep) and the step is (t_end - t_0) / steps, so it never exceeds the
/// requested timestep. The time of step k is t_0 + k h (no accumulated round-off).
///
/// A comoving run (the second constructor) integrates in the scale factor instead: see
/// host/sim/comoving.h for its equations, step and softening. Its time() is a, state().vel holds peculiar
/// velocities p / a, and plan() holds t0 = a_begin, h = the last step in ln a and numSteps = steps done
/// plus the steps left at that step (exact with a fixed --dlna, an estimate with the criterion).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/phases.h"
#include "host/core/mass_weighted.h"
#include "host/core/particles.h"
#include "host/core/params.h"
#include "host/io/checkpoint.h"
#include "host/sim/comoving.h"
#include "host/sim/pipeline.h"
#include "host/solver/solver.h"

namespace octwalk {

/// Conserved quantities and structure at one time (G applied, N-body units). In a comoving run: time
/// is a, kinetic and momentum are of the peculiar velocities, potential is the peculiar potential energy
/// W = sum m phi_c / (2 a) (mean density subtracted).
struct Diagnostics
{
    double time = 0, kinetic = 0, potential = 0, total = 0, relativeEnergyError = 0, virialRatio = 0;
    Vec3d comPos{0, 0, 0}, comVel{0, 0, 0}, momentum{0, 0, 0}, angularMomentum{0, 0, 0};
};

/// Mass fractions of the Lagrangian radii written to lagrange.csv.
inline const std::vector<double>& lagrangeFractions()
{
    static const std::vector<double> f{0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9};
    return f;
}

/// Radii about the centre of mass enclosing each fraction of the total mass: the radius where the running mass,
/// added in the order of (radius, mass), first reaches each fraction (the largest radius where it never does).
std::vector<double> lagrangianRadii(const ParticleSet& p, const std::vector<double>& fractions);
/// As lagrangianRadii(p, fractions) about centre.mean(), centre.mass the total mass (a run's rows take both from
/// the energy row's sums).
std::vector<double> lagrangianRadii(const ParticleSet& p, const std::vector<double>& fractions,
                                    const MassWeighted& centre);
/// Whether every mass has the bits of the first (true for none).
bool equalMasses(const std::vector<double>& mass);
/// The ranks (from 0) in the order of the radii where the running mass of n bodies of mass mi, total m, first
/// reaches each fraction (n - 1 where it never does): equal masses add up alike in any order, so these are known
/// before the radii are ordered, and the Lagrangian radii are the radii of these ranks.
std::vector<int64_t> equalMassRanks(int64_t n, double mi, double m, const std::vector<double>& fractions);

struct StepPlan
{
    double t0 = 0, h = 0;
    int64_t numSteps = 0;
};

/// Equal sub-steps from t0 to tEnd no longer than timestep; ParameterError when tEnd <= t0 or
/// timestep is not positive and finite.
StepPlan planSteps(double t0, double tEnd, double timestep);

/// How forces are obtained each step.
/// ForceOptions::rebuildEvery's default (`--rebuild-every auto`): the pipelined step where the run supports
/// it, else the classic step (resolvedRebuildEvery).
constexpr int64_t kRebuildAutomatic = -1;

/// ForceOptions::rebuildLag's default (`--rebuild-lag auto`): a lag chosen by the number of bodies
/// (resolvedRebuildLag).
constexpr int64_t kRebuildLagAutomatic = 0;

/// The fewest bodies whose automatic lag is 1. A lag of 1 adopts in every step a topology predicted for that
/// step: it walks as many interactions as a fresh tree, against 1.19 / 1.71 times the node / leaf interactions
/// at 2^22 for a lag of 2, whose topologies each serve two steps. It needs the host's build (on the GPU from
/// keys sorted on the device) to fit in one device step, and adopts a topology every step. From 2^18 bodies on
/// the interactions it saves (at 2^18, 5-6% of the node and 7-8% of the leaf interactions) outweigh the
/// adoptions; below, they do not. Whole steps of lag 1 against lag 2 on an H200 with 16 host cores, theta 0.5
/// (benchmarks/results/whole_step/lag_small_n): 2.60-2.64 against 2.70-2.72 ms at 2^18, 2.68 against 2.59 ms
/// at 2^17, 1.60 against 1.55 ms at 2^16; 7.81 / 7.79 ms at 2^20, 30.0 / 32.8 ms at 2^22 and 108.5 / 188.7 ms
/// at 2^24 (benchmarks/results/whole_step/lag_h200). Lag 1 waits for the host whenever its build does not fit
/// under one device step, so it is the more sensitive to a busy host.
constexpr int64_t kLagOneBodies = int64_t(1) << 18;

struct ForceOptions
{
    /// Exact direct summation (double, O(N^2)) instead of the tree.
    bool direct = false;
    /// Subtract the mass-weighted mean acceleration after each force evaluation, so the total
    /// momentum is conserved to round-off. Off by default: a tree's forces are not pairwise
    /// symmetric, and the resulting centre-of-mass drift is an honest measure of its error.
    bool zeroNetForce = false;
    /// Steps between host tree builds (`--rebuild-every`): 1 is the classic step, a fresh host tree every
    /// step; K >= 2 the pipelined step of host/sim/pipeline.h with a topology adopted every K steps and
    /// refitted in between; 0 the same with continuous background builds (one adopted every rebuildLag
    /// steps). The pipelined step needs a tree run, isolated or under TreePM (not tree + Ewald, direct,
    /// zero_net_force or the relative MAC: ParameterError). kRebuildAutomatic (the default) is the fastest
    /// step the run supports, resolved by the Simulation (resolvedRebuildEvery).
    int64_t rebuildEvery = kRebuildAutomatic;
    /// Steps between the positions a background build is made from and the step that adopts it
    /// (`--rebuild-lag`, rebuildEvery != 1 only): 1 to rebuildEvery (any >= 1 for 0). Each build has that many
    /// device steps to finish in before the step that adopts it waits for it; an older topology walks more
    /// interactions (host/sim/pipeline.h).
    int64_t rebuildLag = kRebuildLagAutomatic;
};

/// Whether the pipelined step supports a run with these parameters and options: a tree run, isolated or a
/// periodic (also comoving) box under TreePM with its mesh where the state is (pipelineMeshBesideState); not tree +
/// Ewald, direct summation, zero_net_force or the relative MAC.
bool pipelineSupports(const Parameters& p, const ForceOptions& forces, bool comoving);

/// The rebuild policy a run takes: forces.rebuildEvery as given, or for kRebuildAutomatic the pipelined
/// step with continuous builds (0) where pipelineSupports, else the classic step (1). The same on every
/// backend, so that the CPU twin of a GPU run takes the same step.
int64_t resolvedRebuildEvery(const Parameters& p, const ForceOptions& forces, bool comoving);

/// The lag a run of n bodies takes: forces.rebuildLag as given, or for kRebuildLagAutomatic 1 from
/// kLagOneBodies bodies on and kRebuildLag below.
int64_t resolvedRebuildLag(const ForceOptions& forces, int64_t n);

/// The pass over all bodies that follows each tree evaluation of a state kept in tree order (Simulation's
/// classic step), over plain arrays so that a benchmark can time it without an evaluation. Body k of the new
/// tree order is body order[k] of the old one: what the bodies carry is gathered into the new order, the
/// results are converted (G applied) and checked, and the closing half-kick v += halfKick a applied; with
/// nextPos, also the next step's opening half-kick and drift, so that no further pass over the state is
/// needed before the next evaluation. Each is the same sequence of double operations as in separate passes.
struct TreeOrderPass
{
    int64_t n            = 0;
    const int32_t* order = nullptr;
    /// The evaluation's results in the new order (acc xyz, potential; float, G = 1) and G.
    const F4* out = nullptr;
    double G      = 1;
    /// Positions in the new order (the sort's copy), read by the finiteness check and the drift.
    const Vec3d* pos = nullptr;
    /// Gathered from the old order into the new one (vel and callerIndex required, the others when not null).
    const Vec3d* vel           = nullptr;
    Vec3d* velOut              = nullptr;
    const int32_t* callerIndex = nullptr;
    int32_t* callerIndexOut    = nullptr;
    const uint64_t* id         = nullptr;
    uint64_t* idOut            = nullptr;
    const Vec3d* momentum      = nullptr;
    Vec3d* momentumOut         = nullptr;
    /// When not null: G times the results, stored in the new order.
    Vec3d* acc  = nullptr;
    double* pot = nullptr;
    /// Whether to apply the closing half-kick v += halfKick a (then positions and velocities are checked).
    bool kick       = false;
    double halfKick = 0;
    /// When not null (with kick): velOut gets the next opening half-kick as well, and nextPos the drifted
    /// positions x + h v wrapped into the periodic box of size box (box > 0; 0: isolated).
    Vec3d* nextPos = nullptr;
    double h = 0, box = 0;
    /// Not 0 (with kick, momentum and momentumOut; a comoving run): the closing half-kick goes to the canonical
    /// momenta instead, p += halfKick a, and velOut gets velocityOfMomentum p (the peculiar velocity p / a);
    /// vel is not read.
    double velocityOfMomentum = 0;
};

/// What treeOrderPass found: a result times G that is not finite, a kicked body (position or velocity) that
/// is not finite, a drifted position that fails positionInRange.
struct TreeOrderFlags
{
    bool resultNotFinite = false, bodyNotFinite = false, nextOutOfRange = false;
};

/// Runs the pass p (see TreeOrderPass) on all threads; the outputs do not depend on the thread count.
TreeOrderFlags treeOrderPass(const TreeOrderPass& p);

/// The opening half of a step on pos and vel (n bodies, in the order of the results out): v += (h / 2) G out,
/// then x += h v, wrapped into the periodic box of size box when box > 0. Returns whether a position fails
/// positionInRange. (Simulation's step when the last pass did not drift already.)
bool kickAndDriftPass(Vec3d* pos, Vec3d* vel, const F4* out, double G, int64_t n, double h, double box);

/// Largest velocity component accepted at setup (N-body units), as large as the coordinate limit
/// (kMaxCoordinate): a faster body would leave it within a step of ordinary size.
constexpr double kMaxVelocity = 1e15;

class Simulation
{
public:
    /// Validates the bodies (InputError naming the body: a velocity not finite or beyond kMaxVelocity;
    /// the solver checks positions and masses) and computes the initial forces.
    Simulation(ParticleSet initial, const Parameters& p, StepPlan plan, ForceOptions forces = {});

    /// A comoving run from a = settings.aBegin (initial.time is not used) in the periodic box of
    /// p.box_size. Before any force evaluation: ParameterError for bad settings (validate), a box size
    /// that is not > 0, G not that of GADGET units, or the step criterion without softening; InputError
    /// naming the body outside [0, box_size)^3, or, in GADGET units, when the bodies' mass is not the
    /// box's matter density Omega0 rho_crit L^3 (within 1%).
    Simulation(ParticleSet initial, const Parameters& p, const ComovingSettings& settings, ForceOptions forces = {});

    /// Restores a checkpoint (either version, host/io/checkpoint.h); the parameters are validated as
    /// for a fresh run (ParameterError); the forces are recomputed, bit-identical to the run that wrote it.
    /// extra (optional) receives the caller's text stored with writeCheckpoint.
    static Simulation fromCheckpoint(const std::string& path, std::string* extra = nullptr);
    /// The same from a checkpoint already read (findRestartCheckpoint's image) from path, which messages name.
    static Simulation fromCheckpoint(CheckpointImage image, const std::string& path, std::string* extra = nullptr);

    /// One kick-drift-kick step. In a Newtonian tree run without zero_net_force the pass after the evaluation
    /// also makes the next step's opening half-kick and drift (the state then runs half a step ahead inside;
    /// state(), diagnostics() and checkpoints see the synchronised state all the same).
    void step();
    /// Times of the last step(): its force evaluation by phase, StepPhase::ForceWall (of it
    /// StepPhase::Reorder and StepPhase::ForceOther) and StepPhase::Integration (the other step phases are
    /// the caller's, e.g. runSimulation's; zero here). When the last pass drifted ahead, the next step's opening
    /// half-kick and drift are part of this step's Reorder, and that step's Integration is about zero.
    const StepTimes& lastStepTimes() const { return lastStepTimes_; }

    bool done() const { return comoving_ ? comoving_->a >= comoving_->settings.aEnd : step_ >= plan_.numSteps; }
    int64_t stepIndex() const { return step_; }
    double time() const { return comoving_ ? comoving_->a : plan_.t0 + double(step_) * plan_.h; }
    const StepPlan& plan() const { return plan_; }
    /// The comoving part of the run: its settings, H0 in the run's units, the scale factor, the last
    /// step in ln a (0 before the first), and the Layzer-Irvine bookkeeping: K + W at a_begin and
    /// int (2K + W) d ln a so far (trapezoidal over the steps), so that K + W + integral stays at the start
    /// value (Diagnostics: K, W).
    struct Comoving
    {
        ComovingSettings settings;
        double hubble0 = 0, a = 0, lastDlna = 0;
        double layzerIrvineStart = 0, layzerIrvineIntegral = 0;
    };
    /// Set for a comoving run.
    const std::optional<Comoving>& comoving() const { return comoving_; }
    /// Whether the current a is one of the output list's scale factors (false when not comoving).
    bool atOutputTime() const { return comoving_ && isOutputTime(comoving_->settings, comoving_->a); }

    /// Moves the end of the run to tEnd with the same step; ParameterError unless tEnd - t0 is a
    /// whole number of steps (so a restarted run stays bit-identical to an uninterrupted one), and for a
    /// comoving run.
    void extendTo(double tEnd);

    /// The bodies in the caller's (the initial) order: gathered from the tree-ordered state on the
    /// first call after a step, so asking for it each step costs a reordering of all bodies.
    const ParticleSet& state() const;
    int64_t numBodies() const { return state_.size(); }
    const Parameters& parameters() const { return params_; }
    bool direct() const { return forces_.direct; }
    const ForceOptions& forceOptions() const { return forces_; }
    Diagnostics diagnostics() const;
    /// lagrange.csv's radii of the current state for lagrangeFractions(), about the centre of mass of diagnostics()
    /// (its sums' bits). A pipelined run of equal masses orders the radii where its state lives (the device's or the
    /// CPU twin's) and brings only the radii back; otherwise they are found from state().
    std::vector<double> lagrangianRadii() const;
    /// lagrangianRadii() in two halves, so that a row can be written a step later: the begin reads the current
    /// state, and a pipelined run's device sorts the radii while the next step runs; the finish returns them (each
    /// NaN when a position was NaN: the state they were found from has moved on). A begin drops the radii of an
    /// earlier begin not finished; std::logic_error for a finish without a begin.
    void beginLagrangianRadii() const;
    std::vector<double> finishLagrangianRadii() const;
    /// The last force evaluation's accelerations (G applied) in the caller's order: what the current
    /// positions (state()) were kicked with, for measuring a step's force error.
    std::vector<Vec3d> accelerations() const;
    const GravitySolver& solver() const { return solver_; }
    /// The pipelined step (rebuildEvery != 1), else null.
    const Pipeline* pipeline() const { return pipeline_.get(); }

    /// Writes a checkpoint (host/io/checkpoint.h) through an AtomicFile; an existing checkpoint
    /// becomes path + ".prev" once the new one is complete and synced.
    /// extra: the caller's own settings (e.g. output cadences), stored verbatim.
    void writeCheckpoint(const std::string& path, const std::string& extra = {}) const;

private:
    /// results (not empty: a restart's, CheckpointImage::results, caller's order) are taken as the forces of
    /// the initial state instead of an evaluation. With restoringPipeline a pipelined run's pipeline is neither
    /// started nor given results: the caller restores it (Pipeline::restore) and what follows from its forces.
    Simulation(ParticleSet&& initial, const Parameters& p, StepPlan plan, ForceOptions forces,
               std::optional<Comoving> comoving, std::vector<F4> results = {}, bool restoringPipeline = false);
    /// Whether the next evaluation takes the last one's results as the previous accelerations of the periodic
    /// error control (GravitySolver::setPreviousAccelerations): a periodic tree run with err_tol_force_acc > 0.
    bool passesPreviousAccelerations() const;
    /// The forces of the initial state from a checkpoint's results (G = 1, caller's order = the state's at
    /// setup) instead of an evaluation: the bits the interrupted run had, which an evaluation without its
    /// previous accelerations would not reproduce.
    void adoptResults(std::vector<F4>&& results);
    /// What computeForces did beyond the forces: whether it applied the closing half-kick, and whether a
    /// body it kicked has a position or velocity that is not finite (for checkFinite).
    struct ForceOutcome
    {
        bool kicked = false, kickedNotFinite = false;
    };
    /// Forces of the current state into acc_ and pot_ (after a tree evaluation the state is in its new tree
    /// order). halfKick (not null): the closing half-kick v += halfKick a, fused into the pass that reorders
    /// the state when there is one and no net force is to be removed first.
    ForceOutcome computeForces(const double* halfKick = nullptr);
    void removeNetForce();
    /// The force phases of the step in lastStepTimes_: the solver's, the wall time of computeForces (wall)
    /// and what of it no phase names.
    void recordForceTimes(double wall);
    /// InputError naming the body (smallest caller's index) whose position or velocity is not finite
    /// after a step; bad = whether there is one.
    void checkFinite(bool bad) const;
    /// One pass over the bodies after a tree evaluation (treeOrderPass): G times its results (out, tree order)
    /// into acc_ and pot_ when they are stored (else results_ = out), the state (and the momenta of a comoving
    /// run) permuted into the new tree order (positions and masses taken from the solver's tree-order copies),
    /// and the closing half-kick when halfKick is given; with it and results_, the next step's opening
    /// half-kick and drift too (ahead_). Returns whether a kicked body is not finite. The results are checked
    /// before the state is replaced.
    bool reorder(const F4* out, const double* halfKick);
    /// Prefetches what diagnosticSums reads of slot k.
    void prefetchSlot(int32_t k) const;
    /// The sums behind diagnostics() of the current state, computed once per step (diagnosticSums_).
    const DiagnosticSums& diagnosticSums() const;
    /// state() of a pipelined run: the masses, ids and types gathered once, the positions and velocities from the
    /// pipeline.
    const ParticleSet& pipelineState() const;
    /// Slot in state_ of every caller's index (the inverse of callerIndex_), rebuilt when stale.
    const std::vector<int32_t>& slots() const;
    /// The velocity of slot k at the current time: state_.vel[k], or while the state runs ahead (ahead_) the
    /// closing half-kick recomputed from the old order's velocity (the bits the pass computed on the way).
    Vec3d velocityAt(int64_t k) const;
    /// The id of slot k.
    uint64_t idAt(int64_t k) const { return idsByCaller_ ? state_.id[callerIndex_[k]] : state_.id[k]; }
    /// The state as the solver reads it (ids through the caller's index when idsByCaller_).
    BodySpan bodySpan() const;
    void comovingStep();
    /// A comoving step's scale factors and kick and drift factors (host/sim/comoving_step.cpp).
    struct ComovingFactors
    {
        double a0, a1, kick0, drift, kick1;
    };
    ComovingFactors comovingFactors() const;
    /// The softening squared at the current a (eps(a) = min(eps, eps_max_phys / a)), as an evaluation takes it.
    float comovingEpsilonSquared() const;
    void endComovingStep(double a0, double a1);
    /// Adds the step to the Layzer-Irvine integral.
    void comovingLayzerIrvine();
    /// The comoving step of a run with a pipeline: the same factors, on the pipeline's state.
    void comovingPipelineStep();
    /// The step of a run with a pipeline (host/sim/pipeline.h).
    void pipelineStep();
    /// The step limit in ln a at the current state: --dlna, or the criterion on the current forces.
    double comovingStepLimit() const;
    /// plan_ of a comoving run from its state (see the class comment).
    void updateComovingPlan(double dlna);

    /// The bodies, kept in the tree order of the last tree evaluation (a step's sort then moves little, though
    /// the gather into the new order still jumps: see treeOrderPass); callerIndex_[k] = caller's index of slot
    /// k. What never changes stays in the caller's order instead, read through callerIndex_: the types always,
    /// the ids when idsByCaller_.
    ParticleSet state_;
    std::vector<int32_t> callerIndex_;
    /// Whether the ids never decrease in the caller's order (as the models and most files number them), so
    /// that the sort's tie-break by (id, caller's index) is by the caller's index alone: the solver then reads
    /// no ids and they are not permuted. Not with a pipeline (it takes the ids in the state's order).
    bool idsByCaller_ = false;
    /// Set by a pass that drifted ahead (TreeOrderPass::nextPos): the next step's positions are in nextPos_
    /// (nextOutOfRange_: whether one fails positionInRange) and state_.vel holds the next step's velocities
    /// after its opening half-kick; the current state is state_.pos and velocityAt.
    bool ahead_          = false;
    bool nextOutOfRange_ = false;
    std::vector<Vec3d> nextPos_;
    /// state() and slots(), valid until the state is reordered or stepped.
    mutable ParticleSet callerState_;
    mutable bool callerStateValid_ = false;
    /// Whether callerState_ holds the masses, ids and types, which a pipelined run never reorders on the host:
    /// each state() then brings the positions and velocities only.
    mutable bool callerConstantsValid_ = false;
    mutable std::vector<int32_t> slotOf_;
    mutable bool slotsValid_ = false;
    /// Whether the drift has checked the positions as validateBodies would (then the solver does not).
    bool positionsChecked_ = false;
    /// Working memory of reorder(), kept between steps; while ahead_, scratchVec_ holds the velocities
    /// before the closing half-kick in the old order (velocityAt reads them).
    std::vector<Vec3d> scratchVec_;
    std::vector<uint64_t> scratchId_;
    std::vector<int32_t> scratchIndex_;
    std::vector<Vec3d> scratchMomentum_;
    Parameters params_;
    StepPlan plan_;
    ForceOptions forces_;
    int64_t step_         = 0;
    double initialEnergy_ = 0;
    GravitySolver solver_;
    /// Accelerations and potentials (G applied) in the state's order, stored only when results_ is null.
    std::vector<Vec3d> acc_;
    std::vector<double> pot_;
    /// The last tree evaluation's results (tree order = the state's, G = 1, float) when acc_ is not stored
    /// (Newtonian tree forces without zero_net_force): the drift and the diagnostics take G times them, the
    /// bits acc_ and pot_ would hold.
    /// The solver keeps them until its next evaluation (its buffers move with it).
    const F4* results_ = nullptr;
    /// The last tree evaluation's results in the state's order (G = 1): the solver's, or after a restart
    /// restoredResults_; valid until the next evaluation, which takes them as its previous accelerations when
    /// passesPreviousAccelerations().
    const F4* lastResults_ = nullptr;
    std::vector<F4> restoredResults_;
    StepTimes lastStepTimes_;
    std::optional<Comoving> comoving_;
    /// Canonical momenta p = a^2 dx/dt of a comoving run (the integrated state; state_.vel = p / a).
    std::vector<Vec3d> momentum_;
    /// The pipelined step's state and policy when forces_.rebuildEvery != 1: the state lives there, and
    /// state_'s positions and velocities are stale (state() and diagnostics() read the pipeline).
    std::unique_ptr<Pipeline> pipeline_;
    /// 2K + W at the current a (comoving runs), the Layzer-Irvine integrand.
    double layzerIrvineRate_ = 0;
    /// The diagnostics' sums of the state at step diagnosticsStep_ (-1: none, set wherever the state starts to
    /// change, so that a step that fails half-way leaves none). A comoving step, its energy.csv row and an
    /// isolated run's energy bound each ask for the sums of one state: one pass over the bodies serves them
    /// all (at 2^24 bodies a pass in the caller's order takes about 0.06 s on 16 cores).
    mutable DiagnosticSums diagnosticSums_;
    mutable int64_t diagnosticsStep_ = -1;
    /// Whether all masses are equal, and then equalMassRanks of lagrangeFractions(): masses never change in a run.
    mutable std::optional<bool> equalMasses_;
    mutable std::vector<int64_t> lagrangeRanks_;
    /// Whether the pipeline orders the radii (equal masses; lagrangeRanks_ then set).
    bool ordersRadiiOnPipeline() const;
    /// Collects radii begun on the pipeline into foundRadii_ (the pipeline is then free for others).
    void settleBegunRadii() const;
    /// The pipeline's begun radii, each NaN when a radius was.
    std::vector<double> finishedOnPipeline() const;
    /// What beginLagrangianRadii left for finishLagrangianRadii: radii found at once, or the pipeline's pending.
    enum class BegunRadii
    {
        None,
        Found,
        OnPipeline
    };
    mutable BegunRadii begunRadii_ = BegunRadii::None;
    mutable std::vector<double> foundRadii_;
};

/// A comoving run's clock, then its settings, as "name=value" lines (reals exact): the checkpoint's comoving field
/// (host/io/checkpoint.h).
std::string comovingCheckpointText(const Simulation::Comoving& c);
/// The clock and settings of a checkpoint's comoving field; FormatError naming the line it cannot read.
Simulation::Comoving comovingFromCheckpointText(const std::string& text);

} // namespace octwalk
