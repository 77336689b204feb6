#include "host/sim/hermite.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <utility>

#include "common/errors.h"
#include "host/core/timer.h"
#include "host/io/checkpoint.h"

namespace octwalk {

namespace {

/// First line of the integrator's part of a checkpoint.
constexpr const char* kCheckpointTag = "octwalk-hermite 1";

std::string hexDouble(double v)
{
    char b[40];
    std::snprintf(b, sizeof(b), "%a", v);
    return b;
}

double parseDouble(const std::string& token, const std::string& path)
{
    char* end = nullptr;
    double v  = std::strtod(token.c_str(), &end);
    if (token.empty() || *end != '\0')
    {
        throw FormatError("checkpoint '" + path + "': integrator setting '" + token + "' is not a number");
    }
    return v;
}

/// Bytes per body of the integrator's state in a checkpoint: acc, jerk, snap (9 doubles), potential,
/// step in ticks.
constexpr size_t kBodyRecord = 10 * sizeof(double) + sizeof(int64_t);

} // namespace

struct HermiteIntegrator::Restored
{
    CheckpointImage image;
    HermiteSettings settings;
    HermiteCounts counts;
    std::vector<Vec3d> acc, jerk, snap;
    std::vector<double> pot;
    std::vector<int64_t> steps;
};

HermiteIntegrator::HermiteIntegrator(Restored&& r)
    : state_(std::move(r.image.state)), params_(r.image.parameters), settings_(r.settings), counts_(r.counts),
      acc_(std::move(r.acc)), jerk_(std::move(r.jerk)), snap_(std::move(r.snap)), pot_(std::move(r.pot)),
      stepTicks_(std::move(r.steps))
{
    validate(params_);
    validate(settings_);
    plan_.t0       = r.image.t0;
    plan_.h        = r.image.h;
    plan_.numSteps = r.image.numSteps;
    interval_      = r.image.step;
    initialEnergy_ = r.image.initialEnergy;
    state_.time    = time();
    checkBodies();
    timeTicks_.assign(state_.size(), 0);
    checkStepTicks();
    open();
    Stopwatch clock;
    uploadAll();
    integrationSeconds_ += clock.lap();
}

void HermiteIntegrator::writeCheckpoint(const std::string& path, const RunSettings& rs) const
{
    CheckpointImage c;
    c.state           = state_;
    c.step            = interval_;
    c.numSteps        = plan_.numSteps;
    c.t0              = plan_.t0;
    c.h               = plan_.h;
    c.initialEnergy   = initialEnergy_;
    c.parameters      = params_;
    c.direct          = true;
    std::string extra = std::string(kCheckpointTag) + "\n" + rs.encode() + "\n" + hexDouble(settings_.eta) + " " +
                        hexDouble(settings_.etaStart) + " " + hexDouble(settings_.dtMax) + " " +
                        std::to_string(counts_.blockSteps) + " " + std::to_string(counts_.bodySteps) + "\n";
    const size_t head = extra.size();
    extra.resize(head + kBodyRecord * size_t(state_.size()));
    char* out = &extra[head];
    for (int64_t i = 0; i < state_.size(); ++i)
    {
        const double values[10] = {acc_[i].x,  acc_[i].y,  acc_[i].z,  jerk_[i].x, jerk_[i].y,
                                   jerk_[i].z, snap_[i].x, snap_[i].y, snap_[i].z, pot_[i]};
        std::memcpy(out, values, sizeof(values));
        std::memcpy(out + sizeof(values), &stepTicks_[i], sizeof(int64_t));
        out += kBodyRecord;
    }
    c.extra = std::move(extra);
    octwalk::writeCheckpoint(path, c);
}

std::unique_ptr<HermiteIntegrator> HermiteIntegrator::fromCheckpoint(const std::string& path, RunSettings* runSettings)
{
    return fromCheckpoint(readCheckpoint(path), path, runSettings);
}

std::unique_ptr<HermiteIntegrator> HermiteIntegrator::fromCheckpoint(CheckpointImage image, const std::string& path,
                                                                     RunSettings* runSettings)
{
    Restored r;
    r.image                 = std::move(image);
    const std::string& text = r.image.extra;
    auto notOurs            = [&](const std::string& why) {
        return FormatError("checkpoint '" + path + "' is not one of octwalk hermite: " + why);
    };
    size_t line1 = text.find('\n');
    if (line1 == std::string::npos || text.compare(0, line1, kCheckpointTag) != 0)
        throw notOurs("its settings do not start with '" + std::string(kCheckpointTag) + "'");
    size_t line2 = text.find('\n', line1 + 1);
    size_t line3 = line2 == std::string::npos ? line2 : text.find('\n', line2 + 1);
    if (line3 == std::string::npos) throw notOurs("its settings are cut short");
    RunSettings rs = RunSettings::decode(text.substr(line1 + 1, line2 - line1 - 1));
    std::istringstream s(text.substr(line2 + 1, line3 - line2 - 1));
    std::string eta, etaStart, dtMax;
    if (!(s >> eta >> etaStart >> dtMax >> r.counts.blockSteps >> r.counts.bodySteps))
        throw notOurs("its integrator settings cannot be read");
    r.settings.eta      = parseDouble(eta, path);
    r.settings.etaStart = parseDouble(etaStart, path);
    r.settings.dtMax    = parseDouble(dtMax, path);
    const int64_t n     = r.image.state.size();
    if (text.size() - (line3 + 1) != kBodyRecord * size_t(n))
    {
        throw notOurs("it holds " + std::to_string(text.size() - (line3 + 1)) + " bytes of body state, " +
                      std::to_string(kBodyRecord * size_t(n)) + " expected for " + std::to_string(n) + " bodies");
    }
    r.acc.resize(n);
    r.jerk.resize(n);
    r.snap.resize(n);
    r.pot.resize(n);
    r.steps.resize(n);
    const char* in = text.data() + line3 + 1;
    for (int64_t i = 0; i < n; ++i)
    {
        double v[10];
        std::memcpy(v, in, sizeof(v));
        std::memcpy(&r.steps[i], in + sizeof(v), sizeof(int64_t));
        r.acc[i]  = {v[0], v[1], v[2]};
        r.jerk[i] = {v[3], v[4], v[5]};
        r.snap[i] = {v[6], v[7], v[8]};
        r.pot[i]  = v[9];
        in += kBodyRecord;
    }
    if (runSettings) *runSettings = rs;
    return std::unique_ptr<HermiteIntegrator>(new HermiteIntegrator(std::move(r)));
}

} // namespace octwalk
