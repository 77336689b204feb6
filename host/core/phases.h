#pragma once
/// @file phases.h
/// Rendering of the phase timings (common/phases.h) for every output: JSON objects, CSV columns,
/// text tables and medians over repeated evaluations. Every command and benchmark uses these, so
/// a phase added to kPhases appears everywhere with its one name.

#include <string>
#include <vector>

#include "common/phases.h"

namespace octwalk {

/// `"host_seconds": {"sort": .., ..., "total": ..}, "walk_seconds": {..., "total": ..}` (no braces
/// around the pair), 9 significant digits.
std::string phasesJson(const PhaseTimes& t);

/// CSV column names of phasesCsv: every phase, then host_seconds and walk_seconds.
std::string phasesCsvHeader();
/// The values under phasesCsvHeader(), comma-separated, 9 significant digits.
std::string phasesCsv(const PhaseTimes& t);

/// Two lines, "host [s]: sort .. total .. (.. M bodies/s)" and the same for the walk.
std::string phasesText(const PhaseTimes& t, long long numBodies);

/// Column titles for phasesTableRow, each `width` wide.
std::string phasesTableHeader(int width);
/// Every phase in milliseconds, each `width` wide.
std::string phasesTableRow(const PhaseTimes& t, int width);

/// Per phase, the median over the evaluations (the mean of the two middle ones for an even count).
PhaseTimes medianPhases(const std::vector<PhaseTimes>& times);

/// The phases of whole simulation steps (StepTimes): every kPhases name, then every kStepPhases name.

/// CSV column names of stepTimesCsv (no step column: the caller adds its own).
std::string stepTimesCsvHeader();
/// The values under stepTimesCsvHeader(), comma-separated, 9 significant digits.
std::string stepTimesCsv(const StepTimes& t);
/// One flat JSON object, `{"sort": .., ..., "download": .., "force_wall": .., ..., "step_wall": ..}`.
std::string stepTimesJson(const StepTimes& t);
/// One line, "sort 0.12 cells ... step-wall 15.3 ms" (every phase in milliseconds).
std::string stepTimesText(const StepTimes& t);
/// The step phases alone (kStepPhases, no force phases): CSV column names, values, and a JSON object
/// `{"force_wall": .., ..., "step_wall": ..}`.
std::string stepPhasesCsvHeader();
std::string stepPhasesCsv(const StepTimes& t);
std::string stepPhasesJson(const StepTimes& t);
/// Column titles of the step phases (kStepPhases only), each `width` wide.
std::string stepPhasesTableHeader(int width);
/// The step phases (kStepPhases only) in milliseconds, each `width` wide.
std::string stepPhasesTableRow(const StepTimes& t, int width);
/// Per phase (both lists), the median over the steps.
StepTimes medianStepTimes(const std::vector<StepTimes>& times);

/// Sets the spans of the phases of group g, which ran back to back from `begin` (steadyClockSeconds())
/// in kPhases order, from their durations in t (the laps of one Stopwatch, so each starts where the
/// previous one ended).
/// @param[in,out] t      durations in, spans of group g out
/// @param[in]     g      the group whose phases ran in sequence
/// @param[in]     begin  the start of the first of them, on steadyClockSeconds()'s clock
void chainSpans(PhaseTimes& t, PhaseGroup g, double begin);

/// The earliest start and the latest end of the phases that have spans; empty when none has.
struct SpanExtent
{
    double begin = 0, end = 0;
    bool empty() const { return end <= 0; }
};
SpanExtent spanExtent(const PhaseSpans& spans);

/// Copies the spans of group g's phases from `from` into `to`.
void copySpans(PhaseSpans& to, const PhaseSpans& from, PhaseGroup g);

/// Median of a set of values (the mean of the two middle ones for an even count; 0 when empty).
double median(std::vector<double> values);

} // namespace octwalk
