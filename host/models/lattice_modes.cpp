#include "host/models/lattice_modes.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>

#include "common/errors.h"
#include "host/core/number_text.h"

namespace octwalk {
namespace {

// Ewald splitting [1 / spacing]: erfc(2 r) < 1e-28 beyond r = 4, and the reciprocal terms beyond
// |G| = 2 pi sqrt(20) are below exp(-(2 pi sqrt(20) - pi sqrt(3))^2 / 16) < 1e-13 of the leading one.
constexpr double kAlpha          = 2.0;
constexpr int kShells            = 4;
constexpr int kRealRadius2       = 16;
constexpr int kReciprocalRadius2 = 20;

Matrix3 zeroMatrix() { return Matrix3{Vector3{0, 0, 0}, Vector3{0, 0, 0}, Vector3{0, 0, 0}}; }

void addOuter(Matrix3& m, double scale, const Vector3& u, const Vector3& v)
{
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) m[i][j] += scale * u[i] * v[j];
}

/// The Hessian of the erfc part of the pair potential -erfc(alpha r) / (4 pi r) (4 pi G = 1).
Matrix3 shortRangeTidal(const Vector3& r)
{
    const double d     = std::sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]);
    const double g     = 1.0 / (4.0 * M_PI);
    const double e     = std::erfc(kAlpha * d);
    const double gauss = 2.0 * kAlpha / std::sqrt(M_PI) * std::exp(-kAlpha * kAlpha * d * d);
    const double f1    = g * (e / (d * d) + gauss / d);
    const double f2    = -g * (2.0 * e / (d * d * d) + gauss * (2.0 / (d * d) + 2.0 * kAlpha * kAlpha));
    const Vector3 u{r[0] / d, r[1] / d, r[2] / d};
    Matrix3 t = zeroMatrix();
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) t[i][j] = f2 * u[i] * u[j] + f1 / d * ((i == j ? 1.0 : 0.0) - u[i] * u[j]);
    return t;
}

struct RealTerm
{
    Vector3 r;
    Matrix3 tidal;
};

/// The lattice vectors of the real-space sum with their tidal tensors (k-independent: made once).
const std::vector<RealTerm>& realTerms()
{
    static const std::vector<RealTerm> terms = [] {
        std::vector<RealTerm> out;
        for (int x = -kShells; x <= kShells; ++x)
            for (int y = -kShells; y <= kShells; ++y)
                for (int z = -kShells; z <= kShells; ++z)
                {
                    const int r2 = x * x + y * y + z * z;
                    if (r2 == 0 || r2 > kRealRadius2) continue;
                    const Vector3 r{double(x), double(y), double(z)};
                    out.push_back(RealTerm{r, shortRangeTidal(r)});
                }
        return out;
    }();
    return terms;
}

const std::vector<Vector3>& reciprocalVectors()
{
    static const std::vector<Vector3> vectors = [] {
        std::vector<Vector3> out;
        for (int x = -kShells - 1; x <= kShells + 1; ++x)
            for (int y = -kShells - 1; y <= kShells + 1; ++y)
                for (int z = -kShells - 1; z <= kShells + 1; ++z)
                {
                    if (x * x + y * y + z * z > kReciprocalRadius2) continue;
                    out.push_back(Vector3{2.0 * M_PI * x, 2.0 * M_PI * y, 2.0 * M_PI * z});
                }
        return out;
    }();
    return vectors;
}

/// The Fourier-space term exp(-q^2 / (4 alpha^2)) q q^T / q^2 of the smooth part of the force.
void addLongRange(Matrix3& m, double sign, const Vector3& q)
{
    const double q2 = q[0] * q[0] + q[1] * q[1] + q[2] * q[2];
    addOuter(m, sign * std::exp(-q2 / (4.0 * kAlpha * kAlpha)) / q2, q, q);
}

/// The self term sum_{G != 0} of the long-range part, which the mean density's subtraction removes.
const Matrix3& zeroWavevectorBackground()
{
    static const Matrix3 background = [] {
        Matrix3 m = zeroMatrix();
        for (const Vector3& g : reciprocalVectors())
            if (g[0] != 0 || g[1] != 0 || g[2] != 0) addLongRange(m, 1.0, g);
        return m;
    }();
    return background;
}

/// The eigenvalues on the diagonal of a after cyclic Jacobi rotations, the rotations accumulated in v.
void jacobiRotate(Matrix3& a, Matrix3& v, int p, int q)
{
    if (std::abs(a[p][q]) < 1e-300) return;
    const double theta = (a[q][q] - a[p][p]) / (2.0 * a[p][q]);
    const double t     = std::copysign(1.0, theta) / (std::abs(theta) + std::sqrt(theta * theta + 1.0));
    const double c     = 1.0 / std::sqrt(t * t + 1.0);
    const double s     = t * c;
    for (int r = 0; r < 3; ++r)
    {
        const double arp = a[r][p], arq = a[r][q];
        a[r][p] = c * arp - s * arq;
        a[r][q] = s * arp + c * arq;
    }
    for (int r = 0; r < 3; ++r)
    {
        const double apr = a[p][r], aqr = a[q][r];
        a[p][r] = c * apr - s * aqr;
        a[q][r] = s * apr + c * aqr;
    }
    for (int r = 0; r < 3; ++r)
    {
        const double vrp = v[r][p], vrq = v[r][q];
        v[r][p] = c * vrp - s * vrq;
        v[r][q] = s * vrp + c * vrq;
    }
}

GrowingMode growingModeOf(const Matrix3& d, const Vector3& k)
{
    const SymmetricEigen eigen = symmetricEigen(d);
    GrowingMode mode{eigen.values[0], eigen.vectors[0]};
    if (mode.e[0] * k[0] + mode.e[1] * k[1] + mode.e[2] * k[2] < 0)
        for (double& x : mode.e) x = -x;
    return mode;
}

/// The growth equation's right-hand side for (g, g') in y = ln a.
Vector3 growthRhs(const Cosmology& c, double eps, double y, double g, double gp)
{
    const double a         = std::exp(y);
    const double omegaK    = 1.0 - c.omega0 - c.omegaLambda;
    const double matter    = c.omega0 / (a * a * a);
    const double curvature = omegaK / (a * a);
    const double e2        = matter + curvature + c.omegaLambda;
    const double dlnH      = (-3.0 * matter - 2.0 * curvature) / (2.0 * e2);
    return Vector3{gp, -(2.0 + dlnH) * gp + 1.5 * matter / e2 * eps * g, 0.0};
}

/// RK4 of (g, g') from ln a = y0 to y1 in steps no longer than 0.005 (truncation error below 1e-9).
void integrateGrowth(const Cosmology& c, double eps, double y0, double y1, double& g, double& gp)
{
    const int steps = std::max(1, int(std::ceil((y1 - y0) / 0.005)));
    const double h  = (y1 - y0) / steps;
    for (int s = 0; s < steps; ++s)
    {
        const double y   = y0 + s * h;
        const Vector3 k1 = growthRhs(c, eps, y, g, gp);
        const Vector3 k2 = growthRhs(c, eps, y + h / 2, g + h / 2 * k1[0], gp + h / 2 * k1[1]);
        const Vector3 k3 = growthRhs(c, eps, y + h / 2, g + h / 2 * k2[0], gp + h / 2 * k2[1]);
        const Vector3 k4 = growthRhs(c, eps, y + h, g + h * k3[0], gp + h * k3[1]);
        g += h / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0]);
        gp += h / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1]);
    }
}

// Interpolating ln(ratio) linearly in eps at this spacing: error below h^2 / 8 |alpha''| ln(a1 / a0)
// (alpha'' = -36 / (1 + 24 eps)^1.5 >= -1.4 for eps >= 1/3), under 1e-6 for a1 / a0 up to 1000.
constexpr double kEpsStep = 0.0005;

} // namespace

Matrix3 latticeDynamicalMatrix(const Vector3& k)
{
    Matrix3 d                 = zeroMatrix();
    const Matrix3& background = zeroWavevectorBackground();
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) d[i][j] = -background[i][j];
    for (const Vector3& g : reciprocalVectors()) addLongRange(d, 1.0, Vector3{k[0] + g[0], k[1] + g[1], k[2] + g[2]});
    for (const RealTerm& term : realTerms())
    {
        const double weight = -(1.0 - std::cos(k[0] * term.r[0] + k[1] * term.r[1] + k[2] * term.r[2]));
        for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j) d[i][j] += weight * term.tidal[i][j];
    }
    return d;
}

SymmetricEigen symmetricEigen(const Matrix3& m)
{
    Matrix3 a = m;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < i; ++j) a[i][j] = a[j][i];
    Matrix3 v = Matrix3{Vector3{1, 0, 0}, Vector3{0, 1, 0}, Vector3{0, 0, 1}};
    for (int sweep = 0; sweep < 50; ++sweep)
    {
        const double off = a[0][1] * a[0][1] + a[0][2] * a[0][2] + a[1][2] * a[1][2];
        const double on  = a[0][0] * a[0][0] + a[1][1] * a[1][1] + a[2][2] * a[2][2];
        if (off <= 1e-34 * on || off < 1e-300) break;
        jacobiRotate(a, v, 0, 1);
        jacobiRotate(a, v, 0, 2);
        jacobiRotate(a, v, 1, 2);
    }
    std::array<int, 3> order{0, 1, 2};
    std::sort(order.begin(), order.end(), [&](int x, int y) { return a[x][x] > a[y][y]; });
    SymmetricEigen out;
    for (int j = 0; j < 3; ++j)
    {
        out.values[j]  = a[order[j]][order[j]];
        out.vectors[j] = Vector3{v[0][order[j]], v[1][order[j]], v[2][order[j]]};
    }
    return out;
}

LatticeModes::LatticeModes(int n) : n_(n), half_(n / 2)
{
    if (n < 2) throw ParameterError("lattice size n = " + std::to_string(n) + " is invalid: must be >= 2");
    std::vector<std::array<int, 3>> sorted;
    for (int a = 0; a <= half_; ++a)
        for (int b = 0; b <= a; ++b)
            for (int c = 0; c <= b; ++c) sorted.push_back({a, b, c});
    entries_.resize(sorted.size());
    const double toWavevector = 2.0 * M_PI / n;
#pragma omp parallel for schedule(dynamic, 16)
    for (int64_t x = 0; x < int64_t(sorted.size()); ++x)
    {
        const auto [a, b, c] = sorted[x];
        Entry& entry         = entries_[sortedIndex(a, b, c)];
        if (a == 0)
        {
            entry = Entry{zeroMatrix(), GrowingMode{}};
            continue;
        }
        const Vector3 k{a * toWavevector, b * toWavevector, c * toWavevector};
        entry.matrix = latticeDynamicalMatrix(k);
        entry.mode   = growingModeOf(entry.matrix, k);
    }
    smallestEps_ = largestEps_ = entries_.size() > 1 ? entries_[1].mode.eps : 1.0;
    for (size_t x = 1; x < entries_.size(); ++x)
    {
        smallestEps_ = std::min(smallestEps_, entries_[x].mode.eps);
        largestEps_  = std::max(largestEps_, entries_[x].mode.eps);
    }
}

int64_t LatticeModes::sortedIndex(int a, int b, int c) const
{
    return int64_t(a) * (a + 1) * (a + 2) / 6 + int64_t(b) * (b + 1) / 2 + c;
}

namespace {

/// The signed permutation bringing (mx, my, mz) to its table entry |m_{o0}| >= |m_{o1}| >= |m_{o2}|:
/// rank[i] is axis i's place in that order, sign[i] the sign of m_i.
struct CubicMap
{
    std::array<int, 3> sorted;
    std::array<int, 3> rank;
    std::array<double, 3> sign;
};

CubicMap cubicMap(int mx, int my, int mz)
{
    const std::array<int, 3> m{mx, my, mz};
    CubicMap map;
    std::array<int, 3> order{0, 1, 2};
    std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return std::abs(m[x]) > std::abs(m[y]); });
    for (int r = 0; r < 3; ++r)
    {
        map.sorted[r]      = std::abs(m[order[r]]);
        map.rank[order[r]] = r;
    }
    for (int i = 0; i < 3; ++i) map.sign[i] = m[i] < 0 ? -1.0 : 1.0;
    return map;
}

} // namespace

Matrix3 LatticeModes::matrix(int mx, int my, int mz) const
{
    const CubicMap map  = cubicMap(mx, my, mz);
    const Matrix3& base = entries_[sortedIndex(map.sorted[0], map.sorted[1], map.sorted[2])].matrix;
    Matrix3 out;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) out[i][j] = map.sign[i] * map.sign[j] * base[map.rank[i]][map.rank[j]];
    return out;
}

GrowingMode LatticeModes::growingMode(int mx, int my, int mz) const
{
    const CubicMap map      = cubicMap(mx, my, mz);
    const GrowingMode& base = entries_[sortedIndex(map.sorted[0], map.sorted[1], map.sorted[2])].mode;
    GrowingMode out{base.eps, Vector3{}};
    for (int i = 0; i < 3; ++i) out.e[i] = map.sign[i] * base.e[map.rank[i]];
    return out;
}

LatticeGrowthAt latticeGrowth(const Cosmology& c, double eps, double a0, double a1)
{
    if (!(eps > -1.0 / 24.0))
    {
        throw ParameterError("lattice eigenvalue eps = " + exactDigits(eps) +
                             " is invalid: must be > -1/24 (no growing solution otherwise)");
    }
    if (!(a0 > 0) || !(a1 >= a0))
    {
        throw ParameterError("lattice growth from a = " + exactDigits(a0) + " to " + exactDigits(a1) +
                             " is invalid: need 0 < a0 <= a1");
    }
    // Deep in matter domination (curvature and Lambda below 1e-6 of the matter term) the growing
    // solution is a^alpha; its error there decays relative to it.
    const double alpha  = (-1.0 + std::sqrt(1.0 + 24.0 * eps)) / 4.0;
    const double yStart = std::log(a0) - std::log(1e3), y0 = std::log(a0), y1 = std::log(a1);
    double g = 1.0, gp = alpha;
    integrateGrowth(c, eps, yStart, y0, g, gp);
    const double g0 = g, rate = gp / g;
    integrateGrowth(c, eps, y0, y1, g, gp);
    return LatticeGrowthAt{g / g0, rate};
}

LatticeGrowthTable::LatticeGrowthTable(const Cosmology& c, double a0, double a1, double epsMin, double epsMax)
    : epsMin_(epsMin)
{
    if (!(epsMax >= epsMin))
    {
        throw ParameterError("lattice growth table from eps = " + exactDigits(epsMin) + " to " + exactDigits(epsMax) +
                             " is invalid: need epsMin <= epsMax");
    }
    const int intervals = std::max(1, int(std::ceil((epsMax - epsMin) / kEpsStep)));
    step_               = (epsMax - epsMin) / intervals;
    nodes_.resize(size_t(intervals) + 1);
#pragma omp parallel for schedule(static)
    for (int i = 0; i <= intervals; ++i) nodes_[size_t(i)] = latticeGrowth(c, epsMin + i * step_, a0, a1);
}

LatticeGrowthAt LatticeGrowthTable::at(double eps) const
{
    if (nodes_.size() == 1 || step_ <= 0) return nodes_[0];
    const double x            = std::clamp((eps - epsMin_) / step_, 0.0, double(nodes_.size() - 1));
    const size_t i            = std::min(size_t(x), nodes_.size() - 2);
    const double w            = x - double(i);
    const LatticeGrowthAt& lo = nodes_[i];
    const LatticeGrowthAt& hi = nodes_[i + 1];
    return LatticeGrowthAt{std::exp((1 - w) * std::log(lo.ratio) + w * std::log(hi.ratio)),
                           (1 - w) * lo.rate + w * hi.rate};
}

} // namespace octwalk
