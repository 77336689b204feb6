#include "host/pm/aligned_plans.h"

#include <fftw3.h>

#include "common/errors.h"

namespace octwalk {

AlignedPlans::AlignedPlans(Make make, std::string what) : make_(std::move(make)), what_(std::move(what)) {}

AlignedPlans::~AlignedPlans()
{
    for (const Plan& p : plans_) fftw_destroy_plan(static_cast<fftw_plan>(p.plan));
}

// fftw_alignment_of is small: bytes modulo the SIMD alignment.
int AlignedPlans::alignmentKey(const void* in, const void* out)
{
    return fftw_alignment_of(static_cast<double*>(const_cast<void*>(in))) * 1024 +
           fftw_alignment_of(static_cast<double*>(const_cast<void*>(out)));
}

void AlignedPlans::prepare(void* in, void* out)
{
    const int key = alignmentKey(in, out);
    for (const Plan& p : plans_)
    {
        if (p.alignment == key) return;
    }
    void* plan = make_(in, out);
    if (!plan) throw BackendError("FFTW could not plan " + what_);
    plans_.push_back({key, plan});
}

void* AlignedPlans::planFor(const void* in, const void* out) const
{
    const int key = alignmentKey(in, out);
    for (const Plan& p : plans_)
    {
        if (p.alignment == key) return p.plan;
    }
    throw BackendError("no FFTW plan of " + what_ + " for these arrays' alignment");
}

// FFTW_ESTIMATE neither measures nor touches the arrays: the same plan, and result, on every run.
AlignedPlans::Make planeForwardPlan(int n)
{
    return [n](void* in, void* out) -> void* {
        return fftw_plan_dft_r2c_2d(n, n, static_cast<double*>(in), static_cast<fftw_complex*>(out), FFTW_ESTIMATE);
    };
}

AlignedPlans::Make planeBackwardPlan(int n)
{
    return [n](void* in, void* out) -> void* {
        return fftw_plan_dft_c2r_2d(n, n, static_cast<fftw_complex*>(in), static_cast<double*>(out), FFTW_ESTIMATE);
    };
}

} // namespace octwalk
