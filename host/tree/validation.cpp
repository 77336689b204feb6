#include "host/tree/octree.h"

#include <cmath>
#include <sstream>
#include <string>

#include "common/errors.h"
#include "host/core/parallel.h"

namespace octwalk {

namespace {

std::string bodyMessage(int64_t i, const char* field, double value, const char* rule)
{
    std::ostringstream s;
    s.precision(17);
    s << "body " << i << ": " << field << " = " << value << " " << rule;
    return s.str();
}

bool badCoordinate(double x) { return !std::isfinite(x) || std::fabs(x) > kMaxCoordinate; }

bool badBody(const BodySpan& b, int64_t i)
{
    return badCoordinate(b.pos[i].x) || badCoordinate(b.pos[i].y) || badCoordinate(b.pos[i].z) ||
           !std::isfinite(b.mass[i]) || b.mass[i] < 0;
}

/// The body with bad(k) and the smallest name (BodySpan::nameOf), or b.n when there is none.
template<class Bad>
int64_t firstBadBody(const BodySpan& b, Bad&& bad)
{
    if (!b.rank) return firstIndexWhere(b.n, bad);
    constexpr int64_t kNone = INT64_MAX;
    int64_t firstName = kNone, first = b.n;
#pragma omp parallel for schedule(static) reduction(min : firstName)
    for (int64_t k = 0; k < b.n; ++k)
    {
        if (b.rank[k] < firstName && bad(k)) firstName = b.rank[k];
    }
    if (firstName == kNone) return b.n;
    for (int64_t k = 0; k < b.n && first == b.n; ++k) first = b.rank[k] == firstName ? k : first;
    return first;
}

} // namespace

void validateBodies(const BodySpan& b)
{
    if (b.n < 2)
    {
        throw InputError("at least 2 bodies are needed for a force evaluation, got N = " + std::to_string(b.n));
    }
    if (b.n > kMaxBodies)
    {
        throw InputError("N = " + std::to_string(b.n) + " exceeds the supported maximum of 2^30 - 1 bodies");
    }
    // The first bad body, found in parallel; the message names its first bad field.
    const int64_t k = firstBadBody(b, [&b](int64_t j) { return badBody(b, j); });
    if (k == b.n) return;
    const int64_t i      = b.nameOf(k);
    const double c[3]    = {b.pos[k].x, b.pos[k].y, b.pos[k].z};
    const char* names[3] = {"x", "y", "z"};
    for (int d = 0; d < 3; ++d)
    {
        if (!std::isfinite(c[d])) throw InputError(bodyMessage(i, names[d], c[d], "is not finite"));
        if (std::fabs(c[d]) > kMaxCoordinate)
        {
            throw InputError(bodyMessage(i, names[d], c[d], "exceeds the coordinate limit |x| <= 1e15"));
        }
    }
    if (!std::isfinite(b.mass[k])) throw InputError(bodyMessage(i, "mass", b.mass[k], "is not finite"));
    throw InputError(bodyMessage(i, "mass", b.mass[k], "is negative"));
}

void validateInBox(const BodySpan& b, double boxSize)
{
    auto outside = [boxSize](double x) { return !(x >= 0.0 && x < boxSize); };
    const int64_t k =
        firstBadBody(b, [&](int64_t j) { return outside(b.pos[j].x) || outside(b.pos[j].y) || outside(b.pos[j].z); });
    if (k == b.n) return;
    const int64_t i      = b.nameOf(k);
    const double c[3]    = {b.pos[k].x, b.pos[k].y, b.pos[k].z};
    const char* names[3] = {"x", "y", "z"};
    std::ostringstream rule;
    rule.precision(17);
    rule << "is outside the periodic box [0, " << boxSize << ") (box_size)";
    for (int d = 0; d < 3; ++d)
    {
        if (outside(c[d])) throw InputError(bodyMessage(i, names[d], c[d], rule.str().c_str()));
    }
}

} // namespace octwalk
