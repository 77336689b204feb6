#include "host/sim/simulation.h"

#include <algorithm>
#include <cmath>
#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/errors.h"
#include "host/io/atomic_file.h"

namespace octwalk {

namespace {

constexpr char kCheckpointMagic[16] = "OCTWALK-CKPT-v1";

/// FNV-1a over the payload, so a damaged checkpoint is refused instead of silently resumed.
uint64_t fnv1a(const std::string& bytes)
{
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : bytes)
    {
        h ^= c;
        h *= 1099511628211ull;
    }
    return h;
}

template<class T>
void put(std::string& out, const T& v)
{
    out.append(reinterpret_cast<const char*>(&v), sizeof(T));
}

template<class T>
void putArray(std::string& out, const std::vector<T>& v)
{
    out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

/// Reads fields from a checkpoint image, naming the field and offset on any shortfall.
class Reader
{
public:
    Reader(const std::string& path, const std::string& bytes) : path_(path), bytes_(bytes) {}

    template<class T>
    T get(const char* field)
    {
        need(sizeof(T), field);
        T v;
        std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }

    template<class T>
    void getArray(std::vector<T>& v, int64_t n, const char* field)
    {
        need(size_t(n) * sizeof(T), field);
        v.resize(n);
        std::memcpy(v.data(), bytes_.data() + pos_, size_t(n) * sizeof(T));
        pos_ += size_t(n) * sizeof(T);
    }

    size_t offset() const { return pos_; }

private:
    void need(size_t n, const char* field)
    {
        if (bytes_.size() - pos_ < n)
        {
            throw FormatError("checkpoint '" + path_ + "': file ends inside field " + field + " at byte offset " +
                              std::to_string(pos_));
        }
    }

    const std::string& path_;
    const std::string& bytes_;
    size_t pos_ = 0;
};

} // namespace

std::vector<double> lagrangianRadii(const ParticleSet& p, const std::vector<double>& fractions)
{
    double m = 0;
    Vec3d c{0, 0, 0};
    for (int64_t i = 0; i < p.size(); ++i)
    {
        m += p.mass[i];
        c += p.mass[i] * p.pos[i];
    }
    if (m > 0) c = (1 / m) * c;
    std::vector<std::pair<double, double>> rm(p.size());
    for (int64_t i = 0; i < p.size(); ++i)
    {
        Vec3d d = p.pos[i] - c;
        rm[i] = {std::sqrt(dot(d, d)), p.mass[i]};
    }
    std::sort(rm.begin(), rm.end());
    std::vector<double> radii(fractions.size(), rm.empty() ? 0.0 : rm.back().first);
    double cumulative = 0;
    size_t next = 0;
    for (const auto& [r, mi] : rm)
    {
        cumulative += mi;
        while (next < fractions.size() && cumulative >= fractions[next] * m) radii[next++] = r;
    }
    return radii;
}

StepPlan planSteps(double t0, double tEnd, double timestep)
{
    if (!(timestep > 0) || !std::isfinite(timestep))
    {
        throw ParameterError("parameter timestep = " + std::to_string(timestep) + " is invalid: must be finite and > 0");
    }
    if (!(tEnd > t0) || !std::isfinite(tEnd))
    {
        throw ParameterError("parameter t_end = " + std::to_string(tEnd) + " is invalid: must be finite and after the "
                             "start time " + std::to_string(t0));
    }
    double steps = std::ceil((tEnd - t0) / timestep * (1 - 1e-12));
    if (steps > 1e12) throw ParameterError("t_end / timestep needs more than 1e12 steps");
    StepPlan plan;
    plan.t0       = t0;
    plan.numSteps = std::max<int64_t>(1, int64_t(steps));
    plan.h        = (tEnd - t0) / double(plan.numSteps);
    return plan;
}

Simulation::Simulation(ParticleSet initial, const Parameters& p, StepPlan plan, ForceOptions forces)
    : state_(std::move(initial)), params_(p), plan_(plan), forces_(forces), solver_(p)
{
    if (int64_t(state_.vel.size()) != state_.size())
    {
        throw InputError("simulation: " + std::to_string(state_.size()) + " positions but " +
                         std::to_string(state_.vel.size()) + " velocities");
    }
    for (int64_t i = 0; i < state_.size(); ++i)
    {
        const Vec3d& v = state_.vel[i];
        if (!std::isfinite(v.x) || !std::isfinite(v.y) || !std::isfinite(v.z))
        {
            throw InputError("body " + std::to_string(i) + ": velocity is not finite");
        }
    }
    computeForces();
    initialEnergy_ = diagnostics().total;
}

void Simulation::computeForces()
{
    solver_.setBodies(state_.pos, state_.mass, state_.id);
    if (forces_.direct) solver_.computeDirect({}, acc_, pot_);
    else solver_.computeForces(acc_, pot_);
    if (forces_.zeroNetForce) removeNetForce();
}

void Simulation::removeNetForce()
{
    double m = 0;
    Vec3d force{0, 0, 0};
    for (int64_t i = 0; i < state_.size(); ++i)
    {
        m += state_.mass[i];
        force += state_.mass[i] * acc_[i];
    }
    if (!(m > 0)) return;
    Vec3d mean = (1 / m) * force;
    for (auto& a : acc_) a = a - mean;
}

void Simulation::step()
{
    double h = plan_.h;
    int64_t n = state_.size();
    for (int64_t i = 0; i < n; ++i)
    {
        state_.vel[i] += (0.5 * h) * acc_[i];
        state_.pos[i] += h * state_.vel[i];
    }
    computeForces();
    for (int64_t i = 0; i < n; ++i) state_.vel[i] += (0.5 * h) * acc_[i];
    ++step_;
    state_.time = time();
    for (int64_t i = 0; i < n; ++i)
    {
        const Vec3d& x = state_.pos[i];
        if (!std::isfinite(x.x + x.y + x.z + state_.vel[i].x + state_.vel[i].y + state_.vel[i].z))
        {
            throw InputError("body " + std::to_string(i) + " (id " + std::to_string(state_.id[i]) +
                             ") has a non-finite position or velocity after step " + std::to_string(step_) +
                             ": the timestep is too large for the softening");
        }
    }
}

void Simulation::extendTo(double tEnd)
{
    double steps = (tEnd - plan_.t0) / plan_.h;
    double whole = std::round(steps);
    if (!(whole >= double(step_)) || std::fabs(steps - whole) > 1e-9 * std::max(1.0, whole))
    {
        throw ParameterError("parameter t_end = " + std::to_string(tEnd) + " is invalid for this restart: it must be " +
                             "t0 + k h with h = " + std::to_string(plan_.h) + " and k >= " + std::to_string(step_));
    }
    plan_.numSteps = int64_t(whole);
}

Diagnostics Simulation::diagnostics() const
{
    Diagnostics d;
    d.time = time();
    double m = 0;
    for (int64_t i = 0; i < state_.size(); ++i)
    {
        double mi = state_.mass[i];
        const Vec3d& x = state_.pos[i];
        const Vec3d& v = state_.vel[i];
        m += mi;
        d.kinetic += 0.5 * mi * dot(v, v);
        d.potential += 0.5 * mi * pot_[i];
        d.comPos += mi * x;
        d.momentum += mi * v;
        d.angularMomentum += mi * Vec3d{x.y * v.z - x.z * v.y, x.z * v.x - x.x * v.z, x.x * v.y - x.y * v.x};
    }
    if (m > 0)
    {
        d.comPos = (1 / m) * d.comPos;
        d.comVel = (1 / m) * d.momentum;
    }
    d.total = d.kinetic + d.potential;
    d.relativeEnergyError = initialEnergy_ != 0 ? (d.total - initialEnergy_) / std::fabs(initialEnergy_) : 0.0;
    d.virialRatio = d.potential != 0 ? 2 * d.kinetic / std::fabs(d.potential) : 0.0;
    return d;
}

void Simulation::writeCheckpoint(const std::string& path, const std::string& extra) const
{
    std::string body;
    body.append(kCheckpointMagic, sizeof(kCheckpointMagic));
    int64_t n = state_.size();
    put(body, n);
    put(body, step_);
    put(body, plan_.numSteps);
    put(body, plan_.t0);
    put(body, plan_.h);
    put(body, initialEnergy_);
    put(body, params_.opening_angle);
    put(body, params_.epsilon_squared);
    put(body, params_.gravitational_constant);
    put(body, int32_t(params_.n_leaf));
    put(body, int32_t(params_.n_group));
    put(body, int32_t(params_.mac));
    put(body, int32_t(params_.use_quadrupole));
    put(body, int32_t(params_.merge_groups));
    put(body, int32_t(params_.backend));
    put(body, int32_t(forces_.direct));
    put(body, int32_t(forces_.zeroNetForce));
    putArray(body, state_.pos);
    putArray(body, state_.vel);
    putArray(body, state_.mass);
    putArray(body, state_.id);
    put(body, uint64_t(extra.size()));
    body += extra;
    put(body, fnv1a(body));

    writeFileAtomically(path, body, Existing::KeepAsPrev);
}

Simulation Simulation::fromCheckpoint(const std::string& path, std::string* extra)
{
    std::ifstream f(path, std::ios::binary);
    if (!f) throw FormatError("checkpoint '" + path + "' cannot be opened");
    std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (bytes.size() < sizeof(kCheckpointMagic) + 8 ||
        std::memcmp(bytes.data(), kCheckpointMagic, sizeof(kCheckpointMagic)) != 0)
    {
        throw FormatError("checkpoint '" + path + "': bad magic at byte offset 0 (not an octwalk checkpoint)");
    }
    uint64_t stored;
    std::memcpy(&stored, bytes.data() + bytes.size() - 8, 8);
    if (stored != fnv1a(bytes.substr(0, bytes.size() - 8)))
    {
        throw FormatError("checkpoint '" + path + "': checksum at byte offset " + std::to_string(bytes.size() - 8) +
                          " does not match the contents (damaged or truncated file)");
    }
    Reader r(path, bytes);
    r.get<std::array<char, 16>>("magic");
    int64_t n = r.get<int64_t>("N");
    size_t perBody = 3 * 8 + 3 * 8 + 8 + 8;
    if (n < 2 || size_t(n) > bytes.size() / perBody)
    {
        throw FormatError("checkpoint '" + path + "': field N = " + std::to_string(n) +
                          " at byte offset 16 does not match the file size " + std::to_string(bytes.size()));
    }
    int64_t step = r.get<int64_t>("step");
    StepPlan plan;
    plan.numSteps = r.get<int64_t>("numSteps");
    plan.t0       = r.get<double>("t0");
    plan.h        = r.get<double>("h");
    double e0     = r.get<double>("E0");
    Parameters p;
    p.opening_angle          = r.get<double>("opening_angle");
    p.epsilon_squared        = r.get<double>("epsilon_squared");
    p.gravitational_constant = r.get<double>("gravitational_constant");
    p.n_leaf                 = r.get<int32_t>("n_leaf");
    p.n_group                = r.get<int32_t>("n_group");
    p.mac                    = Mac(r.get<int32_t>("mac"));
    p.use_quadrupole         = r.get<int32_t>("use_quadrupole") != 0;
    p.merge_groups           = r.get<int32_t>("merge_groups") != 0;
    p.backend                = Backend(r.get<int32_t>("backend"));
    ForceOptions forces;
    forces.direct       = r.get<int32_t>("direct") != 0;
    forces.zeroNetForce = r.get<int32_t>("zero_net_force") != 0;
    ParticleSet s;
    r.getArray(s.pos, n, "positions");
    r.getArray(s.vel, n, "velocities");
    r.getArray(s.mass, n, "masses");
    r.getArray(s.id, n, "ids");
    uint64_t extraSize = r.get<uint64_t>("settings length");
    if (extraSize > bytes.size())
    {
        throw FormatError("checkpoint '" + path + "': settings length " + std::to_string(extraSize) +
                          " at byte offset " + std::to_string(r.offset() - 8) + " exceeds the file size");
    }
    std::vector<char> settings;
    r.getArray(settings, int64_t(extraSize), "settings");
    if (extra) extra->assign(settings.begin(), settings.end());
    if (r.offset() + 8 != bytes.size())
    {
        throw FormatError("checkpoint '" + path + "': " + std::to_string(bytes.size() - r.offset() - 8) +
                          " unexpected bytes at byte offset " + std::to_string(r.offset()));
    }
    if (step < 0 || step > plan.numSteps || !(plan.h > 0))
    {
        throw FormatError("checkpoint '" + path + "': step " + std::to_string(step) + " of " +
                          std::to_string(plan.numSteps) + " is inconsistent");
    }
    s.time = plan.t0 + double(step) * plan.h;
    Simulation sim(std::move(s), p, plan, forces);
    sim.step_          = step;
    sim.initialEnergy_ = e0;
    return sim;
}

} // namespace octwalk
