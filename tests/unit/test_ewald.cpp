// Periodic boxes: the box_size parameter, the Ewald reference sum, the correction table and the
// periodic tree walk against the reference.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "common/errors.h"
#include "host/core/params.h"

using namespace octwalk;

namespace {

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

} // namespace

TEST(BoxSize, DefaultIsIsolatedAndRangeIsChecked)
{
    EXPECT_EQ(Parameters{}.box_size, 0.0);
    const ParameterInfo* row = findParameter("box_size");
    ASSERT_NE(row, nullptr);
    EXPECT_STREQ(row->option, "box-size");
    EXPECT_EQ(rangeText(*row), "must be finite and >= 0");
    Parameters p;
    p.box_size = 100.0;
    EXPECT_NO_THROW(validate(p));
    p.box_size = -1.0;
    expectError<ParameterError>([&] { validate(p); }, {"parameter box_size = -1", "must be finite and >= 0"});
    p.box_size = std::numeric_limits<double>::infinity();
    expectError<ParameterError>([&] { validate(p); }, {"box_size"});
    Parameters q;
    parameterFromText(*row, q, "256");
    EXPECT_EQ(q.box_size, 256.0);
}
