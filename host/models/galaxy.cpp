#include "host/models/galaxy.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/errors.h"
#include "host/models/sampling.h"
#include "host/solver/solver.h"

namespace octwalk {

namespace {

/// Hernquist mass inside r for total mass m and scale a.
double hernquistMass(double r, double m, double a) { return m * r * r / ((r + a) * (r + a)); }

double hernquistDensity(double r, double m, double a) { return m * a / (2 * kPi * r * std::pow(r + a, 3)); }

/// Exponential disk mass inside (spherical) radius r, used only for the spherical average.
double diskMass(double r, double m) { return m * (1 - (1 + r) * std::exp(-r)); }

struct MassProfile
{
    const GalaxyModel& g;
    double bulgeMass, diskMassTotal, haloMass;

    double enclosed(double r) const
    {
        return hernquistMass(std::min(r, g.haloCutoff), bulgeMass, g.bulgeScale) +
               hernquistMass(std::min(r, g.haloCutoff), haloMass, g.haloScale) +
               diskMass(std::min(r, g.diskCutoff), diskMassTotal);
    }
};

/// Isotropic Jeans dispersion sigma^2(r) of a Hernquist component in the total mass profile, on a
/// log grid, integrated inward from the cut-off.
struct JeansTable
{
    std::vector<double> logR, sigma2;

    JeansTable(const MassProfile& prof, double m, double a, double rMax)
    {
        const int n = 600;
        double lo = std::log(1e-4), hi = std::log(rMax);
        logR.resize(n);
        sigma2.resize(n);
        std::vector<double> integral(n, 0.0);
        for (int i = 0; i < n; ++i) logR[i] = lo + (hi - lo) * i / (n - 1);
        auto integrand = [&](double lr) {
            double r = std::exp(lr);
            return hernquistDensity(r, m, a) * prof.enclosed(r) / (r * r) * r; // dr = r dlnr
        };
        for (int i = n - 2; i >= 0; --i)
        {
            integral[i] =
                integral[i + 1] + 0.5 * (logR[i + 1] - logR[i]) * (integrand(logR[i]) + integrand(logR[i + 1]));
        }
        for (int i = 0; i < n; ++i) sigma2[i] = integral[i] / hernquistDensity(std::exp(logR[i]), m, a);
    }

    double at(double r) const
    {
        double lr = std::clamp(std::log(std::max(r, 1e-300)), logR.front(), logR.back());
        auto it   = std::upper_bound(logR.begin(), logR.end(), lr);
        size_t i  = std::min<size_t>(std::max<size_t>(size_t(it - logR.begin()), 1), logR.size() - 1);
        double t  = (lr - logR[i - 1]) / (logR[i] - logR[i - 1]);
        return sigma2[i - 1] + t * (sigma2[i] - sigma2[i - 1]);
    }
};

/// Standard normal deviate (Box-Muller, one of the pair), from our portable generator.
double gaussian(Random& rng)
{
    double u = 1 - rng.uniform();
    return std::sqrt(-2 * std::log(u)) * std::cos(2 * kPi * rng.uniform());
}

/// Radius from a truncated Hernquist profile.
double sampleHernquistRadius(Random& rng, double a, double rMax)
{
    double sMax = rMax / (rMax + a);
    double s    = std::sqrt(rng.uniform()) * sMax;
    return a * s / (1 - s);
}

/// Cylindrical radius of an exponential disk (scale 1) below the cut-off, by bisection of the
/// cumulative mass 1 - (1 + R) exp(-R).
double sampleDiskRadius(Random& rng, double cutoff)
{
    double target = rng.uniform() * diskMass(cutoff, 1.0);
    double lo = 0, hi = cutoff;
    for (int k = 0; k < 60; ++k)
    {
        double mid                              = 0.5 * (lo + hi);
        (diskMass(mid, 1.0) < target ? lo : hi) = mid;
    }
    return 0.5 * (lo + hi);
}

void sphericalComponent(Random& rng, ParticleSet& p, int64_t first, int64_t count, double m, double a,
                        const GalaxyModel& g, const MassProfile& prof)
{
    JeansTable jeans(prof, m, a, g.haloCutoff);
    for (int64_t i = first; i < first + count; ++i)
    {
        double r     = sampleHernquistRadius(rng, a, g.haloCutoff);
        double sigma = std::sqrt(std::max(jeans.at(r), 0.0));
        double vEsc  = std::sqrt(2 * prof.enclosed(r) / std::max(r, 1e-6) + 2 * m / (r + a));
        Vec3d v;
        do
        {
            v = {sigma * gaussian(rng), sigma * gaussian(rng), sigma * gaussian(rng)};
        } while (dot(v, v) > 0.95 * vEsc * vEsc);
        p.pos[i] = isotropic(rng, r);
        p.vel[i] = v;
    }
}

/// Epicyclic ratio kappa^2 / (4 Omega^2) of the spherically averaged profile at R.
double epicyclicRatio(const MassProfile& prof, double R)
{
    double h      = 1e-3 * R;
    double v2     = prof.enclosed(R) / R;
    double dv2    = (prof.enclosed(R + h) / (R + h) - prof.enclosed(R - h) / (R - h)) / (2 * h);
    double kappa2 = 2 * v2 / (R * R) + dv2 / R; // kappa^2 = R dOmega^2/dR + 4 Omega^2
    return kappa2 / (4 * v2 / (R * R));
}

void diskVelocities(Random& rng, ParticleSet& p, int64_t first, int64_t count, double md, const GalaxyModel& g,
                    const MassProfile& prof)
{
    // Circular speed from the model's own tree accelerations, in the plane of each disk body.
    Parameters params;
    params.opening_angle   = 0.5;
    params.epsilon_squared = g.softening * g.softening;
    params.backend         = Backend::Cpu;
    GravitySolver solver(params);
    solver.setBodies(p.pos, p.mass, p.id);
    std::vector<Vec3d> acc;
    std::vector<double> pot;
    solver.computeForces(acc, pot);

    const double rRef = 2.43;
    double sigmaSurf  = md / (2 * kPi) * std::exp(-rRef);
    double kappaRef   = std::sqrt(4 * prof.enclosed(rRef) / (rRef * rRef * rRef) * epicyclicRatio(prof, rRef));
    double sigmaR0    = g.toomreQ * 3.36 * sigmaSurf / kappaRef / std::exp(-rRef / 2);
    for (int64_t i = first; i < first + count; ++i)
    {
        Vec3d x  = p.pos[i];
        double R = std::sqrt(x.x * x.x + x.y * x.y);
        if (R < 1e-9) R = 1e-9;
        Vec3d eR{x.x / R, x.y / R, 0}, ePhi{-x.y / R, x.x / R, 0};
        double vc2        = std::max(0.0, -R * dot(acc[i], eR));
        double sigmaSurfR = md / (2 * kPi) * std::exp(-R);
        double sigmaZ     = std::sqrt(kPi * sigmaSurfR * g.diskHeight);
        double sigmaRr    = sigmaR0 * std::exp(-R / 2);
        double ratio      = std::clamp(epicyclicRatio(prof, R), 0.25, 1.0);
        double sigmaPhi   = sigmaRr * std::sqrt(ratio);
        double vPhi2      = vc2 + sigmaRr * sigmaRr * (1 - ratio - 2 * R);
        double vPhi       = std::sqrt(std::max(vPhi2, 0.0));
        double vr = sigmaRr * gaussian(rng), vt = vPhi + sigmaPhi * gaussian(rng), vz = sigmaZ * gaussian(rng);
        p.vel[i] = {vr * eR.x + vt * ePhi.x, vr * eR.y + vt * ePhi.y, vz};
    }
}

} // namespace

ParticleSet makeGalaxy(int64_t n, uint64_t seed, const GalaxyModel& g)
{
    if (!(g.bulgeFraction > 0 && g.diskFraction > 0 && g.bulgeFraction + g.diskFraction < 1))
    {
        throw ParameterError("galaxy component fractions are invalid: bulge and disk must be > 0 with sum < 1");
    }
    if (n < 6) throw ParameterError("galaxy size n = " + std::to_string(n) + " is invalid: must be >= 6");
    ParticleSet p;
    p.resize(n);
    Random rng(seed);
    int64_t nBulge = std::max<int64_t>(1, int64_t(std::llround(n * g.bulgeFraction)));
    int64_t nDisk  = std::max<int64_t>(1, int64_t(std::llround(n * g.diskFraction)));
    int64_t nHalo  = n - nBulge - nDisk;
    // Equal-mass bodies: component masses follow the body counts (the 1:1:4 ratio up to rounding).
    double mBulge = double(nBulge) / double(n), mDisk = double(nDisk) / double(n), mHalo = double(nHalo) / double(n);
    for (int64_t i = 0; i < n; ++i)
    {
        p.mass[i] = 1.0 / double(n);
        p.id[i]   = uint64_t(i);
        p.type[i] = i < nBulge ? kBulgeType : i < nBulge + nDisk ? kDiskType : kHaloType;
    }
    MassProfile prof{g, mBulge, mDisk, mHalo};
    sphericalComponent(rng, p, 0, nBulge, mBulge, g.bulgeScale, g, prof);
    for (int64_t i = nBulge; i < nBulge + nDisk; ++i)
    {
        double R = sampleDiskRadius(rng, g.diskCutoff), phi = 2 * kPi * rng.uniform();
        double z = g.diskHeight * std::atanh(std::clamp(2 * rng.uniform() - 1, -0.999999, 0.999999));
        p.pos[i] = {R * std::cos(phi), R * std::sin(phi), z};
    }
    sphericalComponent(rng, p, nBulge + nDisk, nHalo, mHalo, g.haloScale, g, prof);
    diskVelocities(rng, p, nBulge, nDisk, mDisk, g, prof);
    centreOnMass(p);
    return p;
}

ParticleSet makeMerger(int64_t n, uint64_t seed, const MergerOrbit& o, const GalaxyModel& g)
{
    if (!(o.massRatio > 0 && o.massRatio <= 1))
    {
        throw ParameterError("merger mass ratio = " + std::to_string(o.massRatio) + " is invalid: must be in (0, 1]");
    }
    if (!(o.pericentre > 0 && o.separation > o.pericentre))
    {
        throw ParameterError("merger pericentre = " + std::to_string(o.pericentre) + " and separation = " +
                             std::to_string(o.separation) + " are invalid: need 0 < pericentre < separation");
    }
    double q           = o.massRatio;
    int64_t n2         = int64_t(std::llround(double(n) * q / (1 + q)));
    int64_t n1         = n - n2;
    ParticleSet a      = makeGalaxy(n1, seed, g);
    ParticleSet b      = makeGalaxy(n2, seed + 1, g);
    double lengthScale = std::cbrt(q), velocityScale = std::sqrt(q / lengthScale);
    double inc = o.inclination * kPi / 180, c = std::cos(inc), s = std::sin(inc);
    auto tilt = [c, s](Vec3d v) { return Vec3d{v.x, c * v.y - s * v.z, s * v.y + c * v.z}; };

    // Parabolic relative orbit: v^2 = 2 G M / d, specific angular momentum sqrt(2 G M r_p).
    double mTot = 1 + q, d = o.separation;
    double vt = std::sqrt(2 * mTot * o.pericentre) / d;
    double vr = -std::sqrt(std::max(2 * mTot / d - vt * vt, 0.0));
    Vec3d rel{d, 0, 0}, relV{vr, vt, 0};
    Vec3d offset1 = (-q / mTot) * rel, offset2 = (1 / mTot) * rel;
    Vec3d vel1 = (-q / mTot) * relV, vel2 = (1 / mTot) * relV;

    ParticleSet p;
    p.resize(n);
    for (int64_t i = 0; i < n1; ++i)
    {
        p.pos[i]  = a.pos[i] + offset1;
        p.vel[i]  = a.vel[i] + vel1;
        p.mass[i] = a.mass[i];
        p.type[i] = a.type[i];
    }
    for (int64_t i = 0; i < n2; ++i)
    {
        p.pos[n1 + i]  = tilt(lengthScale * b.pos[i]) + offset2;
        p.vel[n1 + i]  = tilt(velocityScale * b.vel[i]) + vel2;
        p.mass[n1 + i] = q * b.mass[i];
        p.type[n1 + i] = b.type[i];
    }
    for (int64_t i = 0; i < n; ++i) p.id[i] = uint64_t(i);
    return p;
}

} // namespace octwalk
