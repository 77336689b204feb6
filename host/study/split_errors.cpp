#include "host/study/split_errors.h"

#include <cmath>

#include "common/errors.h"
#include "common/integrate.h"
#include "host/core/random.h"
#include "host/reference/ewald_direct.h"
#include "host/solver/solver.h"

namespace octwalk {

std::vector<PairError> treePmPairErrors(const Parameters& p, int64_t tracers, uint64_t seed)
{
    if (!(p.box_size > 0 && p.pm_grid > 0))
    {
        throw ParameterError("treePmPairErrors: box_size = " + std::to_string(p.box_size) +
                             " and pm_grid = " + std::to_string(p.pm_grid) + " are not a TreePM box");
    }
    const double L = p.box_size, rs = p.asmth * L / p.pm_grid;
    Random rng(seed);
    const Vec3d source{L * rng.uniform(), L * rng.uniform(), L * rng.uniform()};
    std::vector<Vec3d> pos{source};
    std::vector<double> mass{1.0}, r{0.0};
    const double lo = std::log(rs / 16), hi = std::log(L / 2);
    for (int64_t i = 0; i < tracers; ++i)
    {
        const double d = std::exp(lo + (hi - lo) * rng.uniform());
        const double z = 2 * rng.uniform() - 1, phi = 2 * M_PI * rng.uniform(), s = std::sqrt(1 - z * z);
        const Vec3d x = source + d * Vec3d{s * std::cos(phi), s * std::sin(phi), z};
        pos.push_back(wrapPosition(x, L));
        mass.push_back(1e-9);
        r.push_back(d);
    }
    GravitySolver solver(p);
    solver.setBodies(pos, mass);
    std::vector<Vec3d> acc;
    std::vector<double> pot;
    solver.computeForces(acc, pot);
    std::vector<PairError> out;
    for (int64_t i = 1; i <= tracers; ++i)
    {
        // The reference: the body's pull alone (the tracers' own are 1e-9 of it).
        const Vec3d pair[2]    = {source, pos[size_t(i)]};
        const double masses[2] = {1.0, 0.0};
        std::vector<Vec3d> ref;
        std::vector<double> refPot;
        ewaldDirectSum(pair, masses, 2, {1}, L, p.epsilon_squared, p.gravitational_constant, ref, refPot);
        const Vec3d e = acc[size_t(i)] - ref[0];
        out.push_back({r[size_t(i)] / rs, std::sqrt(dot(e, e) / dot(ref[0], ref[0]))});
    }
    return out;
}

} // namespace octwalk
