// Determinism: bit-identical results whatever the thread count, on repeats, and for any input order.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "common/errors.h"
#include "host/core/random.h"
#include "test_helpers.h"

using namespace octwalk;

namespace {

bool bitIdentical(const test::Forces& a, const test::Forces& b)
{
    return a.acc.size() == b.acc.size() && std::memcmp(a.acc.data(), b.acc.data(), a.acc.size() * sizeof(Vec3d)) == 0 &&
           std::memcmp(a.pot.data(), b.pot.data(), a.pot.size() * sizeof(double)) == 0;
}

} // namespace

TEST(Determinism, RepeatedRunsAreBitIdentical)
{
    ParticleSet b = makePlummer(30000, 4);
    Parameters p  = test::cpuParameters(0.6, 1e-4);
    EXPECT_TRUE(bitIdentical(test::treeForces(b, p), test::treeForces(b, p)));
}

TEST(Determinism, AttachedBodiesGiveTheSameForcesAsCopiedOnes)
{
    ParticleSet b = makePlummer(20000, 9);
    Parameters p  = test::cpuParameters(0.5, 1e-4);
    GravitySolver solver(p);
    solver.attachBodies(b.pos.data(), b.mass.data(), b.id.data(), b.size());
    test::Forces attached;
    solver.computeForces(attached.acc, attached.pot);
    EXPECT_TRUE(bitIdentical(attached, test::treeForces(b, p)));

    b.pos[123].y = std::nan("");
    EXPECT_THROW(solver.attachBodies(b.pos.data(), b.mass.data(), b.id.data(), b.size()), InputError);
    EXPECT_THROW(solver.attachBodies(b.pos.data(), b.mass.data(), nullptr, b.size()), InputError);
}

#ifdef _OPENMP
TEST(Determinism, OneAndTwoThreadsAreBitIdentical)
{
    ParticleSet b = makeHernquist(30000, 4);
    Parameters p  = test::cpuParameters(0.5, 1e-4);
    int saved     = omp_get_max_threads();
    omp_set_num_threads(1);
    test::Forces one = test::treeForces(b, p);
    omp_set_num_threads(2);
    test::Forces two = test::treeForces(b, p);
    omp_set_num_threads(saved);
    EXPECT_TRUE(bitIdentical(one, two));
}
#endif

TEST(Determinism, ResultsPerIdDoNotDependOnInputOrder)
{
    ParticleSet b         = makePlummer(20000, 6);
    Parameters p          = test::cpuParameters(0.5, 1e-4);
    test::Forces original = test::treeForces(b, p);

    std::vector<int64_t> perm(b.size());
    for (int64_t i = 0; i < b.size(); ++i) perm[i] = i;
    Random rng(99);
    for (int64_t i = b.size() - 1; i > 0; --i) std::swap(perm[i], perm[rng.below(uint64_t(i + 1))]);
    ParticleSet shuffled;
    shuffled.resize(b.size());
    for (int64_t i = 0; i < b.size(); ++i)
    {
        shuffled.pos[i]  = b.pos[perm[i]];
        shuffled.mass[i] = b.mass[perm[i]];
        shuffled.id[i]   = b.id[perm[i]];
    }
    test::Forces permuted = test::treeForces(shuffled, p);
    double worst          = 0;
    for (int64_t i = 0; i < b.size(); ++i)
    {
        Vec3d d = permuted.acc[i] - original.acc[perm[i]];
        worst   = std::max(worst, std::sqrt(dot(d, d) / dot(original.acc[perm[i]], original.acc[perm[i]])));
    }
    EXPECT_LE(worst, 1e-6);
}
