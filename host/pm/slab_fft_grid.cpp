#include "host/pm/slab_fft_grid.h"

#include <fftw3.h>

#include <cstring>
#include <string>

#include "common/errors.h"
#include "host/core/parallel.h"

namespace octwalk {

namespace {

fftw_complex* asFftw(std::complex<double>* c) { return reinterpret_cast<fftw_complex*>(c); }

} // namespace

/// One row of the spectrum, n x (n/2 + 1) complex numbers, x major, from fftw_malloc.
struct SlabFftGrid::RowBuffer
{
    fftw_complex* data;

    explicit RowBuffer(int n)
        : data(static_cast<fftw_complex*>(fftw_malloc(sizeof(fftw_complex) * size_t(n) * size_t(n / 2 + 1))))
    {
        if (!data)
            throw BackendError("out of host memory for a row buffer of an FFT grid of " + std::to_string(n) + "^3");
    }
    ~RowBuffer() { fftw_free(data); }
    RowBuffer(RowBuffer&& other) noexcept : data(other.data) { other.data = nullptr; }
    RowBuffer(const RowBuffer&)            = delete;
    RowBuffer& operator=(const RowBuffer&) = delete;
    RowBuffer& operator=(RowBuffer&&)      = delete;
};

SlabFftGrid::SlabFftGrid(int n)
    : n_(n), slabForward_(planeForwardPlan(n), "the " + std::to_string(n) + "^2 slabs of an FFT grid"),
      slabBackward_(planeBackwardPlan(n), "the " + std::to_string(n) + "^2 slabs of an FFT grid")
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
    try
    {
        planSlabs();
        planRows();
    }
    catch (...)
    {
        releasePlans();
        fftw_free(real_);
        fftw_free(spectrum_);
        throw;
    }
}

SlabFftGrid::~SlabFftGrid()
{
    releasePlans();
    fftw_free(real_);
    fftw_free(spectrum_);
}

void SlabFftGrid::releasePlans()
{
    for (void** p : {&rowForward_, &rowBackward_})
    {
        if (*p) fftw_destroy_plan(static_cast<fftw_plan>(*p));
        *p = nullptr;
    }
}

// FFTW_ESTIMATE neither measures nor touches the arrays: the same plan, and result, on every run.
void SlabFftGrid::planSlabs()
{
    const int64_t realSlab = int64_t(n_) * n_, spectrumSlab = int64_t(n_) * (n_ / 2 + 1);
    for (int64_t i = 0; i < n_; ++i)
    {
        double* r = real_ + i * realSlab;
        void* c   = spectrum_ + i * spectrumSlab;
        slabForward_.prepare(r, c);
        slabBackward_.prepare(c, r);
    }
}

void SlabFftGrid::planRows()
{
    const int half = n_ / 2 + 1;
    int length[1]  = {n_};
    RowBuffer buffer(n_);
    fftw_complex* row = buffer.data;
    // Column l of the buffer is the transform over x: stride n/2 + 1, adjacent columns one apart.
    rowForward_ =
        fftw_plan_many_dft(1, length, half, row, nullptr, half, 1, row, nullptr, half, 1, FFTW_FORWARD, FFTW_ESTIMATE);
    rowBackward_ =
        fftw_plan_many_dft(1, length, half, row, nullptr, half, 1, row, nullptr, half, 1, FFTW_BACKWARD, FFTW_ESTIMATE);
    if (!rowForward_ || !rowBackward_)
        throw BackendError("FFTW could not plan the x rows of an " + std::to_string(n_) + "^3 FFT grid");
}

void SlabFftGrid::forward()
{
    transformSlabs(true);
    transformRows(rowForward_);
}

void SlabFftGrid::backward()
{
    transformRows(rowBackward_);
    transformSlabs(false);
}

void SlabFftGrid::transformSlabs(bool forward)
{
    const int64_t realSlab = int64_t(n_) * n_, spectrumSlab = int64_t(n_) * (n_ / 2 + 1);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n_; ++i)
    {
        double* r       = real_ + i * realSlab;
        fftw_complex* c = asFftw(spectrum_ + i * spectrumSlab);
        if (forward) fftw_execute_dft_r2c(static_cast<fftw_plan>(slabForward_.planFor(r, c)), r, c);
        else fftw_execute_dft_c2r(static_cast<fftw_plan>(slabBackward_.planFor(c, r)), c, r);
    }
}

void SlabFftGrid::transformRows(void* rowPlan)
{
    const int64_t half = n_ / 2 + 1, slab = int64_t(n_) * half;
    const size_t rowBytes = sizeof(fftw_complex) * size_t(half);
    std::vector<RowBuffer> buffers;
    for (int t = 0; t < maxThreads(); ++t) buffers.emplace_back(n_);
#pragma omp parallel for schedule(static)
    for (int64_t j = 0; j < n_; ++j)
    {
        fftw_complex* buffer = buffers[size_t(threadIndex())].data;
        for (int64_t i = 0; i < n_; ++i) std::memcpy(buffer + i * half, spectrum_ + i * slab + j * half, rowBytes);
        fftw_execute_dft(static_cast<fftw_plan>(rowPlan), buffer, buffer);
        for (int64_t i = 0; i < n_; ++i)
            std::memcpy(static_cast<void*>(spectrum_ + i * slab + j * half), buffer + i * half, rowBytes);
    }
}

} // namespace octwalk
