#pragma once
/// @file split_errors.h
/// TreePM's force split checked pair by pair: the pull of one body on another in a periodic box against the
/// Ewald sum, as a function of their distance r in units of the split scale r_s, where the short range (the
/// tree) and the long range (the mesh) meet (docs/periodic.md; benchmarks/treepm_accuracy.cpp "pairs").

#include <cstdint>
#include <vector>

#include "host/core/params.h"

namespace octwalk {

/// One tracer's distance from the body, in units of r_s, and the relative error of its acceleration.
struct PairError
{
    double r;
    double error;
};

/// One body of unit mass at a random place in the box [0, box_size)^3 and tracers of mass 1e-9 at distances
/// uniform in log r from r_s / 16 to box_size / 2, in random directions: the tracers' TreePM accelerations
/// (with p's mesh and split; theta as given, 0.3 leaves the tree's own error far below the split's) against the
/// Ewald sum of the body alone. ParameterError unless p is TreePM in a periodic box.
std::vector<PairError> treePmPairErrors(const Parameters& p, int64_t tracers, uint64_t seed);

} // namespace octwalk
