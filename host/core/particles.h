#pragma once
/// @file particles.h
/// A set of particles in the caller's order, in double (N-body units unless stated otherwise).

#include <cstdint>
#include <vector>

#include "common/vec.h"

namespace octwalk {

struct ParticleSet
{
    std::vector<Vec3d> pos, vel;
    std::vector<double> mass;
    std::vector<uint64_t> id;
    double time = 0.0;

    int64_t size() const { return int64_t(pos.size()); }
    void resize(int64_t n)
    {
        pos.resize(n);
        vel.resize(n);
        mass.resize(n);
        id.resize(n);
    }
};

/// Moves the centre of mass to the origin and removes its velocity.
void centreOnMass(ParticleSet& p);

} // namespace octwalk
