// The CPU backend of libg6 (twin: device/g6_gpu.cu).
#include "host/cpu/g6_cpu.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <string>

#include "common/errors.h"
#include "host/core/number_text.h"

namespace octwalk {

namespace {

/// Pair interactions below which a loop runs on one thread: a Hermite block step often holds a handful
/// of bodies, and waking the thread team for it costs more than the work (the results are the same
/// either way: each i-particle is summed by one thread in a fixed order).
constexpr int64_t kMinParallelWork = 65536;

} // namespace

void G6Cpu::reserve(int count)
{
    if (count <= int(j_.size())) return;
    // j_ last: its size is the capacity, so an allocation that fails leaves a consistent smaller one.
    xp_.resize(3 * size_t(count));
    vp_.resize(3 * size_t(count));
    j_.resize(size_t(count), G6JParticle{});
}

void G6Cpu::setJParticle(int address, const G6JParticle& p)
{
    j_[size_t(address)] = p;
    predictedStale_     = true;
}

void G6Cpu::setTime(double ti) { ti_ = ti; }

void G6Cpu::predict(int nj)
{
    if (!predictedStale_ && predictedTime_ == ti_ && nj <= predictedCount_) return;
#pragma omp parallel for schedule(static) if (nj >= kMinParallelWork / 16)
    for (int a = 0; a < nj; ++a)
    {
        const G6JParticle& p = j_[size_t(a)];
        double dt            = ti_ - p.t;
        for (int k = 0; k < 3; ++k)
            predictCoordinate(dt, p.x[k], p.v[k], p.a2[k], p.j6[k], p.k18[k], xp_[3 * size_t(a) + k],
                              vp_[3 * size_t(a) + k]);
    }
    predictedCount_ = nj;
    predictedTime_  = ti_;
    predictedStale_ = false;
    firstOverflow_  = -1;
    for (int a = 0; a < nj && firstOverflow_ < 0; ++a)
    {
        for (size_t k = 3 * size_t(a); k < 3 * size_t(a) + 3; ++k)
            if (!std::isfinite(xp_[k]) || !std::isfinite(vp_[k])) firstOverflow_ = a;
    }
}

void G6Cpu::checkPrediction(int nj) const
{
    if (firstOverflow_ < 0 || firstOverflow_ >= nj) return;
    const G6JParticle& p = j_[size_t(firstOverflow_)];
    const size_t k       = 3 * size_t(firstOverflow_);
    throw InputError("j-particle " + std::to_string(p.index) + " (address " + std::to_string(firstOverflow_) +
                     ") predicted from tj = " + significantDigits(p.t, 6) + " to ti = " + significantDigits(ti_, 6) +
                     " is not finite (x = " + significantDigits(xp_[k], 6) + ", " + significantDigits(xp_[k + 1], 6) +
                     ", " + significantDigits(xp_[k + 2], 6) + "): its Taylor terms overflow double over dt = ti - tj");
}

void G6Cpu::startForces(const G6IBlock& block)
{
    predict(block.nj);
    checkPrediction(block.nj);
    const int ni = block.ni;
    nj_          = block.nj;
    eps2_        = block.eps2;
    iIndex_.clear();
    ix_.clear();
    iv_.clear();
    ih2_.clear();
    if (ni > 0)
    {
        iIndex_.assign(block.index, block.index + ni);
        ix_.assign(&block.x[0][0], &block.x[0][0] + 3 * size_t(ni));
        iv_.assign(&block.v[0][0], &block.v[0][0] + 3 * size_t(ni));
        ih2_.assign(block.h2, block.h2 + ni);
    }
    sums_.assign(size_t(ni), HermiteSums<double>{});
    nearest_.assign(size_t(ni), -1);
#pragma omp parallel for schedule(dynamic, 1) if (int64_t(ni) * nj_ >= kMinParallelWork)
    for (int i = 0; i < ni; ++i)
    {
        HermiteSums<double> s;
        const double* xi = &ix_[3 * size_t(i)];
        const double* vi = &iv_[3 * size_t(i)];
        double best      = 0;
        int nearest      = -1;
        for (int a = 0; a < nj_; ++a)
        {
            const G6JParticle& p = j_[size_t(a)];
            bool self            = p.index == iIndex_[size_t(i)];
            double d2            = hermiteInteraction<double>(xi, vi, &xp_[3 * size_t(a)], &vp_[3 * size_t(a)],
                                                   self ? 0.0 : p.mass, eps2_, s);
            if (!self && (nearest < 0 || d2 < best))
            {
                best    = d2;
                nearest = p.index;
            }
        }
        sums_[size_t(i)]    = s;
        nearest_[size_t(i)] = nearest;
    }
}

void G6Cpu::finishForces(const G6Outputs& out) const
{
    for (size_t i = 0; i < sums_.size(); ++i)
    {
        const HermiteSums<double>& s = sums_[i];
        out.acc[i][0]                = s.ax;
        out.acc[i][1]                = s.ay;
        out.acc[i][2]                = s.az;
        out.jerk[i][0]               = s.jx;
        out.jerk[i][1]               = s.jy;
        out.jerk[i][2]               = s.jz;
        out.pot[i]                   = s.pot;
        if (out.nearest) out.nearest[i] = nearest_[i];
    }
}

void G6Cpu::neighbourLists(std::vector<int64_t>& offset, std::vector<int32_t>& list) const
{
    const int ni = int(iIndex_.size());
    std::vector<std::vector<int32_t>> perI(static_cast<size_t>(ni));
#pragma omp parallel for schedule(dynamic, 1) if (int64_t(ni) * nj_ >= kMinParallelWork)
    for (int i = 0; i < ni; ++i)
    {
        const double* xi = &ix_[3 * size_t(i)];
        for (int a = 0; a < nj_; ++a)
        {
            int32_t index = j_[size_t(a)].index;
            if (index != iIndex_[size_t(i)] && distance2NoFma(&xp_[3 * size_t(a)], xi) < ih2_[size_t(i)])
                perI[size_t(i)].push_back(index);
        }
    }
    offset.assign(size_t(ni) + 1, 0);
    for (int i = 0; i < ni; ++i) offset[size_t(i) + 1] = offset[size_t(i)] + int64_t(perI[size_t(i)].size());
    list.clear();
    list.reserve(size_t(offset.back()));
    for (const auto& l : perI) list.insert(list.end(), l.begin(), l.end());
}

} // namespace octwalk
