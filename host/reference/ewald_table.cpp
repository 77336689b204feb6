#include "host/reference/ewald_table.h"

#include "host/reference/ewald_direct.h"

namespace octwalk {

namespace {

std::vector<F4> computeTable(int32_t cells)
{
    const int32_t row = cells + 1;
    const int64_t n   = int64_t(row) * row * row;
    std::vector<F4> table(static_cast<size_t>(n));
    const double spacing = 0.5 / cells;
#pragma omp parallel for schedule(dynamic, 64)
    for (int64_t p = 0; p < n; ++p)
    {
        const int64_t i = p / (int64_t(row) * row), j = (p / row) % row, k = p % row;
        EwaldTerm t = ewaldCorrectionExact({double(i) * spacing, double(j) * spacing, double(k) * spacing}, 1.0);
        table[p]    = {float(t.acc.x), float(t.acc.y), float(t.acc.z), float(t.pot)};
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
