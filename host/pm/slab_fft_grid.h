#pragma once
/// @file slab_fft_grid.h
/// A periodic n^3 grid of doubles and its half spectrum with the layout and conventions of FftGrid
/// (host/models/fft_grid.h), transformed in parallel: the 3-D transform is a 2-D transform of every x
/// slab followed by 1-D transforms along x of every y row, copied into a contiguous buffer. In place the n
/// pieces of a row lie n (n/2 + 1) complex numbers apart, at n = 256 129 x 4 KiB, which puts them all in the
/// same cache sets: FFTW's own 3-D plan takes 30 times as long at 256^3 as at 128^3 for 8 times the work, this
/// grid 7.5 times.
/// Each is a serial FFTW_ESTIMATE plan executed by whichever OpenMP thread takes the slab or row, so each
/// slab and row is transformed by the same arithmetic whatever the thread count and the result is
/// bit-identical for any number of threads (FFTW's own threaded plans do not promise that: their planner
/// splits the work by the thread count).

#include <complex>
#include <cstdint>
#include <vector>

#include "host/pm/aligned_plans.h"

namespace octwalk {

class SlabFftGrid
{
public:
    /// ParameterError for n < 2; BackendError naming n and the bytes when the arrays cannot be allocated
    /// or FFTW cannot plan. Not thread-safe (the FFTW planner): make grids outside parallel regions.
    explicit SlabFftGrid(int n);
    ~SlabFftGrid();
    SlabFftGrid(const SlabFftGrid&)            = delete;
    SlabFftGrid& operator=(const SlabFftGrid&) = delete;

    int n() const { return n_; }
    int64_t realSize() const { return int64_t(n_) * n_ * n_; }
    int64_t spectrumSize() const { return int64_t(n_) * n_ * (n_ / 2 + 1); }
    double* real() { return real_; }
    const double* real() const { return real_; }
    std::complex<double>* spectrum() { return spectrum_; }

    /// The signed wavenumber of storage index i along a full axis: i for i <= n/2, else i - n.
    int wavenumber(int i) const { return i <= n_ / 2 ? i : i - n_; }

    /// spectrum = sum_x real(x) e^{-i k.x} (no 1/n^3); real is kept.
    void forward();
    /// real = sum_k spectrum(k) e^{+i k.x} over the whole Hermitian spectrum; destroys the spectrum.
    void backward();

private:
    struct RowBuffer;

    void planSlabs();
    void planRows();
    void transformSlabs(bool forward);
    /// The 1-D transforms along x of every y row (FFTW_FORWARD or FFTW_BACKWARD through the row plan).
    void transformRows(void* rowPlan);
    void releasePlans();

    int n_;
    double* real_                   = nullptr;
    std::complex<double>* spectrum_ = nullptr;
    /// Serial plans of one slab.
    AlignedPlans slabForward_, slabBackward_;
    /// The n/2 + 1 transforms of length n of one row in a contiguous buffer (x major): every buffer comes
    /// from fftw_malloc, so one alignment.
    void* rowForward_  = nullptr;
    void* rowBackward_ = nullptr;
};

} // namespace octwalk
