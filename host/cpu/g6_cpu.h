#pragma once
/// @file g6_cpu.h
/// The CPU backend of libg6 (host/g6/g6lib.h) and the reference of its device twin
/// (device/g6_gpu.h): j-particles in host memory, prediction and the Hermite pair sums of
/// common/hermite.h in double, OpenMP over i-particles (each i sums its j-particles in address order,
/// so the result is bit-identical for any thread count). Arguments are checked by the C API layer.

#include <cstdint>
#include <vector>

#include "common/hermite.h"

namespace octwalk {

class G6Cpu
{
public:
    /// Makes room for addresses [0, count); the particles already set are kept.
    void reserve(int count);
    /// Stores particle p at address (address < the reserved count).
    void setJParticle(int address, const G6JParticle& p);
    /// The time the j-particles are predicted to at the next force calculation.
    void setTime(double ti);
    /// Predicts j-particles [0, block.nj) to the time of setTime and sums the forces on the block
    /// (the CPU computes at once; finishForces hands the result out). InputError naming the first
    /// j-particle whose prediction is not finite (finite data over a huge ti - tj overflows).
    void startForces(const G6IBlock& block);
    /// Writes the sums of the last startForces: acc, jerk, pot (G = 1) and, when out.nearest is
    /// set, the index of each i-particle's nearest j-particle (unsoftened distance; -1 when none).
    void finishForces(const G6Outputs& out) const;
    /// The neighbour lists of the last block: for i-particle i, the indices of the j-particles with
    /// |x_j - x_i|^2 < h2[i] (unsoftened, itself excluded), in address order, at
    /// list[offset[i] .. offset[i + 1]).
    void neighbourLists(std::vector<int64_t>& offset, std::vector<int32_t>& list) const;

private:
    void predict(int nj);
    /// InputError when a j-particle among [0, nj) was predicted to a non-finite state.
    void checkPrediction(int nj) const;

    std::vector<G6JParticle> j_;
    std::vector<double> xp_, vp_; ///< predicted positions and velocities, 3 per address
    double ti_            = 0;
    int predictedCount_   = 0; ///< addresses [0, predictedCount_) are predicted to predictedTime_
    double predictedTime_ = 0;
    bool predictedStale_  = true; ///< a particle changed since the last prediction
    int firstOverflow_    = -1;   ///< the first address whose prediction is not finite, -1 when none
    // The last block: i-particles (copied), sums and nearest neighbours.
    int nj_ = 0;
    std::vector<int> iIndex_;
    std::vector<double> ix_, iv_, ih2_;
    double eps2_ = 0;
    std::vector<HermiteSums<double>> sums_;
    std::vector<int> nearest_;
};

} // namespace octwalk
