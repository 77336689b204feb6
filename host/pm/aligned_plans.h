#pragma once
/// @file aligned_plans.h
/// Serial FFTW plans of one transform for every alignment of the arrays it is executed on: FFTW executes a plan
/// only on arrays aligned as the ones it was made for, and the planes or rows of a mesh may start at several
/// alignments. Executing a plan on a given pair of arrays runs the same arithmetic on every run and on every
/// thread, so a mesh transformed plane by plane on OpenMP threads has the same bits for any thread count.

#include <functional>
#include <string>
#include <vector>

namespace octwalk {

class AlignedPlans
{
public:
    /// make(in, out) returns an FFTW plan (fftw_plan) for arrays aligned as in and out, or nullptr; what names
    /// the transform in errors.
    using Make = std::function<void*(void* in, void* out)>;
    AlignedPlans(Make make, std::string what);
    ~AlignedPlans();
    AlignedPlans(const AlignedPlans&)            = delete;
    AlignedPlans& operator=(const AlignedPlans&) = delete;

    /// Makes the plan for the alignment of (in, out) when there is none yet. Not thread-safe (FFTW's planner):
    /// call it for every pair of arrays before executing on threads. BackendError when FFTW cannot plan.
    void prepare(void* in, void* out);
    /// The plan prepared for the alignment of (in, out) (fftw_plan); BackendError when none was prepared.
    void* planFor(const void* in, const void* out) const;

private:
    struct Plan
    {
        int alignment;
        void* plan;
    };
    static int alignmentKey(const void* in, const void* out);

    Make make_;
    std::string what_;
    std::vector<Plan> plans_;
};

/// The serial 2-D transforms of one n x n plane, real to half-complex (FFTW_FORWARD) and back, for AlignedPlans.
AlignedPlans::Make planeForwardPlan(int n);
AlignedPlans::Make planeBackwardPlan(int n);

} // namespace octwalk
