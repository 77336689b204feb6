#pragma once
/// @file phases.h
/// The one list of timed phases of a force evaluation, host and device, named as every output
/// names them. It lives in common/ because both the host (steady clock) and the device (CUDA
/// events) record into it, and device/ depends on common/ alone. Rendering (JSON, CSV, tables,
/// medians) is in host/core/phases.h.
///
/// Adding a phase is two lines: its Phase enumerator and its kPhases row at the same position (a
/// static_assert checks the counts agree), plus the code that times it. The same holds for the phases
/// of a whole simulation step (StepPhase, kStepPhases below), which `octwalk run` (timing.csv, run.json)
/// and `octwalk profile --steps` report beside the force evaluation's.

#include <array>
#include <chrono>
#include <cstddef>
#include <iterator>

namespace octwalk {

/// Where a phase runs: the host's tree build, or the walk and forces (on the device with the GPU
/// backend, in the CPU twin otherwise; upload and download are zero there).
enum class PhaseGroup
{
    Host,
    Walk,
};

struct PhaseInfo
{
    const char* name;  ///< key in JSON and CSV outputs and in benchmark counters (with "_s")
    const char* label; ///< short label for text tables
    PhaseGroup group;
};

/// In execution order.
enum class Phase : int
{
    Sort,
    Cells,
    Multipoles,
    Groups,
    Packing,
    Upload,
    WalkCount,
    Scan,
    WalkWrite,
    BodyNode,
    BodyLeaf,
    Download,
    Count, ///< not a phase: the number of phases
};

inline constexpr PhaseInfo kPhases[] = {
    {"sort", "sort", PhaseGroup::Host},
    {"cells", "cells", PhaseGroup::Host},
    {"multipoles", "multipoles", PhaseGroup::Host},
    {"groups", "groups", PhaseGroup::Host},
    {"packing", "packing", PhaseGroup::Host},
    {"upload", "upload", PhaseGroup::Walk},
    {"walk_count", "walk-count", PhaseGroup::Walk},
    {"scan", "scan", PhaseGroup::Walk},
    {"walk_write", "walk-write", PhaseGroup::Walk},
    {"body_node", "body-node", PhaseGroup::Walk},
    {"body_leaf", "body-leaf", PhaseGroup::Walk},
    {"download", "download", PhaseGroup::Walk},
};
inline constexpr std::size_t kNumPhases = std::size(kPhases);
static_assert(static_cast<std::size_t>(Phase::Count) == kNumPhases, "one entry of kPhases per Phase");

inline constexpr const PhaseInfo& phaseInfo(Phase p) { return kPhases[static_cast<std::size_t>(p)]; }

/// Seconds on the host's steady clock since its epoch: the one clock of every phase span and of the
/// run's timeline (host/core/timeline.h). Host code only (the device maps its CUDA events onto it).
inline double steadyClockSeconds()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// Where each phase of one evaluation lay in time, on steadyClockSeconds()'s clock: the host's phases
/// as read from it, the device's from CUDA events anchored to it (device/gpu_solver.cu). A phase with
/// end == 0 has no span (not run, or a median of several evaluations).
struct PhaseSpans
{
    std::array<double, kNumPhases> begin{}, end{};

    bool has(std::size_t k) const { return end[k] > 0; }
};

/// Seconds per phase of one evaluation (or a median over several).
struct PhaseTimes
{
    std::array<double, kNumPhases> seconds{};
    /// Start and end of each phase of the last evaluation (empty in medians).
    PhaseSpans spans;

    double& operator[](Phase p) { return seconds[static_cast<std::size_t>(p)]; }
    double operator[](Phase p) const { return seconds[static_cast<std::size_t>(p)]; }

    double sum(PhaseGroup g) const
    {
        double s = 0;
        for (std::size_t k = 0; k < kNumPhases; ++k)
        {
            if (kPhases[k].group == g) s += seconds[k];
        }
        return s;
    }
    double host() const { return sum(PhaseGroup::Host); }
    double walk() const { return sum(PhaseGroup::Walk); }
    double total() const { return host() + walk(); }
    /// The device's walk and forces as the README's timings and Bonsai's figures count them: both passes, the scan,
    /// both force kernels and the download, without the upload of the host's tree (a resident run,
    /// whose state stays on the device, has none).
    double walkForces() const { return walk() - (*this)[Phase::Upload]; }
    /// Both passes of the walk.
    double walkPasses() const { return (*this)[Phase::WalkCount] + (*this)[Phase::WalkWrite]; }
    /// Both force kernels.
    double forces() const { return (*this)[Phase::BodyNode] + (*this)[Phase::BodyLeaf]; }
    /// Resets the phases of one group (a new evaluation of the walk keeps the host's build times).
    void clear(PhaseGroup g)
    {
        for (std::size_t k = 0; k < kNumPhases; ++k)
        {
            if (kPhases[k].group == g) seconds[k] = 0;
        }
    }
};

/// The phases of one whole simulation step around its force evaluation (host only), in the order
/// of the outputs' columns, after the force evaluation's own phases (kPhases).
enum class StepPhase : int
{
    ForceWall,
    Reorder,
    ForceOther,
    Integration,
    Diagnostics,
    Io,
    StepWall,
    Count, ///< not a phase: the number of step phases
};

struct StepPhaseInfo
{
    const char* name;  ///< key in JSON and CSV outputs (never a kPhases name)
    const char* label; ///< short label for text tables
    const char* help;  ///< what it measures, for the outputs' descriptions
};

inline constexpr StepPhaseInfo kStepPhases[] = {
    {"force_wall", "force-wall", "wall time of the step's force evaluation (its phases plus reordering)"},
    {"reorder", "reorder",
     "part of force_wall: results times G stored, state permuted into the new tree order, closing half-kick and "
     "finiteness check fused in, and the next step's opening half-kick and drift (Newtonian runs without "
     "zero_net_force)"},
    {"force_other", "force-other",
     "part of force_wall outside the evaluation's phases and reorder (validation, the device's launches and waits)"},
    {"integration", "integration",
     "half-kick + drift, and the closing half-kick + finiteness check, when not in reorder"},
    {"diagnostics", "diagnostics", "energy.csv and lagrange.csv rows (0 in steps that write none)"},
    {"io", "io", "snapshots and checkpoints (0 in steps that write none)"},
    {"step_wall", "step-wall", "wall time of the whole step"},
};
inline constexpr std::size_t kNumStepPhases = std::size(kStepPhases);
static_assert(static_cast<std::size_t>(StepPhase::Count) == kNumStepPhases, "one entry of kStepPhases per StepPhase");

/// Seconds of one simulation step: its force evaluation by phase and the step's own phases.
struct StepTimes
{
    PhaseTimes forces;
    std::array<double, kNumStepPhases> seconds{};

    double& operator[](StepPhase p) { return seconds[static_cast<std::size_t>(p)]; }
    double operator[](StepPhase p) const { return seconds[static_cast<std::size_t>(p)]; }
};

} // namespace octwalk
