#pragma once
/// @file params.h
/// The one home of the force-solver parameters, with their defaults and units (N-body units, G = 1
/// unless gravitational_constant says otherwise). Names follow AMUSE where it has one.

#include <string>

#include "common/mac.h"

namespace octwalk {

enum class Backend
{
    Auto, ///< GPU when one is present, else CPU
    Cpu,  ///< the CPU twin (OpenMP)
    Gpu,  ///< CUDA; BackendError when no GPU is present
};

struct Parameters
{
    /// theta: a node of size l is accepted when its distance exceeds l / theta (+ delta for Bonsai). (0, 1]
    /// (with theta <= 1 the Bonsai MAC never accepts a node whose box holds a body of the group)
    double opening_angle = 0.5;
    /// Plummer softening length squared, [length^2]. >= 0
    double epsilon_squared = 0.0;
    /// G in the units of positions, masses and velocities. > 0
    double gravitational_constant = 1.0;
    /// A cell with more bodies than this is split (unless at the maximum depth). >= 1
    int n_leaf = 16;
    /// Bodies walked together: the highest cells with at most this many bodies. >= 1
    int n_group = 64;
    /// Merge neighbouring groups (consecutive along the Morton curve) while together they hold at
    /// most n_group bodies: fewer, fuller groups (shorter lists, fuller GPU warps) for slightly
    /// larger group boxes. Off: groups are exactly the highest cells with at most n_group bodies.
    bool merge_groups = false;
    /// Multipole acceptance criterion; Bonsai by default (see common/mac.h for why).
    Mac mac = Mac::Bonsai;
    /// Use the quadrupole moments (false: monopole only, for accuracy studies).
    bool use_quadrupole = true;
    Backend backend = Backend::Auto;
};

/// Throws ParameterError naming the first parameter out of range and its value.
void validate(const Parameters& p);

std::string toString(Mac mac);
std::string toString(Backend backend);
/// Parse "octgrav"/"bonsai" and "auto"/"cpu"/"gpu"; ParameterError on anything else.
Mac parseMac(const std::string& name);
Backend parseBackend(const std::string& name);

/// The parameters as one JSON object (for run.json, benchmark and study outputs).
std::string toJson(const Parameters& p);

} // namespace octwalk
