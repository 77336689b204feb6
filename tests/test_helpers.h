#pragma once
// Small shared helpers of the CPU test suites.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "common/integrate.h"
#include "host/models/models.h"
#include "host/solver/solver.h"

namespace octwalk::test {

/// Version 8's hash of one piece (host/io/checkpoint.h): FNV-1a's step over 64-bit words, each followed by
/// h ^= h >> 29, a last partial word padded with zero bytes; written here from the format's description.
inline uint64_t checkpointPieceHash(const unsigned char* bytes, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i += 8)
    {
        uint64_t w = 0;
        for (size_t k = 0; k < 8 && i + k < n; ++k) w |= uint64_t(bytes[i + k]) << (8 * k);
        h = (h ^ w) * 1099511628211ull;
        h ^= h >> 29;
    }
    return h;
}

/// The checkpoint's checksum of bytes (a whole file but its last 8 bytes), so that a test can build an older
/// version's file or damage one field and still pass the checksum: version 8's (pieces of 2^20 bytes, their
/// hashes and the byte count hashed again), or FNV-1a byte by byte for the versions before it. Little-endian hosts.
inline uint64_t checkpointChecksum(const unsigned char* bytes, size_t n)
{
    const std::string v8 = "OCTWALK-CKPT-v8";
    if (n >= v8.size() && std::string(reinterpret_cast<const char*>(bytes), v8.size()) == v8)
    {
        constexpr size_t kPiece = size_t(1) << 20;
        std::vector<uint64_t> words;
        for (size_t i = 0; i < n; i += kPiece) words.push_back(checkpointPieceHash(bytes + i, std::min(kPiece, n - i)));
        words.push_back(uint64_t(n));
        return checkpointPieceHash(reinterpret_cast<const unsigned char*>(words.data()), words.size() * 8);
    }
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; ++i) h = (h ^ bytes[i]) * 1099511628211ull;
    return h;
}

inline uint64_t checkpointChecksum(const std::string& bytes)
{
    return checkpointChecksum(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
}

/// Lagrangian radii by their definition about a given centre and total mass m: (radius, mass) pairs sorted, the
/// masses added in that order, the radius where the sum first reaches each fraction of m.
inline std::vector<double> radiiByDefinition(const ParticleSet& p, const std::vector<double>& fractions,
                                             const Vec3d& centre, double m)
{
    std::vector<std::pair<double, double>> rm;
    for (int64_t i = 0; i < p.size(); ++i) rm.emplace_back(radiusAbout(p.pos[i], centre), p.mass[i]);
    std::sort(rm.begin(), rm.end());
    std::vector<double> radii(fractions.size(), rm.empty() ? 0.0 : rm.back().first);
    double cumulative = 0;
    size_t next       = 0;
    for (const auto& [r, mi] : rm)
    {
        cumulative += mi;
        while (next < fractions.size() && cumulative >= fractions[next] * m) radii[next++] = r;
    }
    return radii;
}

/// Sets the OpenMP thread count (nothing in the serial suite) and returns the previous one.
inline int setThreads(int n)
{
#ifdef _OPENMP
    const int previous = omp_get_max_threads();
    omp_set_num_threads(n);
    return previous;
#else
    return n;
#endif
}

inline Parameters cpuParameters(double theta = 0.5, double eps2 = 0.0)
{
    Parameters p;
    p.opening_angle   = theta;
    p.epsilon_squared = eps2;
    p.backend         = Backend::Cpu;
    return p;
}

struct Forces
{
    std::vector<Vec3d> acc;
    std::vector<double> pot;
};

/// A solver that has evaluated the bodies' forces once, its packed tree ready to read; the forces into forces
/// when given.
inline GravitySolver evaluatedSolver(const Parameters& p, const ParticleSet& b, Forces* forces = nullptr)
{
    GravitySolver s(p);
    s.setBodies(b.pos, b.mass, b.id);
    Forces f;
    s.computeForces(f.acc, f.pot);
    if (forces) *forces = std::move(f);
    return s;
}

inline Forces treeForces(const ParticleSet& b, const Parameters& p)
{
    Forces f;
    evaluatedSolver(p, b, &f);
    return f;
}

} // namespace octwalk::test
