#include "host/reference/ewald_table.h"

#include <array>

#include "host/reference/ewald_direct.h"

namespace octwalk {

namespace {

using Derivs = std::array<double, kEwaldDerivs>;

/// The exact derivatives up to third order in the table's graded order (common/ewald.h, ewaldDerivIndex).
Derivs exactToThird(Vec3d d)
{
    EwaldDerivatives t = ewaldCorrectionDerivatives(d, 1.0);
    Derivs g{};
    g[ewaldDerivIndex(0, 0, 0)] = t.pot;
    g[ewaldDerivIndex(1, 0, 0)] = t.acc.x;
    g[ewaldDerivIndex(0, 1, 0)] = t.acc.y;
    g[ewaldDerivIndex(0, 0, 1)] = t.acc.z;
    // hess: xx yy zz xy xz yz; third: xxx yyy zzz xxy xxz xyy yyz xzz yzz xyz.
    const int hess[6][3]   = {{2, 0, 0}, {0, 2, 0}, {0, 0, 2}, {1, 1, 0}, {1, 0, 1}, {0, 1, 1}};
    const int third[10][3] = {{3, 0, 0}, {0, 3, 0}, {0, 0, 3}, {2, 1, 0}, {2, 0, 1},
                              {1, 2, 0}, {0, 2, 1}, {1, 0, 2}, {0, 1, 2}, {1, 1, 1}};
    for (int k = 0; k < 6; ++k) g[ewaldDerivIndex(hess[k][0], hess[k][1], hess[k][2])] = t.hess[k];
    for (int k = 0; k < 10; ++k) g[ewaldDerivIndex(third[k][0], third[k][1], third[k][2])] = t.third[k];
    return g;
}

/// The fourth derivatives as central differences of the exact third ones along the grid (spacing h; at
/// the origin the mirror image by the parity of psi, at the far face L/2 a second-order one-sided
/// difference). Component n takes the difference along its first axis a with n_a > 0 of component n - e_a.
void addFourth(std::vector<Derivs>& g, int32_t row, double h)
{
    auto at = [&](int64_t i, int64_t j, int64_t k) -> const Derivs& { return g[size_t((i * row + j) * row + k)]; };
    std::vector<Derivs> out(g);
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < int64_t(g.size()); ++p)
    {
        const int64_t idx[3] = {p / (int64_t(row) * row), (p / row) % row, p % row};
        for (int j = 0; j <= 4; ++j)
        {
            for (int nz = 0; nz <= j; ++nz)
            {
                const int n[3] = {4 - j, j - nz, nz};
                const int a    = n[0] > 0 ? 0 : n[1] > 0 ? 1 : 2;
                int c[3]       = {n[0], n[1], n[2]};
                --c[a];
                const int comp = ewaldDerivIndex(c[0], c[1], c[2]);
                auto value     = [&](int64_t s) {
                    int64_t q[3] = {idx[0], idx[1], idx[2]};
                    q[a] += s;
                    // psi is even in each coordinate: component c changes sign with (-1)^c_a across 0.
                    double parity = (c[a] & 1) ? -1.0 : 1.0;
                    if (q[a] >= 0) return at(q[0], q[1], q[2])[comp];
                    q[a] = -q[a];
                    return parity * at(q[0], q[1], q[2])[comp];
                };
                double d4;
                if (idx[a] < row - 1) d4 = (value(1) - value(-1)) / (2 * h);
                else d4 = (3 * value(0) - 4 * value(-1) + value(-2)) / (2 * h);
                out[size_t(p)][ewaldDerivIndex(n[0], n[1], n[2])] = d4;
            }
        }
    }
    g.swap(out);
}

std::vector<F4> computeTable(int32_t cells)
{
    const int32_t row    = cells + 1;
    const int64_t n      = int64_t(row) * row * row;
    const double spacing = 0.5 / cells;
    std::vector<Derivs> g(static_cast<size_t>(n));
#pragma omp parallel for schedule(dynamic, 64)
    for (int64_t p = 0; p < n; ++p)
    {
        const int64_t i = p / (int64_t(row) * row), j = (p / row) % row, k = p % row;
        g[size_t(p)] = exactToThird({double(i) * spacing, double(j) * spacing, double(k) * spacing});
    }
    addFourth(g, row, spacing);
    std::vector<F4> table(static_cast<size_t>(n) * kEwaldTableWords);
    for (int64_t p = 0; p < n; ++p)
    {
        auto word = [&](int c) { return c < kEwaldDerivs ? float(g[size_t(p)][size_t(c)]) : 0.0f; };
        for (int w = 0; w < kEwaldTableWords; ++w)
            table[size_t(p) * kEwaldTableWords + size_t(w)] = {word(4 * w), word(4 * w + 1), word(4 * w + 2),
                                                               word(4 * w + 3)};
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
