#pragma once
/// @file fft_grid.h
/// A periodic n^3 grid of doubles and its half spectrum, transformed by FFTW3's real-to-complex and
/// complex-to-real 3-D transforms (double precision, FFTW_ESTIMATE plans made once per grid, serial:
/// the transforms' results then depend on nothing but the input, whatever OpenMP does around them).
///
/// Layout: real(i, j, l) = real()[(i n + j) n + l]; the spectrum holds integer wavenumbers
/// (ki, kj, kl) with ki, kj in (-n/2, n/2] stored at ki mod n, and kl in [0, n/2] stored at kl:
/// spectrum()[(i n + j) (n/2 + 1) + l]. forward() computes sum_x f(x) e^{-i k.x} (no 1/n^3),
/// backward() sum_k F(k) e^{+i k.x} over the whole (Hermitian) spectrum, and destroys the spectrum.

#include <complex>
#include <cstddef>
#include <cstdint>

namespace octwalk {

class FftGrid
{
public:
    /// BackendError naming n and the bytes when the arrays cannot be allocated; ParameterError for n < 2.
    explicit FftGrid(int n);
    ~FftGrid();
    FftGrid(const FftGrid&)            = delete;
    FftGrid& operator=(const FftGrid&) = delete;

    int n() const { return n_; }
    int64_t realSize() const { return int64_t(n_) * n_ * n_; }
    int64_t spectrumSize() const { return int64_t(n_) * n_ * (n_ / 2 + 1); }
    double* real() { return real_; }
    std::complex<double>* spectrum() { return spectrum_; }

    /// The signed wavenumber of storage index i along a full axis: i for i <= n/2, else i - n.
    int wavenumber(int i) const { return i <= n_ / 2 ? i : i - n_; }

    void forward();
    void backward();

private:
    int n_;
    double* real_                   = nullptr;
    std::complex<double>* spectrum_ = nullptr;
    void* forwardPlan_              = nullptr;
    void* backwardPlan_             = nullptr;
};

} // namespace octwalk
