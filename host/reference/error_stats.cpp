#include "host/reference/error_stats.h"

#include <algorithm>
#include <cmath>

namespace octwalk {

std::vector<double> relativeErrors(const std::vector<Vec3d>& acc, const std::vector<Vec3d>& ref)
{
    std::vector<double> err(acc.size());
    for (size_t i = 0; i < acc.size(); ++i)
    {
        Vec3d d  = acc[i] - ref[i];
        double r = std::sqrt(dot(ref[i], ref[i]));
        double e = std::sqrt(dot(d, d));
        err[i]   = r > 0 ? e / r : (e > 0 ? HUGE_VAL : 0.0);
    }
    return err;
}

ErrorStats errorStats(std::vector<double> e)
{
    ErrorStats s;
    s.count = int64_t(e.size());
    if (e.empty()) return s;
    std::sort(e.begin(), e.end());
    auto at  = [&e](double q) { return e[std::min(e.size() - 1, size_t(q * double(e.size())))]; };
    s.median = at(0.5);
    s.p90    = at(0.9);
    s.p99    = at(0.99);
    s.p999   = at(0.999);
    s.max    = e.back();
    return s;
}

} // namespace octwalk
