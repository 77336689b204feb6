// Bad input: a clear typed exception that names the problem, or a finite correct result.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "host/reference/direct.h"
#include "common/errors.h"
#include "test_helpers.h"

using namespace octwalk;

namespace {

/// Runs f, expects exception E whose message contains every fragment.
template<class E, class F>
void expectError(F f, std::initializer_list<const char*> fragments)
{
    try
    {
        f();
        ADD_FAILURE() << "no exception";
    }
    catch (const E& e)
    {
        for (const char* s : fragments) EXPECT_NE(std::string(e.what()).find(s), std::string::npos) << e.what();
    }
}

void setBodies(const ParticleSet& b, const Parameters& p = test::cpuParameters())
{
    GravitySolver s(p);
    s.setBodies(b.pos, b.mass, b.id);
}

bool allFinite(const test::Forces& f)
{
    for (size_t i = 0; i < f.acc.size(); ++i)
    {
        if (!std::isfinite(f.acc[i].x) || !std::isfinite(f.acc[i].y) || !std::isfinite(f.acc[i].z) ||
            !std::isfinite(f.pot[i]))
        {
            return false;
        }
    }
    return true;
}

} // namespace

TEST(Validation, TooFewBodies)
{
    ParticleSet none;
    expectError<InputError>([&] { setBodies(none); }, {"N = 0"});
    ParticleSet one = makePlummer(2, 1);
    one.resize(1);
    expectError<InputError>([&] { setBodies(one); }, {"N = 1"});
}

TEST(Validation, NonFiniteAndNegativeValuesNameTheBody)
{
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    ParticleSet b    = makePlummer(100, 1);
    b.pos[42].y      = nan;
    expectError<InputError>([&] { setBodies(b); }, {"body 42", "y"});
    b          = makePlummer(100, 1);
    b.pos[7].z = -inf;
    expectError<InputError>([&] { setBodies(b); }, {"body 7", "z"});
    b          = makePlummer(100, 1);
    b.mass[99] = inf;
    expectError<InputError>([&] { setBodies(b); }, {"body 99", "mass"});
    b         = makePlummer(100, 1);
    b.mass[3] = -1e-3;
    expectError<InputError>([&] { setBodies(b); }, {"body 3", "negative"});
}

TEST(Validation, ParametersOutOfRange)
{
    auto with = [](auto change) {
        Parameters p = test::cpuParameters();
        change(p);
        GravitySolver s(p);
    };
    expectError<ParameterError>([&] { with([](Parameters& p) { p.opening_angle = 0; }); }, {"opening_angle", "0"});
    expectError<ParameterError>([&] { with([](Parameters& p) { p.opening_angle = -0.5; }); }, {"opening_angle"});
    expectError<ParameterError>([&] { with([](Parameters& p) { p.epsilon_squared = -1; }); }, {"epsilon_squared"});
    expectError<ParameterError>([&] { with([](Parameters& p) { p.n_leaf = 0; }); }, {"n_leaf"});
    expectError<ParameterError>([&] { with([](Parameters& p) { p.n_group = 0; }); }, {"n_group"});
    expectError<ParameterError>([&] { with([](Parameters& p) { p.gravitational_constant = 0; }); },
                                {"gravitational_constant"});
    expectError<ParameterError>([] { parseMac("barnes"); }, {"barnes"});
    expectError<ParameterError>([] { parseBackend("tpu"); }, {"tpu"});
}

TEST(Validation, MismatchedArrays)
{
    GravitySolver s(test::cpuParameters());
    expectError<InputError>([&] { s.setBodies({{0, 0, 0}, {1, 0, 0}}, {1.0}); }, {"2 positions", "1 masses"});
    std::vector<Vec3d> acc;
    std::vector<double> pot;
    expectError<InputError>([&] { s.computeForces(acc, pot); }, {"setBodies"});
}

TEST(Validation, ThousandCoincidentBodiesSoftened)
{
    ParticleSet b;
    b.resize(1000);
    for (int i = 0; i < 1000; ++i)
    {
        b.pos[i]  = {1.5, -2, 0.25};
        b.mass[i] = 1e-3;
        b.id[i]   = i;
    }
    auto f = test::treeForces(b, test::cpuParameters(0.5, 0.01));
    ASSERT_TRUE(allFinite(f));
    // Each body feels 999 others at zero separation: no force, potential -999 m / eps.
    EXPECT_EQ(f.acc[500].x, 0.0);
    EXPECT_NEAR(f.pot[500] / (-999 * 1e-3 / 0.1), 1.0, 1e-4);
}

TEST(Validation, CoincidentPairsUnsoftenedGiveNoNaN)
{
    ParticleSet b = makePlummer(200, 5);
    for (int i = 0; i < 50; ++i) b.pos[i] = {0.1, 0.1, 0.1};
    auto f = test::treeForces(b, test::cpuParameters(0.5, 0.0));
    EXPECT_TRUE(allFinite(f));
}

TEST(Validation, FarOutlierIsRejectedByName)
{
    ParticleSet b = makePlummer(1000, 8);
    b.pos[123]    = {1e30, 0, 0};
    expectError<InputError>([&] { setBodies(b); }, {"body 123", "1e15"});
}

TEST(Validation, DistantButRepresentableOutlierIsCorrect)
{
    ParticleSet b = makePlummer(1000, 8);
    b.pos[123]    = {1e9, 0, 0};
    auto f        = test::treeForces(b, test::cpuParameters(0.5));
    ASSERT_TRUE(allFinite(f));
    std::vector<Vec3d> ref;
    std::vector<double> refPot;
    directSum(b.pos.data(), b.mass.data(), b.size(), {0, 123, 500}, 0.0, 1.0, ref, refPot);
    EXPECT_NEAR(f.acc[123].x / ref[1].x, 1.0, 1e-4);
    EXPECT_NEAR(f.pot[0] / refPot[0], 1.0, 1e-3);
    EXPECT_NEAR(f.pot[500] / refPot[2], 1.0, 1e-3);
}

/// Relative error of body i's tree acceleration against double-precision direct summation.
double relativeError(const ParticleSet& b, const test::Forces& f, int64_t i)
{
    std::vector<Vec3d> ref;
    std::vector<double> refPot;
    directSum(b.pos.data(), b.mass.data(), b.size(), {i}, 0.0, 1.0, ref, refPot);
    Vec3d d = f.acc[i] - ref[0];
    return std::sqrt(dot(d, d) / dot(ref[0], ref[0]));
}

// A body far from a unit Plummer cluster keeps its acceleration: m/r^3 formed before multiplying by d
// would fall into float32's denormals (36% error at 9.9e14, 1.5e-3 at 1e14).
TEST(Validation, FarBodyAmongAClusterIsAsAccurateAsTheTree)
{
    for (double x : {1e12, 1e13, 1e14, 9.9e14, -1e15})
    {
        ParticleSet b = makePlummer(1000, 8);
        b.pos[123]    = {x, 0.3 * x, 0};
        auto f        = test::treeForces(b, test::cpuParameters(0.5));
        ASSERT_TRUE(allFinite(f));
        EXPECT_LT(relativeError(b, f, 123), 1e-5) << "body at x = " << x;
        EXPECT_LT(relativeError(b, f, 500), 1e-2) << "a cluster body, with the far body at x = " << x;
    }
}

// Two bodies of mass 0.5 at 1e-13, unsoftened: the acceleration (5e25) fits float32, only an intermediate
// m/r^3 (5e38) would not; the pair is computed down to where r^2 leaves float's normal range (2^-63 ~ 1.08e-19)
// and refused closer. A pair whose acceleration m/r^2 itself overflows float32 is refused by name.
TEST(Validation, CloseUnsoftenedPairIsComputedWhileFloatHoldsTheForce)
{
    for (double r : {1e-13, 1e-15, 1e-17})
    {
        ParticleSet b;
        b.resize(2);
        b.pos  = {{0, 0, 0}, {r, 0, 0}};
        b.mass = {0.5, 0.5};
        b.id   = {0, 1};
        auto f = test::treeForces(b, test::cpuParameters(0.5));
        ASSERT_TRUE(allFinite(f)) << "r = " << r;
        EXPECT_NEAR(f.acc[0].x / (0.5 / (r * r)), 1.0, 1e-5) << "r = " << r;
        EXPECT_NEAR(f.acc[1].x / (-0.5 / (r * r)), 1.0, 1e-5) << "r = " << r;
    }
    // Down to 2^-63 ~ 1.08e-19 the pair is exact; closer, while float32 still tells the bodies apart, its r^2
    // is below float32's normal range and the kernels would drop it (zero force, W = 0): refused by name.
    for (double r : {1.2e-19, 1.1e-19})
    {
        ParticleSet b;
        b.resize(2);
        b.pos  = {{-r / 2, 0, 0}, {r / 2, 0, 0}};
        b.mass = {0.5, 0.5};
        b.id   = {0, 1};
        auto f = test::treeForces(b, test::cpuParameters(0.5));
        EXPECT_NEAR(f.acc[0].x / (0.5 / (r * r)), 1.0, 1e-6) << "r = " << r;
        EXPECT_NEAR(f.pot[0] / (-0.5 / r), 1.0, 1e-6) << "r = " << r;
    }
    for (double r : {1e-19, 5e-20, 1e-30})
    {
        ParticleSet b;
        b.resize(2);
        b.pos  = {{-r / 2, 0, 0}, {r / 2, 0, 0}};
        b.mass = {0.5, 0.5};
        b.id   = {0, 1};
        expectError<InputError>([&] { test::treeForces(b, test::cpuParameters(0.5)); },
                                {"bodies 0 and 1", "apart", "2^-63 = 1.08e-19"});
        // Softened, the pair is computed.
        EXPECT_TRUE(allFinite(test::treeForces(b, test::cpuParameters(0.5, 1e-6))));
    }
    ParticleSet b = makePlummer(200, 3);
    b.pos[3]      = {1e-18, 0, 0};
    b.pos[4]      = {0, 0, 0};
    b.mass[3] = b.mass[4] = 1e3; // 1e3 / 1e-36 = 1e39 > FLT_MAX
    expectError<InputError>([&] { test::treeForces(b, test::cpuParameters(0.5)); }, {"body 3", "not all finite"});
}

// An epsilon so large that every acceleration (~ m d / eps^3) underflows float32 is refused by name,
// instead of all-zero forces with success.
TEST(Validation, EpsilonThatUnderflowsEveryForceIsRefused)
{
    ParticleSet b = makePlummer(300, 2);
    expectError<InputError>([&] { test::treeForces(b, test::cpuParameters(0.5, 1e30)); }, {"epsilon", "underflow"});
    // Softened bodies all at one point have zero forces, rightly: no error.
    for (Vec3d& x : b.pos) x = {0.5, 0.5, 0.5};
    auto f = test::treeForces(b, test::cpuParameters(0.5, 1e30));
    EXPECT_EQ(f.acc[7].x, 0.0);
}

TEST(Validation, ZeroMassesGiveZeroForces)
{
    ParticleSet b = makePlummer(300, 2);
    for (auto& m : b.mass) m = 0;
    auto f = test::treeForces(b, test::cpuParameters());
    ASSERT_TRUE(allFinite(f));
    EXPECT_EQ(f.pot[10], 0.0);
}

// The parameter table (host/core/params.h) drives validation, JSON, the command line and checkpoints.
TEST(ParameterTable, JsonKeysFollowTheTableAndDefaultsRoundTrip)
{
    const Parameters defaults;
    std::string json = toJson(defaults);
    // Today's keys, order and spelling (a new parameter's row appends its own).
    EXPECT_EQ(json.rfind("{\"opening_angle\": 0.5, \"epsilon_squared\": 0, \"gravitational_constant\": 1, "
                         "\"n_leaf\": 16, \"n_group\": 64, \"merge_groups\": true, \"mac\": \"bonsai\", "
                         "\"use_quadrupole\": true, \"backend\": \"auto\"",
                         0),
              0u)
        << json;
    size_t at = 0;
    for (const ParameterInfo& row : parameterTable())
    {
        size_t next = json.find(std::string("\"") + row.name + "\"", at);
        EXPECT_NE(next, std::string::npos) << row.name << " missing or out of order";
        at = next;
        EXPECT_EQ(findParameter(row.name), &row);
        Parameters p;
        parameterFromText(row, p, parameterText(row, defaults));
        EXPECT_EQ(toJson(p), json) << row.name;
    }
    EXPECT_EQ(findParameter("theta"), nullptr);
}

TEST(ParameterTable, TextRoundTripsExactlyAndIsStrict)
{
    Parameters p;
    p.opening_angle          = 0.1 + 0.2; // 0.30000000000000004: needs 17 digits
    p.epsilon_squared        = 0.01 * 0.01;
    p.gravitational_constant = 4.30091e-6;
    p.n_leaf                 = 7;
    p.merge_groups           = false;
    p.mac                    = Mac::Octgrav;
    p.use_quadrupole         = false;
    p.backend                = Backend::Cpu;
    Parameters q;
    for (const ParameterInfo& row : parameterTable()) parameterFromText(row, q, parameterText(row, p));
    EXPECT_EQ(q.opening_angle, p.opening_angle);
    EXPECT_EQ(q.epsilon_squared, p.epsilon_squared);
    EXPECT_EQ(toJson(q), toJson(p));
    expectError<ParameterError>([&] { parameterFromText(*findParameter("opening_angle"), q, "0.5x"); },
                                {"opening_angle", "0.5x"});
    expectError<ParameterError>([&] { parameterFromText(*findParameter("n_leaf"), q, "16.5"); }, {"n_leaf", "16.5"});
    expectError<ParameterError>([&] { parameterFromText(*findParameter("n_leaf"), q, "99999999999"); }, {"n_leaf"});
    expectError<ParameterError>([&] { parameterFromText(*findParameter("merge_groups"), q, "1"); }, {"merge_groups"});
    expectError<ParameterError>([&] { parameterFromText(*findParameter("mac"), q, "barnes"); },
                                {"mac", "barnes", "'bonsai', 'octgrav' or 'relative'"});
    expectError<ParameterError>([&] { parameterFromText(*findParameter("epsilon_squared"), q, "nan"); },
                                {"epsilon_squared"});
}

TEST(ParameterTable, ARowAddedLaterTakesItsDefaultWhenAbsentAndOthersAreStillRequired)
{
    Parameters p;
    p.box_size             = 5.0;
    p.pm_grid              = 0;
    p.n_leaf               = 7;
    const std::string text = toText(p);
    auto without           = [&](const std::string& line) {
        std::string t = text;
        t.erase(t.find(line), line.size());
        return t;
    };
    Parameters q = parametersFromText(without("box_size=5\n"));
    EXPECT_EQ(q.box_size, 0.0);
    EXPECT_EQ(q.n_leaf, 7);
    expectError<ParameterError>([&] { parametersFromText(without("n_leaf=7\n")); }, {"missing parameters: n_leaf"});
}

TEST(ParameterTable, ValidateNamesTheParameterAndTheRule)
{
    Parameters p;
    p.opening_angle = 1.5;
    expectError<ParameterError>([&] { validate(p); }, {"parameter opening_angle = 1.5", "must be in (0, 1]"});
    p                        = Parameters{};
    p.gravitational_constant = std::numeric_limits<double>::infinity();
    expectError<ParameterError>([&] { validate(p); }, {"gravitational_constant", "must be finite and > 0"});
    p         = Parameters{};
    p.n_group = -3;
    expectError<ParameterError>([&] { validate(p); }, {"parameter n_group = -3", "must be >= 1"});
    EXPECT_EQ(rangeText(*findParameter("epsilon_squared")), "must be finite and >= 0");
    EXPECT_EQ(rangeText(*findParameter("backend")), "must be 'auto', 'cpu' or 'gpu'");
    p          = Parameters{};
    p.mac      = Mac::Relative;
    p.box_size = 2;
    p.pm_grid  = 0;
    expectError<ParameterError>([&] { validate(p); }, {"mac = relative", "box_size = 2", "isolated"});
    p.box_size = 0;
    EXPECT_NO_THROW(validate(p));
    EXPECT_NO_THROW(validate(Parameters{}));
}
