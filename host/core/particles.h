#pragma once
/// @file particles.h
/// A set of particles in the caller's order, in double (N-body units unless stated otherwise).

#include <cstdint>
#include <optional>
#include <vector>

#include "common/vec.h"
#include "host/core/cosmology.h"

namespace octwalk {

struct ParticleSet
{
    std::vector<Vec3d> pos, vel;
    std::vector<double> mass;
    std::vector<uint64_t> id;
    /// GADGET particle type of each body: 0 gas, 1 halo (dark matter), 2 disk, 3 bulge, 4 stars,
    /// 5 boundary. Models and readers that know no types use 1.
    std::vector<uint8_t> type;
    /// Time, or the scale factor a when `cosmology` is set.
    double time = 0.0;
    /// > 0: the set lives in the periodic cube [0, boxSize)^3 (GADGET's BoxSize). 0: isolated.
    double boxSize = 0.0;
    /// Set for a cosmological set: positions are comoving, `time` is a, and `vel` holds peculiar
    /// velocities a dx/dt (files in GADGET's convention store vel / sqrt(a); readers and writers convert).
    std::optional<Cosmology> cosmology;

    int64_t size() const { return int64_t(pos.size()); }
    void resize(int64_t n)
    {
        pos.resize(n);
        vel.resize(n);
        mass.resize(n);
        id.resize(n);
        type.resize(n, uint8_t(1));
    }
};

/// Moves the centre of mass to the origin and removes its velocity.
void centreOnMass(ParticleSet& p);

} // namespace octwalk
