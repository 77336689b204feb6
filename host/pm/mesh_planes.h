#pragma once
/// @file mesh_planes.h
/// The passes of a particle mesh over its x planes, shared by the mesh of one process (host/pm/pm_mesh.h) and
/// the mesh cut into slabs over ranks (host/mpi/distributed_mesh.h): bodies sorted by the first x plane of their
/// cloud, their masses gathered plane by plane, the fields interpolated back, and the potential's terms that
/// belong to no pair.
///
/// A mesh of one process holds all n planes and its clouds wrap around x; a rank's slab holds its own planes
/// and, after them, the width - 1 planes its clouds reach beyond its last one (the next ranks' first planes),
/// so its clouds never wrap. The y and z axes are whole and wrap in both.
///
/// Each plane is written by one thread from the bodies in a fixed order (no atomics), so every sum has one
/// order whatever the thread count.

#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/pm.h"
#include "common/treepm.h"
#include "common/vec.h"
#include "host/core/parallel.h"

namespace octwalk {

/// Bodies sorted by the first x plane of their cloud (stable: index order within a plane), with their positions
/// and masses in that order, so that the passes over them read memory in sequence.
struct PmPlaneOrder
{
    std::vector<int32_t> plane; ///< by body index: the first x plane of its cloud, counted from the slab's first
    std::vector<int64_t> body;  ///< body indices in plane order
    std::vector<int64_t> start; ///< bodies of plane s: body[start[s] .. start[s + 1])
    std::vector<Vec3d> pos;
    std::vector<double> mass;
};

/// The mesh's geometry as the passes need it: n cells per side of L, the cloud's width, and the slab's planes.
struct PmPlanes
{
    int64_t meshSize;      ///< n
    double cellsPerLength; ///< n / L
    int width;             ///< 2 (CIC) or 3 (TSC)
    int64_t firstPlane;    ///< the slab's first plane on the whole mesh
    int64_t ownPlanes;     ///< planes whose clouds start in the slab: n for a whole mesh
    bool wraps;            ///< a whole mesh: clouds wrap around x; otherwise width - 1 planes follow the own ones

    /// Planes held: the own ones, plus those the clouds reach past the last one in a slab.
    int64_t heldPlanes() const { return wraps ? ownPlanes : ownPlanes + width - 1; }
};

/// Fills order with the n bodies, all of whose clouds must start in the slab's own planes. A stable counting sort
/// in fixed blocks of bodies: the permutation is the same for any thread count.
void pmSortByPlane(const PmPlanes& planes, const Vec3d* pos, const double* mass, int64_t n, PmPlaneOrder& order);

/// The bodies' masses on the held planes of mesh (heldPlanes() x n x n, x major). Each plane gathers from the
/// bodies whose clouds reach it, in plane order and index order within a plane.
template<int Width>
void pmAssignMass(const PmPlanes& planes, const PmPlaneOrder& order, double* mesh)
{
    const int64_t n = planes.meshSize, own = planes.ownPlanes, held = planes.heldPlanes();
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t s = 0; s < held; ++s)
    {
        double* plane = mesh + s * n * n;
        std::fill(plane, plane + n * n, 0.0);
        // A body whose cloud starts at plane s - k covers plane s with its k-th x weight.
        for (int k = 0; k < Width; ++k)
        {
            int64_t first = s - k;
            if (planes.wraps) first = (first % own + own) % own;
            else if (first < 0 || first >= own) continue;
            for (int64_t q = order.start[first]; q < order.start[first + 1]; ++q)
            {
                const PmStencil<Width> st =
                    pmStencilOf<Width>(order.pos[q].x, order.pos[q].y, order.pos[q].z, planes.cellsPerLength, n);
                const double mx = order.mass[q] * st.x.weight[k];
                for (int a = 0; a < Width; ++a)
                {
                    double* row     = plane + st.y.cell[a] * n;
                    const double my = mx * st.y.weight[a];
                    for (int c = 0; c < Width; ++c) row[st.z.cell[c]] += my * st.z.weight[c];
                }
            }
        }
    }
}

/// One field of the mesh (a mesh of doubles) interpolated to every body of order from the held planes of mesh,
/// out(body, sum) called once a body with its sum. In plane order: neighbouring bodies read neighbouring planes.
template<int Width, class Out>
void pmInterpolate(const PmPlanes& planes, const PmPlaneOrder& order, const double* mesh, Out&& out)
{
    const int64_t n = planes.meshSize, numBodies = int64_t(order.body.size());
#pragma omp parallel for schedule(static)
    for (int64_t q = 0; q < numBodies; ++q)
    {
        const PmStencil<Width> st =
            pmStencilOf<Width>(order.pos[q].x, order.pos[q].y, order.pos[q].z, planes.cellsPerLength, n);
        double sum = 0.0;
        for (int a = 0; a < Width; ++a)
        {
            const int64_t x = planes.wraps ? st.x.cell[a] : st.x.cell[0] - planes.firstPlane + a;
            for (int b = 0; b < Width; ++b)
            {
                const double* row = mesh + (x * n + st.y.cell[b]) * n;
                const double wxy  = st.x.weight[a] * st.y.weight[b];
                for (int c = 0; c < Width; ++c) sum += wxy * st.z.weight[c] * row[st.z.cell[c]];
            }
        }
        out(order.body[q], sum);
    }
}

/// Adds the two terms of the potential that belong to no pair (common/treepm.h) to the n bodies' pot: each body's
/// own short-range term and the background's, proportional to totalMass, the whole box's mass.
inline void pmAddNonPairTerms(double G, double splitScale, double boxSize, const double* mass, int64_t n,
                              double totalMass, std::vector<double>& pot)
{
    const double background = G * totalMass * shortRangeBackgroundPotential(splitScale, boxSize);
    const double self       = G * shortRangeSelfPotential(splitScale);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) pot[i] += background + self * mass[i];
}

} // namespace octwalk
