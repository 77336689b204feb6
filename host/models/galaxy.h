#pragma once
/// @file galaxy.h
/// A Milky-Way-like disk galaxy (Hernquist bulge, exponential disk, Hernquist dark halo with the
/// Octgrav paper's mass ratio bulge:disk:halo = 1:1:4) and a two-galaxy merger set-up.
///
/// Units: G = 1, galaxy mass 1, disk scale length 1. Velocities follow the Jeans-equation
/// (moment) approach of Hernquist (1993): the bulge and halo get isotropic Gaussian velocities
/// with the dispersion from the spherical isotropic Jeans equation in the total (spherically
/// averaged) mass profile; the disk gets its circular speed from the tree accelerations of the
/// sampled model itself, the vertical dispersion of an isothermal sheet (pi G Sigma z0), a radial
/// dispersion proportional to exp(-R / 2 R_d) normalised to Toomre Q at R = 2.43 R_d, the
/// epicyclic azimuthal dispersion and the asymmetric-drift mean rotation.

#include <cstdint>

#include "host/core/particles.h"

namespace octwalk {

struct GalaxyModel
{
    double bulgeFraction = 1.0 / 6.0, diskFraction = 1.0 / 6.0; ///< the halo has the rest (4/6)
    double bulgeScale = 0.2;                                    ///< Hernquist a of the bulge [R_d]
    double haloScale  = 4.0;                                    ///< Hernquist a of the halo [R_d]
    double diskHeight = 0.1;                                    ///< sech^2 scale height z0 [R_d]
    double diskCutoff = 10.0;                                   ///< disk radius cut-off [R_d]
    double haloCutoff = 30.0;                                   ///< bulge and halo radius cut-off [R_d]
    double toomreQ    = 1.5;                                    ///< at R = 2.43 R_d
    double softening  = 0.02;                                   ///< used to measure the disk's circular speed [R_d]
};

/// The GADGET types of the galaxy's components (GADGET's customary halo 1, disk 2, bulge 3), so that a
/// reader such as yt or pynbody selects a component by type.
constexpr uint8_t kHaloType = 1, kDiskType = 2, kBulgeType = 3;

/// Bodies are ordered bulge, disk, halo, each in proportion to its mass (equal-mass particles), with
/// types kBulgeType, kDiskType and kHaloType; ids 0..n-1. Deterministic by seed.
ParticleSet makeGalaxy(int64_t n, uint64_t seed, const GalaxyModel& model = GalaxyModel{});

struct MergerOrbit
{
    double massRatio   = 1.0;  ///< mass of the second galaxy over the first, (0, 1]
    double pericentre  = 2.0;  ///< of the parabolic Kepler orbit of the two centres [R_d]
    double separation  = 30.0; ///< initial distance of the centres [R_d]
    double inclination = 60.0; ///< tilt of the second disk about the x axis [degrees]
};

/// Two galaxies on a parabolic orbit in the x-y plane, centre of mass at rest at the origin.
/// The second galaxy has mass ratio q, lengths scaled by q^(1/3) and n q / (1 + q) bodies. Each body
/// keeps its galaxy's component type.
ParticleSet makeMerger(int64_t n, uint64_t seed, const MergerOrbit& orbit = MergerOrbit{},
                       const GalaxyModel& model = GalaxyModel{});

} // namespace octwalk
