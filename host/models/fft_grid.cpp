#include "host/models/fft_grid.h"

#include <fftw3.h>

#include <string>

#include "common/errors.h"

namespace octwalk {

FftGrid::FftGrid(int n) : n_(n)
{
    if (n < 2) throw ParameterError("FFT grid size n = " + std::to_string(n) + " is invalid: must be >= 2");
    real_     = static_cast<double*>(fftw_malloc(sizeof(double) * size_t(realSize())));
    spectrum_ = reinterpret_cast<std::complex<double>*>(fftw_malloc(sizeof(fftw_complex) * size_t(spectrumSize())));
    if (!real_ || !spectrum_)
    {
        fftw_free(real_);
        fftw_free(spectrum_);
        throw BackendError("out of host memory for an FFT grid of " + std::to_string(n) + "^3 (" +
                           std::to_string((realSize() * 8 + spectrumSize() * 16) >> 20) + " MiB)");
    }
    // FFTW_ESTIMATE neither measures nor touches the arrays, so the plan (and the result) is the same
    // on every run. The FFTW planner is not thread-safe: grids are made outside parallel regions.
    auto* c       = reinterpret_cast<fftw_complex*>(spectrum_);
    forwardPlan_  = fftw_plan_dft_r2c_3d(n, n, n, real_, c, FFTW_ESTIMATE);
    backwardPlan_ = fftw_plan_dft_c2r_3d(n, n, n, c, real_, FFTW_ESTIMATE);
    if (!forwardPlan_ || !backwardPlan_)
    {
        this->~FftGrid();
        throw BackendError("FFTW could not plan a " + std::to_string(n) + "^3 transform");
    }
}

FftGrid::~FftGrid()
{
    if (forwardPlan_) fftw_destroy_plan(static_cast<fftw_plan>(forwardPlan_));
    if (backwardPlan_) fftw_destroy_plan(static_cast<fftw_plan>(backwardPlan_));
    fftw_free(real_);
    fftw_free(spectrum_);
    forwardPlan_ = backwardPlan_ = nullptr;
    real_                        = nullptr;
    spectrum_                    = nullptr;
}

void FftGrid::forward() { fftw_execute(static_cast<fftw_plan>(forwardPlan_)); }

void FftGrid::backward() { fftw_execute(static_cast<fftw_plan>(backwardPlan_)); }

} // namespace octwalk
