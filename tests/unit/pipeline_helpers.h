#pragma once
// What the pipelined step's CPU tests share: rebuild policies, a pipeline's state in the caller's order, a file's
// bytes.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "host/sim/pipeline.h"
#include "host/sim/simulation.h"

namespace octwalk::test {

inline ForceOptions rebuildEvery(int64_t k, int64_t lag = kRebuildLag)
{
    ForceOptions f;
    f.rebuildEvery = k;
    f.rebuildLag   = lag;
    return f;
}

struct PipelineState
{
    std::vector<Vec3d> pos, vel;
};

inline PipelineState stateOf(Pipeline& pipe, int64_t n)
{
    PipelineState s{std::vector<Vec3d>(static_cast<size_t>(n)), std::vector<Vec3d>(static_cast<size_t>(n))};
    pipe.copyState(s.pos.data(), s.vel.data());
    return s;
}

/// Starts pipe on the bodies of b with velocities vel (b's own when null), the caller's order the identity.
inline void startInCallersOrder(Pipeline& pipe, const ParticleSet& b, const Vec3d* vel = nullptr)
{
    std::vector<int32_t> callerIndex(static_cast<size_t>(b.size()));
    for (size_t k = 0; k < callerIndex.size(); ++k) callerIndex[k] = int32_t(k);
    pipe.start(b.pos.data(), vel ? vel : b.vel.data(), b.mass.data(), b.id.data(), callerIndex.data(), b.size(), 0);
}

inline std::string slurp(const std::filesystem::path& f)
{
    std::ifstream in(f, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

} // namespace octwalk::test
