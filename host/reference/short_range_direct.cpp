#include "host/reference/short_range_direct.h"

#include <cmath>
#include <string>

#include "common/errors.h"
#include "common/treepm.h"
#include "host/reference/minimum_image.h"

namespace octwalk {

namespace {

void requirePositive(const char* name, double value)
{
    if (!(std::isfinite(value) && value > 0))
        throw ParameterError(std::string("short-range sum: ") + name + " = " + std::to_string(value) +
                             " is invalid: must be finite and > 0");
}

void checkSplit(const ShortRangeSplit& s, double eps2)
{
    requirePositive("box size L", s.boxSize);
    requirePositive("split scale r_s", s.splitScale);
    requirePositive("cutoff", s.cutoff);
    if (!(std::isfinite(eps2) && eps2 >= 0))
        throw ParameterError("short-range sum: eps2 = " + std::to_string(eps2) +
                             " is invalid: must be finite and >= 0");
}

/// The images n of an offset component c that can lie within the cutoff: [lo, hi].
void imageRange(double c, const ShortRangeSplit& s, int& lo, int& hi)
{
    lo = int(std::ceil((-s.cutoff - c) / s.boxSize));
    hi = int(std::floor((s.cutoff - c) / s.boxSize));
}

/// Adds the short-range pull of a unit mass at every image of the offset d (source - target, nearest
/// image) within the cutoff; the image d itself is softened, and left out when the source is the target.
void addImages(Vec3d d, const ShortRangeSplit& s, double eps2, bool sourceIsTarget, Vec3d& acc, double& pot)
{
    int lo[3], hi[3];
    imageRange(d.x, s, lo[0], hi[0]);
    imageRange(d.y, s, lo[1], hi[1]);
    imageRange(d.z, s, lo[2], hi[2]);
    const double cutoff2 = s.cutoff * s.cutoff;
    for (int nx = lo[0]; nx <= hi[0]; ++nx)
    {
        for (int ny = lo[1]; ny <= hi[1]; ++ny)
        {
            for (int nz = lo[2]; nz <= hi[2]; ++nz)
            {
                const bool nearest = nx == 0 && ny == 0 && nz == 0;
                if (nearest && sourceIsTarget) continue;
                const Vec3d r{d.x + nx * s.boxSize, d.y + ny * s.boxSize, d.z + nz * s.boxSize};
                const double r2 = dot(r, r);
                if (r2 >= cutoff2) continue;
                const double soft2 = r2 + (nearest ? eps2 : 0.0);
                if (soft2 == 0) continue; // coincident unsoftened bodies: no force, as in bodyBody
                const double inv = 1.0 / std::sqrt(soft2);
                const LongRangePair<double> l =
                    longRangePair(r2, r2 > 0 ? 1.0 / std::sqrt(r2) : 0.0, 0.5 / s.splitScale);
                acc += (inv * inv * inv - l.acc) * r;
                pot -= inv - l.pot;
            }
        }
    }
}

} // namespace

void shortRangeDirectSum(const Vec3d* pos, const double* mass, int64_t n, const std::vector<int64_t>& targets,
                         const ShortRangeSplit& split, double eps2, double G, std::vector<Vec3d>& acc,
                         std::vector<double>& pot)
{
    checkSplit(split, eps2);
    const double L           = split.boxSize;
    const int64_t numTargets = int64_t(targets.size());
    acc.resize(numTargets);
    pot.resize(numTargets);
#pragma omp parallel for schedule(dynamic, 8)
    for (int64_t t = 0; t < numTargets; ++t)
    {
        const int64_t i = targets[t];
        Vec3d a{0, 0, 0};
        double p = 0;
        for (int64_t j = 0; j < n; ++j)
        {
            const Vec3d d{minimumImage(pos[j].x - pos[i].x, L), minimumImage(pos[j].y - pos[i].y, L),
                          minimumImage(pos[j].z - pos[i].z, L)};
            Vec3d aj{0, 0, 0};
            double pj = 0;
            addImages(d, split, eps2, j == i, aj, pj);
            a += mass[j] * aj;
            p += mass[j] * pj;
        }
        acc[t] = G * a;
        pot[t] = G * p;
    }
}

} // namespace octwalk
