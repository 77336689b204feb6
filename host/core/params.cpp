#include "host/core/params.h"

#include <cmath>
#include <sstream>

#include "common/errors.h"

namespace octwalk {

namespace {

std::string describe(const char* name, double value, const char* rule)
{
    std::ostringstream s;
    s << "parameter " << name << " = " << value << " is invalid: " << rule;
    return s.str();
}

} // namespace

void validate(const Parameters& p)
{
    if (!(p.opening_angle > 0.0 && p.opening_angle <= 1.0))
    {
        throw ParameterError(describe("opening_angle", p.opening_angle, "must be in (0, 1]"));
    }
    if (!(p.epsilon_squared >= 0.0 && std::isfinite(p.epsilon_squared)))
    {
        throw ParameterError(describe("epsilon_squared", p.epsilon_squared, "must be finite and >= 0"));
    }
    if (!(p.gravitational_constant > 0.0 && std::isfinite(p.gravitational_constant)))
    {
        throw ParameterError(describe("gravitational_constant", p.gravitational_constant, "must be finite and > 0"));
    }
    if (p.n_leaf < 1) throw ParameterError(describe("n_leaf", p.n_leaf, "must be >= 1"));
    if (p.n_group < 1) throw ParameterError(describe("n_group", p.n_group, "must be >= 1"));
}

std::string toString(Mac mac) { return mac == Mac::Bonsai ? "bonsai" : "octgrav"; }

std::string toString(Backend backend)
{
    switch (backend)
    {
        case Backend::Cpu: return "cpu";
        case Backend::Gpu: return "gpu";
        default: return "auto";
    }
}

Mac parseMac(const std::string& name)
{
    if (name == "bonsai") return Mac::Bonsai;
    if (name == "octgrav") return Mac::Octgrav;
    throw ParameterError("parameter mac = '" + name + "' is invalid: must be 'bonsai' or 'octgrav'");
}

Backend parseBackend(const std::string& name)
{
    if (name == "auto") return Backend::Auto;
    if (name == "cpu") return Backend::Cpu;
    if (name == "gpu") return Backend::Gpu;
    throw ParameterError("parameter backend = '" + name + "' is invalid: must be 'auto', 'cpu' or 'gpu'");
}

std::string toJson(const Parameters& p)
{
    std::ostringstream s;
    s.precision(17);
    s << "{\"opening_angle\": " << p.opening_angle << ", \"epsilon_squared\": " << p.epsilon_squared
      << ", \"gravitational_constant\": " << p.gravitational_constant << ", \"n_leaf\": " << p.n_leaf
      << ", \"n_group\": " << p.n_group << ", \"merge_groups\": " << (p.merge_groups ? "true" : "false")
      << ", \"mac\": \"" << toString(p.mac)
      << "\", \"use_quadrupole\": " << (p.use_quadrupole ? "true" : "false") << ", \"backend\": \""
      << toString(p.backend) << "\"}";
    return s.str();
}

} // namespace octwalk
