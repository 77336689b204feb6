#include "host/sim/hermite.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <sstream>
#include <tuple>

#include "common/errors.h"
#include "common/hermite.h"
#include "host/core/parallel.h"
#include "host/core/timer.h"
#include "host/g6/g6lib.h"

namespace octwalk {

namespace {

/// Ticks of one sync interval: the longest step.
constexpr int64_t kIntervalTicks = int64_t(1) << kHermiteTickBits;

double norm(const Vec3d& v) { return std::sqrt(dot(v, v)); }

bool isFinite(const Vec3d& v) { return std::isfinite(v.x) && std::isfinite(v.y) && std::isfinite(v.z); }

void toArray(const Vec3d& v, double out[3])
{
    out[0] = v.x;
    out[1] = v.y;
    out[2] = v.z;
}

Vec3d fromArray(const double in[3]) { return {in[0], in[1], in[2]}; }

/// A value as a message shows it: enough digits to tell it from its neighbours in the limits it meets.
std::string shortText(double v)
{
    std::ostringstream s;
    s.precision(9);
    s << v;
    return s.str();
}

std::string bodyName(int64_t i, const ParticleSet& s)
{
    return "body " + std::to_string(i) + " (id " + std::to_string(s.id[i]) + ")";
}

/// The library's j-particle predictor (common/hermite.h), used for the i-particles too, so that a body is
/// predicted to the same bits as an i-particle and as the library's j-particle.
void predict(const Vec3d& x, const Vec3d& v, const Vec3d& a, const Vec3d& j, const Vec3d& s, double dt, Vec3d& xp,
             Vec3d& vp)
{
    const Vec3d a2 = 0.5 * a, j6 = (1.0 / 6) * j, k18 = (1.0 / 18) * s;
    predictCoordinate(dt, x.x, v.x, a2.x, j6.x, k18.x, xp.x, vp.x);
    predictCoordinate(dt, x.y, v.y, a2.y, j6.y, k18.y, xp.y, vp.y);
    predictCoordinate(dt, x.z, v.z, a2.z, j6.z, k18.z, xp.z, vp.z);
}

/// Snap and crackle at the start of a step of length dt from the acceleration and jerk at both ends (the
/// Hermite interpolation, Makino & Aarseth 1992).
void interpolatedDerivatives(const Vec3d& a0, const Vec3d& j0, const Vec3d& a1, const Vec3d& j1, double dt, Vec3d& snap,
                             Vec3d& crackle)
{
    const Vec3d da = a0 - a1;
    snap           = (1 / (dt * dt)) * (-6.0 * da - dt * (4.0 * j0 + 2.0 * j1));
    crackle        = (1 / (dt * dt * dt)) * (12.0 * da + (6.0 * dt) * (j0 + j1));
}

struct EnergySums
{
    double kinetic = 0, potential = 0;
    Vec3d momentum{0, 0, 0}, angularMomentum{0, 0, 0};

    EnergySums& operator+=(const EnergySums& o)
    {
        kinetic += o.kinetic;
        potential += o.potential;
        momentum += o.momentum;
        angularMomentum += o.angularMomentum;
        return *this;
    }
};

} // namespace

void validate(const HermiteSettings& s)
{
    auto check = [](const char* name, double v, bool ok, const char* range) {
        if (!ok)
        {
            std::ostringstream m;
            m << "parameter " << name << " = " << v << " is invalid: must be " << range;
            throw ParameterError(m.str());
        }
    };
    check("eta", s.eta, s.eta > 0 && s.eta <= 1, "in (0, 1]");
    check("eta_start", s.etaStart, s.etaStart > 0 && s.etaStart <= 1, "in (0, 1]");
    check("dt_max", s.dtMax, s.dtMax > 0 && std::isfinite(s.dtMax), "finite and > 0");
}

HermiteIntegrator::HermiteIntegrator(ParticleSet initial, const Parameters& p, const HermiteSettings& settings,
                                     StepPlan plan)
    : state_(std::move(initial)), params_(p), settings_(settings), plan_(plan)
{
    validate(params_);
    validate(settings_);
    if (!(plan_.h > 0) || plan_.h > settings_.dtMax * (1 + 1e-12) || plan_.numSteps < 1)
    {
        throw ParameterError("hermite: the sync interval " + std::to_string(plan_.h) +
                             " must be in (0, dt_max = " + std::to_string(settings_.dtMax) + "]");
    }
    checkBodies();
    const int64_t n = state_.size();
    acc_.assign(n, Vec3d{0, 0, 0});
    jerk_.assign(n, Vec3d{0, 0, 0});
    snap_.assign(n, Vec3d{0, 0, 0});
    pot_.assign(n, 0.0);
    timeTicks_.assign(n, 0);
    stepTicks_.assign(n, kIntervalTicks);
    state_.time = time();
    open();
    initialForces();
    initialEnergy_ = diagnostics().total;
}

void HermiteIntegrator::open()
{
    cluster_.open();
    pipes_ = g6_npipes();
    if (pipes_ < 1) throw BackendError("hermite: g6_npipes() = " + std::to_string(pipes_) + ", must be >= 1");
}

void HermiteIntegrator::checkBodies() const
{
    const int64_t n = state_.size();
    if (n < 2 || n > INT_MAX)
    {
        throw InputError("hermite: " + std::to_string(n) + " bodies; the GRAPE-6 API takes 2 to 2^31 - 1");
    }
    // Direct summation over the bodies themselves: no periodic images, no expansion of the universe.
    if (params_.box_size > 0 || state_.boxSize > 0)
    {
        throw InputError("hermite: the bodies live in a periodic box of side " +
                         shortText(std::max(params_.box_size, state_.boxSize)) +
                         "; hermite integrates isolated systems only (octwalk run integrates periodic boxes)");
    }
    if (state_.cosmology)
    {
        throw InputError("hermite: the bodies are a cosmological set (comoving positions, time = a " +
                         shortText(state_.time) +
                         "); hermite integrates isolated systems only (octwalk run --comoving)");
    }
    if (int64_t(state_.vel.size()) != n || int64_t(state_.mass.size()) != n || int64_t(state_.id.size()) != n)
    {
        throw InputError("hermite: " + std::to_string(n) + " positions but " + std::to_string(state_.vel.size()) +
                         " velocities, " + std::to_string(state_.mass.size()) + " masses");
    }
    for (int64_t i = 0; i < n; ++i)
    {
        if (!isFinite(state_.pos[i])) throw InputError(bodyName(i, state_) + ": position is not finite");
        if (!isFinite(state_.vel[i])) throw InputError(bodyName(i, state_) + ": velocity is not finite");
        if (!(state_.mass[i] > 0) || !std::isfinite(state_.mass[i]))
        {
            throw InputError(bodyName(i, state_) + ": mass " + std::to_string(state_.mass[i]) +
                             " must be finite and > 0");
        }
    }
    if (params_.epsilon_squared > 0) return;
    // Without softening two bodies at one place have no force between them: refused, not integrated.
    std::vector<int64_t> order(n);
    for (int64_t i = 0; i < n; ++i) order[i] = i;
    auto key = [this](int64_t i) { return std::make_tuple(state_.pos[i].x, state_.pos[i].y, state_.pos[i].z, i); };
    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return key(a) < key(b); });
    for (int64_t k = 1; k < n; ++k)
    {
        const Vec3d &a = state_.pos[order[k - 1]], &b = state_.pos[order[k]];
        if (a.x == b.x && a.y == b.y && a.z == b.z)
        {
            const int64_t first = std::min(order[k - 1], order[k]), second = std::max(order[k - 1], order[k]);
            throw InputError(bodyName(second, state_) + " is at the position of " + bodyName(first, state_) +
                             " and epsilon = 0: their force is singular");
        }
    }
}

void HermiteIntegrator::checkStepTicks() const
{
    for (int64_t i = 0; i < state_.size(); ++i)
    {
        const int64_t s = stepTicks_[i];
        if (s < 1 || s > kIntervalTicks || (s & (s - 1)) != 0)
        {
            throw FormatError("checkpoint: " + bodyName(i, state_) + " has step " + std::to_string(s) +
                              " ticks, not a power of two in [1, 2^" + std::to_string(kHermiteTickBits) + "]");
        }
    }
}

double HermiteIntegrator::tickSeconds() const { return std::ldexp(plan_.h, -kHermiteTickBits); }

double HermiteIntegrator::tau(int64_t ticks) const { return plan_.h * std::ldexp(double(ticks), -kHermiteTickBits); }

void HermiteIntegrator::uploadBody(int64_t i, double tj)
{
    double k18[3], j6[3], a2[3], v[3], x[3];
    toArray((1.0 / 18) * snap_[i], k18);
    toArray((1.0 / 6) * jerk_[i], j6);
    toArray(0.5 * acc_[i], a2);
    toArray(state_.vel[i], v);
    toArray(state_.pos[i], x);
    const double m = params_.gravitational_constant * state_.mass[i];
    if (g6_set_j_particle(cluster_.id(), int(i), int(i), tj, tau(stepTicks_[i]), m, k18, j6, a2, v, x) != 0)
    {
        throw BackendError("hermite: g6_set_j_particle refused " + bodyName(i, state_));
    }
}

void HermiteIntegrator::uploadAll()
{
    Stopwatch clock;
    for (int64_t i = 0; i < state_.size(); ++i) uploadBody(i, 0.0);
    std::fill(timeTicks_.begin(), timeTicks_.end(), 0);
    libraryTime_ = 0;
    librarySeconds_ += clock.lap();
}

void HermiteIntegrator::evaluate(const std::vector<int>& bodies, double ti, const std::vector<Vec3d>& xi,
                                 const std::vector<Vec3d>& vi, std::vector<Vec3d>& acc, std::vector<Vec3d>& jerk,
                                 std::vector<double>& pot)
{
    const int nj = int(state_.size());
    const int n  = int(bodies.size());
    acc.resize(n);
    jerk.resize(n);
    pot.resize(n);
    if (g6_set_ti(cluster_.id(), ti) != 0) throw BackendError("hermite: g6_set_ti(" + std::to_string(ti) + ") failed");
    std::vector<int> index(pipes_);
    std::vector<double> x(3 * pipes_), v(3 * pipes_), aOld(3 * pipes_), j6Old(3 * pipes_), phiOld(pipes_),
        h2(pipes_, 0.0), a(3 * pipes_), j(3 * pipes_), phi(pipes_);
    auto rows = [](std::vector<double>& b) { return reinterpret_cast<double(*)[3]>(b.data()); };
    for (int first = 0; first < n; first += pipes_)
    {
        const int ni = std::min(pipes_, n - first);
        for (int k = 0; k < ni; ++k)
        {
            const int i = bodies[first + k];
            index[k]    = i;
            toArray(xi[first + k], &x[3 * k]);
            toArray(vi[first + k], &v[3 * k]);
            toArray(acc_[i], &aOld[3 * k]);
            toArray((1.0 / 6) * jerk_[i], &j6Old[3 * k]);
            phiOld[k] = pot_[i];
        }
        g6calc_firsthalf(cluster_.id(), nj, ni, index.data(), rows(x), rows(v), rows(aOld), rows(j6Old), phiOld.data(),
                         params_.epsilon_squared, h2.data());
        const int rc = g6calc_lasthalf(cluster_.id(), nj, ni, index.data(), rows(x), rows(v), params_.epsilon_squared,
                                       h2.data(), rows(a), rows(j), phi.data());
        if (rc != 0)
        {
            throw BackendError("hermite: g6calc_lasthalf returned " + std::to_string(rc) + " for bodies " +
                               std::to_string(bodies[first]) + " to " + std::to_string(bodies[first + ni - 1]));
        }
        for (int k = 0; k < ni; ++k)
        {
            acc[first + k]  = fromArray(&a[3 * k]);
            jerk[first + k] = fromArray(&j[3 * k]);
            pot[first + k]  = phi[k];
        }
    }
}

void HermiteIntegrator::initialForces()
{
    const int64_t n = state_.size();
    Stopwatch clock;
    for (int64_t i = 0; i < n; ++i) uploadBody(i, 0.0);
    std::vector<int> all(n);
    for (int64_t i = 0; i < n; ++i) all[i] = int(i);
    evaluate(all, 0.0, state_.pos, state_.vel, acc_, jerk_, pot_);
    const double forces = clock.lap();
    double library      = forces;
    for (int64_t i = 0; i < n; ++i) stepTicks_[i] = firstStep(i);
    startDerivatives(library);
    librarySeconds_ += library;
    integrationSeconds_ += forces + clock.lap();
}

void HermiteIntegrator::startDerivatives(double& librarySeconds)
{
    // A trial step of eta_start's length from every body gives its snap and crackle at the start (one
    // evaluation per step length, N bodies in all): the first predictor then has the snap, and the first
    // step is also held to Aarseth's criterion, so that a body whose jerk happens to be small does not
    // take a first step far longer than its orbit allows.
    const int64_t n = state_.size();
    Stopwatch clock;
    for (int64_t i = 0; i < n; ++i) uploadBody(i, 0.0);
    std::vector<int64_t> lengths(stepTicks_);
    std::sort(lengths.begin(), lengths.end());
    lengths.erase(std::unique(lengths.begin(), lengths.end()), lengths.end());
    std::vector<int> group;
    std::vector<Vec3d> xp, vp, a1, j1;
    std::vector<double> pot1;
    for (int64_t length : lengths)
    {
        group.clear();
        for (int64_t i = 0; i < n; ++i)
            if (stepTicks_[i] == length) group.push_back(int(i));
        const double dt = tau(length);
        xp.resize(group.size());
        vp.resize(group.size());
        for (size_t k = 0; k < group.size(); ++k)
        {
            const int i = group[k];
            predict(state_.pos[i], state_.vel[i], acc_[i], jerk_[i], snap_[i], dt, xp[k], vp[k]);
        }
        clock.lap();
        evaluate(group, dt, xp, vp, a1, j1, pot1);
        librarySeconds += clock.lap();
        for (size_t k = 0; k < group.size(); ++k)
        {
            const int i = group[k];
            Vec3d crackle;
            interpolatedDerivatives(acc_[i], jerk_[i], a1[k], j1[k], dt, snap_[i], crackle);
            stepTicks_[i] = std::min(stepTicks_[i], quantise(i, aarsethStep(i, crackle), kIntervalTicks, 0));
        }
    }
}

int64_t HermiteIntegrator::quantise(int64_t i, double wanted, int64_t current, int64_t time) const
{
    const double w = wanted / tickSeconds();
    if (!(w >= 1)) throw InputError(stepTooShort(i, wanted, time));
    int64_t s = current;
    while (double(s) > w) s >>= 1;
    const int64_t doubled = 2 * s;
    if (s == current && double(doubled) <= w && doubled <= kIntervalTicks && time % doubled == 0) s = doubled;
    return s;
}

std::string HermiteIntegrator::stepTooShort(int64_t i, double wanted, int64_t time) const
{
    std::ostringstream m;
    m.precision(4);
    m << bodyName(i, state_)
      << " at t = " << plan_.t0 + (double(interval_) + std::ldexp(double(time), -kHermiteTickBits)) * plan_.h << ": ";
    const double a = norm(acc_[i]), j = norm(jerk_[i]), s = norm(snap_[i]), v = norm(state_.vel[i]);
    if (!std::isfinite(wanted))
    {
        // Aarseth's criterion multiplies the derivatives: forces near double's range overflow it.
        m << "its step is not a number: Aarseth's criterion overflows double precision (|a| = " << a
          << ", |jerk| = " << j << ", |snap| = " << s << ") with G = " << params_.gravitational_constant
          << "; rescale the units so that G, the masses and the lengths give forces far inside double's range";
        return m.str();
    }
    m << "its step " << wanted << " is below h / 2^" << kHermiteTickBits << " = " << tickSeconds() << " (|v| = " << v
      << ", |a| = " << a << ", |jerk| = " << j << "): ";
    // A body far faster than the others crosses the system in a few steps: its inputs, not the softening,
    // are the likely cause.
    std::vector<double> speeds(size_t(state_.size()));
    for (int64_t k = 0; k < state_.size(); ++k) speeds[size_t(k)] = norm(state_.vel[k]);
    std::nth_element(speeds.begin(), speeds.begin() + speeds.size() / 2, speeds.end());
    const double median = speeds[speeds.size() / 2];
    if (v > 100 * median)
    {
        m << "its speed is " << (median > 0 ? v / median : HUGE_VAL) << " times the bodies' median speed " << median
          << ": check the input's velocities (and their units)";
    }
    else
    {
        m << "a close encounter the softening does not resolve (epsilon = " << std::sqrt(params_.epsilon_squared)
          << "): a larger epsilon helps";
    }
    return m.str();
}

int64_t HermiteIntegrator::firstStep(int64_t i) const
{
    const double j      = norm(jerk_[i]);
    const double wanted = j > 0 ? settings_.etaStart * norm(acc_[i]) / j : HUGE_VAL;
    return quantise(i, wanted, kIntervalTicks, 0);
}

double HermiteIntegrator::aarsethStep(int64_t i, const Vec3d& crackle) const
{
    const double a = norm(acc_[i]), j = norm(jerk_[i]), s = norm(snap_[i]), c = norm(crackle);
    const double numerator = a * s + j * j, denominator = j * c + s * s;
    return denominator > 0 ? std::sqrt(settings_.eta * numerator / denominator) : HUGE_VAL;
}

int64_t HermiteIntegrator::nextBlock(std::vector<int>& active)
{
    // The earliest end of a step and its bodies, in body order (the order of the library calls and of
    // the error messages); O(block) per block instead of a pass over all bodies.
    auto first          = schedule_.begin();
    const int64_t block = first->first;
    active.swap(first->second);
    schedule_.erase(first);
    std::sort(active.begin(), active.end());
    return block;
}

void HermiteIntegrator::blockStep(int64_t blockTicks, const std::vector<int>& active)
{
    const int64_t na = int64_t(active.size());
    const double t1  = tau(blockTicks);
    std::vector<Vec3d> xp(na), vp(na), a1, j1;
    std::vector<double> pot1;
#pragma omp parallel for schedule(static) if (na > 256)
    for (int64_t k = 0; k < na; ++k)
    {
        const int i = active[k];
        predict(state_.pos[i], state_.vel[i], acc_[i], jerk_[i], snap_[i], t1 - tau(timeTicks_[i]), xp[k], vp[k]);
    }
    Stopwatch clock;
    evaluate(active, t1, xp, vp, a1, j1, pot1);
    librarySeconds_ += clock.lap();

    // Each body is corrected on its own, so the loop is the same for any thread count; a body whose
    // state is not finite is reported after it (the first in body order), as an exception cannot leave it.
    std::vector<char> bad(na, 0);
    std::vector<double> wanted(na);
#pragma omp parallel for schedule(static) if (na > 256)
    for (int64_t k = 0; k < na; ++k)
    {
        const int i     = active[k];
        const double dt = t1 - tau(timeTicks_[i]);
        const Vec3d x0 = state_.pos[i], v0 = state_.vel[i], a0 = acc_[i], j0 = jerk_[i];
        Vec3d a2, a3;
        interpolatedDerivatives(a0, j0, a1[k], j1[k], dt, a2, a3);
        state_.pos[i] =
            x0 + dt * (v0 + dt * ((1.0 / 2) * a0 +
                                  dt * ((1.0 / 6) * j0 + dt * ((1.0 / 24) * a2 + dt * ((1.0 / 120) * a3)))));
        state_.vel[i] = v0 + dt * (a0 + dt * ((1.0 / 2) * j0 + dt * ((1.0 / 6) * a2 + dt * ((1.0 / 24) * a3))));
        acc_[i]       = a1[k];
        jerk_[i]      = j1[k];
        snap_[i]      = a2 + dt * a3;
        pot_[i]       = pot1[k];
        wanted[k]     = aarsethStep(i, a3);
        bad[k]        = !isFinite(state_.pos[i]) || !isFinite(state_.vel[i]) || !isFinite(snap_[i]);
    }
    for (int64_t k = 0; k < na; ++k)
    {
        if (bad[k])
        {
            throw InputError(
                bodyName(active[k], state_) +
                " has a non-finite position, velocity or snap after its step to t = " + std::to_string(time() + t1));
        }
    }
    // Serial: quantise throws for the first body (in body order) whose step underflows.
    for (int64_t k = 0; k < na; ++k)
    {
        const int i   = active[k];
        stepTicks_[i] = quantise(i, wanted[k], stepTicks_[i], blockTicks);
        timeTicks_[i] = blockTicks;
        if (blockTicks < kIntervalTicks) schedule_[blockTicks + stepTicks_[i]].push_back(i);
    }
    clock.lap();
    for (int64_t k = 0; k < na; ++k) uploadBody(active[k], t1);
    librarySeconds_ += clock.lap();
    ++counts_.blockSteps;
    counts_.bodySteps += na;
}

void HermiteIntegrator::advanceInterval()
{
    if (done()) return;
    Stopwatch clock;
    // Every body starts the interval at time 0: the library's j-particles are given again from there,
    // so times stay exact integers of ticks however long the run (and a restart gives the same).
    uploadAll();
    schedule_.clear();
    for (int64_t i = 0; i < state_.size(); ++i) schedule_[stepTicks_[i]].push_back(int(i));
    std::vector<int> active;
    int64_t block = 0;
    while (block < kIntervalTicks)
    {
        block = nextBlock(active);
        blockStep(block, active);
    }
    ++interval_;
    libraryTime_ = plan_.h;
    state_.time  = time();
    integrationSeconds_ += clock.lap();
}

void HermiteIntegrator::extendTo(double tEnd)
{
    const double intervals = (tEnd - plan_.t0) / plan_.h;
    const double whole     = std::round(intervals);
    if (!std::isfinite(tEnd) || !(whole >= double(interval_)) || whole > 1e12 ||
        std::fabs(intervals - whole) > 1e-9 * std::max(1.0, whole) || whole < 1)
    {
        throw ParameterError("parameter t_end = " + std::to_string(tEnd) + " is invalid for this restart: it must be " +
                             "t0 + k h with h = " + std::to_string(plan_.h) + " and k >= " + std::to_string(interval_));
    }
    plan_.numSteps = int64_t(whole);
}

double HermiteIntegrator::shortestStep() const { return tau(*std::min_element(stepTicks_.begin(), stepTicks_.end())); }

double HermiteIntegrator::longestStep() const { return tau(*std::max_element(stepTicks_.begin(), stepTicks_.end())); }

HermiteDiagnostics HermiteIntegrator::diagnostics()
{
    const int64_t n = state_.size();
    std::vector<int> all(n);
    for (int64_t i = 0; i < n; ++i) all[i] = int(i);
    // All j-particles are given at libraryTime_ (synchronised), so predicting them there is exact.
    std::vector<Vec3d> a, j;
    std::vector<double> pot;
    evaluate(all, libraryTime_, state_.pos, state_.vel, a, j, pot);
    const EnergySums s = deterministicSum<EnergySums>(n, [&](int64_t i) {
        EnergySums b;
        const double m    = state_.mass[i];
        const Vec3d& x    = state_.pos[i];
        const Vec3d& v    = state_.vel[i];
        b.kinetic         = 0.5 * m * dot(v, v);
        b.potential       = 0.5 * m * pot[i];
        b.momentum        = m * v;
        b.angularMomentum = m * Vec3d{x.y * v.z - x.z * v.y, x.z * v.x - x.x * v.z, x.x * v.y - x.y * v.x};
        return b;
    });
    HermiteDiagnostics d;
    d.time                = time();
    d.kinetic             = s.kinetic;
    d.potential           = s.potential;
    d.total               = s.kinetic + s.potential;
    d.momentum            = s.momentum;
    d.angularMomentum     = s.angularMomentum;
    d.relativeEnergyError = initialEnergy_ != 0 ? (d.total - initialEnergy_) / std::fabs(initialEnergy_) : 0.0;
    d.virialRatio         = d.potential != 0 ? 2 * d.kinetic / std::fabs(d.potential) : 0.0;
    return d;
}

} // namespace octwalk
