#include "host/reference/ewald_table.h"

#include "host/reference/ewald_direct.h"

namespace octwalk {

namespace {

std::vector<F4> computeTable(int32_t cells)
{
    const int32_t row = cells + 1;
    const int64_t n   = int64_t(row) * row * row;
    std::vector<F4> table(static_cast<size_t>(n) * kEwaldTableWords);
    const double spacing = 0.5 / cells;
#pragma omp parallel for schedule(dynamic, 64)
    for (int64_t p = 0; p < n; ++p)
    {
        const int64_t i = p / (int64_t(row) * row), j = (p / row) % row, k = p % row;
        EwaldDerivatives t =
            ewaldCorrectionDerivatives({double(i) * spacing, double(j) * spacing, double(k) * spacing}, 1.0);
        const double* h = t.hess;
        const double* c = t.third;
        F4* out         = &table[size_t(p) * kEwaldTableWords];
        out[0]          = {float(t.pot), float(t.acc.x), float(t.acc.y), float(t.acc.z)};
        out[1]          = {float(h[0]), float(h[1]), float(h[2]), float(h[3])};
        out[2]          = {float(h[4]), float(h[5]), float(c[0]), float(c[1])};
        out[3]          = {float(c[2]), float(c[3]), float(c[4]), float(c[5])};
        out[4]          = {float(c[6]), float(c[7]), float(c[8]), float(c[9])};
    }
    return table;
}

} // namespace

const std::vector<F4>& ewaldTable()
{
    static const std::vector<F4> table = computeTable(kEwaldTableCells);
    return table;
}

PeriodicView periodicView(double boxSize)
{
    if (!(boxSize > 0)) return {nullptr, 0, 0.0f, 0.0f};
    return {ewaldTable().data(), kEwaldTableCells, float(boxSize), float(1.0 / boxSize)};
}

} // namespace octwalk
