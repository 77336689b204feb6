#include "host/models/models.h"

#include <cmath>

#include "common/errors.h"
#include "common/integrate.h"
#include "host/core/mass_weighted.h"
#include "host/models/galaxy.h"
#include "host/models/sampling.h"

namespace octwalk {

namespace {

/// Isotropic Hernquist distribution function (Hernquist 1990, eq. 17) for G = M = a = 1 up to a
/// constant factor, as a function of the binding energy e = -E in (0, 1).
double hernquistDf(double e)
{
    double q  = std::sqrt(e);
    double q2 = e;
    double s  = std::sqrt(1 - q2);
    return (3 * std::asin(q) + q * s * (1 - 2 * q2) * (8 * q2 * q2 - 8 * q2 - 3)) / std::pow(1 - q2, 2.5);
}

/// n bodies of mass 1/n with ids 0..n-1, body by body from sample(rng, position, velocity),
/// centred on the mass.
template<class Sample>
ParticleSet equalMassSet(int64_t n, uint64_t seed, Sample sample)
{
    ParticleSet p;
    p.resize(n);
    Random rng(seed);
    for (int64_t i = 0; i < n; ++i)
    {
        sample(rng, p.pos[i], p.vel[i]);
        p.mass[i] = 1.0 / double(n);
        p.id[i]   = uint64_t(i);
    }
    centreOnMass(p);
    return p;
}

} // namespace

void centreOnMass(ParticleSet& p)
{
    const MassWeighted position = massWeighted(p.mass, p.pos);
    if (!(position.mass > 0)) return;
    const Vec3d x = position.mean();
    const Vec3d v = massWeighted(p.mass, p.vel).mean();
    for (int64_t i = 0; i < p.size(); ++i)
    {
        p.pos[i] = p.pos[i] - x;
        p.vel[i] = p.vel[i] - v;
    }
}

ParticleSet makePlummer(int64_t n, uint64_t seed)
{
    const double lengthScale   = 3 * kPi / 16;
    const double velocityScale = 1 / std::sqrt(lengthScale);
    return equalMassSet(n, seed, [&](Random& rng, Vec3d& pos, Vec3d& vel) {
        double r;
        do
        {
            double x = rng.uniform();
            r        = x > 0 ? 1 / std::sqrt(std::pow(x, -2.0 / 3.0) - 1) : 0;
        } while (!(r < 44.7)); // (r^2/(1+r^2))^1.5 = 0.999 at r = 44.7
        double q, g;
        do
        {
            q = rng.uniform();
            g = 0.1 * rng.uniform();
        } while (g > q * q * std::pow(1 - q * q, 3.5));
        double v = q * std::sqrt(2.0) * std::pow(1 + r * r, -0.25);
        pos      = lengthScale * isotropic(rng, r);
        vel      = velocityScale * isotropic(rng, v);
    });
}

ParticleSet makeHernquist(int64_t n, uint64_t seed)
{
    return equalMassSet(n, seed, [](Random& rng, Vec3d& pos, Vec3d& vel) {
        double r;
        do
        {
            double s = std::sqrt(rng.uniform());
            r        = s / (1 - s);
        } while (!(r < 198.0)); // M(<r) = r^2/(1+r^2)^2 reaches 0.99 at r = 198
        double psi  = 1 / (1 + r);
        double vEsc = std::sqrt(2 * psi);
        // Density in v at fixed r is v^2 f(psi - v^2/2); its maximum is bounded by scanning v.
        double peak = 0;
        for (int k = 1; k < 64; ++k)
        {
            double v = vEsc * k / 64.0;
            peak     = std::max(peak, v * v * hernquistDf(psi - 0.5 * v * v));
        }
        double v;
        do
        {
            v = vEsc * rng.uniform();
        } while (rng.uniform() * 1.1 * peak > v * v * hernquistDf(std::max(psi - 0.5 * v * v, 1e-300)));
        pos = isotropic(rng, r);
        vel = isotropic(rng, v);
    });
}

ParticleSet makeUniformSphere(int64_t n, uint64_t seed)
{
    return equalMassSet(n, seed, [](Random& rng, Vec3d& pos, Vec3d& vel) {
        pos = isotropic(rng, std::cbrt(rng.uniform()));
        vel = {0, 0, 0};
    });
}

ParticleSet makeUniformBox(int64_t n, double L, uint64_t seed)
{
    ParticleSet p;
    p.resize(n);
    p.boxSize = L;
    Random rng(seed);
    for (int64_t i = 0; i < n; ++i)
    {
        const double x = L * rng.uniform(), y = L * rng.uniform(), z = L * rng.uniform();
        p.pos[i]  = wrapPosition({x, y, z}, L);
        p.vel[i]  = {0, 0, 0};
        p.mass[i] = 1.0 / double(n);
        p.id[i]   = uint64_t(i);
    }
    return p;
}

ParticleSet makeClusteredBox(int64_t n, double L, uint64_t seed)
{
    const Vec3d centres[4] = {{0.3, 0.3, 0.3}, {0.7, 0.4, 0.6}, {0.02, 0.8, 0.5}, {0.5, 0.98, 0.1}};
    ParticleSet p          = makePlummer(n, seed);
    p.boxSize              = L;
    for (int64_t i = 0; i < n; ++i)
    {
        const Vec3d& o = centres[i % 4];
        const Vec3d& q = p.pos[i];
        p.pos[i]       = wrapPosition({L * (o.x + q.x / 40), L * (o.y + q.y / 40), L * (o.z + q.z / 40)}, L);
        p.mass[i]      = 1.0 / double(n);
    }
    return p;
}

ParticleSet makeModel(const std::string& name, int64_t n, uint64_t seed)
{
    if (n < 2) throw ParameterError("model size n = " + std::to_string(n) + " is invalid: must be >= 2");
    if (name == "plummer") return makePlummer(n, seed);
    if (name == "hernquist") return makeHernquist(n, seed);
    if (name == "uniform") return makeUniformSphere(n, seed);
    if (name == "galaxy") return makeGalaxy(n, seed);
    if (name == "merger") return makeMerger(n, seed);
    throw ParameterError("model '" + name + "' is unknown: use plummer, hernquist, uniform, galaxy or merger");
}

} // namespace octwalk
