#include "host/pm/mesh_planes.h"

namespace octwalk {

void pmSortByPlane(const PmPlanes& planes, const Vec3d* pos, const double* mass, int64_t n, PmPlaneOrder& order)
{
    const int64_t own = planes.ownPlanes, meshSize = planes.meshSize, first = planes.firstPlane;
    const double cellsPerLength = planes.cellsPerLength;
    const bool tsc              = planes.width == 3;
    order.plane.resize(size_t(n));
    order.body.resize(size_t(n));
    order.start.resize(size_t(own + 1));
    order.pos.resize(size_t(n));
    order.mass.resize(size_t(n));
    std::vector<int32_t>& plane = order.plane;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i)
    {
        const int64_t cell = tsc ? pmAxisStencil<3>(pos[i].x, cellsPerLength, meshSize).cell[0]
                                 : pmAxisStencil<2>(pos[i].x, cellsPerLength, meshSize).cell[0];
        plane[i]           = int32_t(cell - first);
    }
    const int64_t numBlocks = std::clamp<int64_t>(n / 65536, 1, 64);
    std::vector<int64_t> count(size_t(numBlocks * own), 0);
#pragma omp parallel for schedule(static, 1)
    for (int64_t b = 0; b < numBlocks; ++b)
    {
        const Chunk c = chunkOf(n, int(b), int(numBlocks));
        for (int64_t i = c.begin; i < c.end; ++i) ++count[b * own + plane[i]];
    }
    // count becomes each block's first place in each plane: planes in order, blocks in order within a plane.
    int64_t next = 0;
    for (int64_t s = 0; s < own; ++s)
    {
        order.start[s] = next;
        for (int64_t b = 0; b < numBlocks; ++b)
        {
            const int64_t c    = count[b * own + s];
            count[b * own + s] = next;
            next += c;
        }
    }
    order.start[own] = next;
#pragma omp parallel for schedule(static, 1)
    for (int64_t b = 0; b < numBlocks; ++b)
    {
        const Chunk c = chunkOf(n, int(b), int(numBlocks));
        for (int64_t i = c.begin; i < c.end; ++i) order.body[count[b * own + plane[i]]++] = i;
    }
#pragma omp parallel for schedule(static)
    for (int64_t q = 0; q < n; ++q)
    {
        order.pos[q]  = pos[order.body[q]];
        order.mass[q] = mass[order.body[q]];
    }
}

} // namespace octwalk
