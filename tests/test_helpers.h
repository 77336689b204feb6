#pragma once
// Small shared helpers of the CPU test suites.

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "host/models/models.h"
#include "host/solver/solver.h"

namespace octwalk::test {

/// The checkpoint's checksum (host/io/checkpoint.cpp: FNV-1a with its offset basis) of bytes, so that a test
/// can build an older version's file or damage one field and still pass the checksum.
inline uint64_t checkpointChecksum(const unsigned char* bytes, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; ++i) h = (h ^ bytes[i]) * 1099511628211ull;
    return h;
}

inline uint64_t checkpointChecksum(const std::string& bytes)
{
    return checkpointChecksum(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
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
