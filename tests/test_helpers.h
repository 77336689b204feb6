#pragma once
// Small shared helpers of the CPU test suites.

#include <vector>

#include "host/models/models.h"
#include "host/solver/solver.h"

namespace octwalk::test {

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

inline Forces treeForces(const ParticleSet& b, const Parameters& p)
{
    GravitySolver s(p);
    s.setBodies(b.pos, b.mass, b.id);
    Forces f;
    s.computeForces(f.acc, f.pot);
    return f;
}

} // namespace octwalk::test
