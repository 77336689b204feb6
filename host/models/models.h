#pragma once
/// @file models.h
/// Built-in equilibrium models, deterministic by seed, total mass 1, G = 1.

#include <cstdint>
#include <string>

#include "host/core/particles.h"

namespace octwalk {

/// Plummer sphere by the Aarseth, Henon & Wielen (1974) recipe in Henon (virial) units:
/// M = 1, E = -1/4, scale length 3 pi / 16. Radii beyond the 99.9% mass radius are redrawn.
ParticleSet makePlummer(int64_t n, uint64_t seed);

/// Hernquist (1990) sphere, M = 1, scale length a = 1, isotropic velocities drawn from its
/// distribution function by rejection; radii beyond the 99% mass radius (r ~ 198 a) are redrawn.
ParticleSet makeHernquist(int64_t n, uint64_t seed);

/// Uniform cold sphere of radius 1 (zero velocities), for cold-collapse runs.
ParticleSet makeUniformSphere(int64_t n, uint64_t seed);

/// n bodies of mass 1/n drawn uniformly in the periodic box [0, L)^3 (boxSize L, zero velocities): the uniform box
/// of docs/periodic.md's accuracy tables.
ParticleSet makeUniformBox(int64_t n, double L, uint64_t seed);

/// n bodies of mass 1/n in the periodic box [0, L)^3: four Plummer spheres (makePlummer(n, seed), body i in sphere
/// i mod 4), positions scaled by L/40 (scale radius 3 pi L / 640, about L/68), centred at (0.3, 0.3, 0.3),
/// (0.7, 0.4, 0.6), (0.02, 0.8, 0.5) and (0.5, 0.98, 0.1) L, the last two across a face, wrapped into the box
/// (boxSize L, the spheres' velocities): the clustered box of docs/periodic.md's accuracy tables.
ParticleSet makeClusteredBox(int64_t n, double L, uint64_t seed);

/// Builds a model by name ("plummer", "hernquist", "uniform", "galaxy", "merger" with default
/// settings, see galaxy.h); ParameterError for other names or n < 2.
ParticleSet makeModel(const std::string& name, int64_t n, uint64_t seed);

} // namespace octwalk
