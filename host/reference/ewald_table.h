#pragma once
/// @file ewald_table.h
/// The Ewald correction table that common/ewald.h interpolates, computed once per process in double
/// from the exact sum (ewald_direct.h) and stored in float.

#include <vector>

#include "common/ewald.h"

namespace octwalk {

/// The table for L = 1: (kEwaldTableCells + 1)^3 points over [0, 1/2]^3 (layout: PeriodicView::table),
/// computed on first use (in parallel over the points; a few seconds on two cores) and kept.
const std::vector<F4>& ewaldTable();

/// The view of a periodic box of side boxSize on the host table; boxSize 0 gives the isolated view
/// (no table).
PeriodicView periodicView(double boxSize);

} // namespace octwalk
