// octwalk._core.Hermite (the block-step Hermite integrator, host/sim/hermite.h) and octwalk._core.G6 (libg6's C
// API, host/g6/g6lib.h, one cluster id per object).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include "common/errors.h"
#include "host/g6/g6lib.h"
#include "host/sim/hermite.h"
#include "python/src/bindings.h"

namespace octwalk::python {

namespace {

/// Runs Python's signal handlers (a Ctrl-C becomes KeyboardInterrupt here) between two steps of a loop that
/// runs without the GIL, so that the loop stops at a whole step.
void checkSignals()
{
    py::gil_scoped_acquire hold;
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
}

/// The integrator driven to requested times. Times that are whole sync intervals (dt_max) from the start
/// extend one run (HermiteIntegrator::extendTo, the same bits as `octwalk hermite` to the last of them);
/// another time starts a new run from the synchronised state, whose intervals end exactly there.
class PyHermite
{
public:
    PyHermite(ParticleSet initial, const Parameters& p, const HermiteSettings& s) : params_(p), settings_(s)
    {
        validate(settings_);
        const double t0 = initial.time;
        py::gil_scoped_release free;
        h_ = std::make_unique<HermiteIntegrator>(std::move(initial), params_, settings_,
                                                 planSteps(t0, t0 + settings_.dtMax, settings_.dtMax));
    }

    /// Advances to tEnd; after every sync interval runs Python's signal handlers and calls progress(time).
    void evolve(double tEnd, const py::object& progress)
    {
        if (tEnd == time()) return;
        if (!(tEnd > time()))
        {
            throw ParameterError("parameter t_end = " + std::to_string(tEnd) +
                                 " is invalid: the run is at t = " + std::to_string(time()) + " and only goes forward");
        }
        py::gil_scoped_release free;
        if (!continues(tEnd)) restart(tEnd);
        while (!h_->done())
        {
            h_->advanceInterval();
            checkSignals();
            if (!progress.is_none())
            {
                py::gil_scoped_acquire hold;
                progress(time());
            }
        }
    }

    double time() const { return h_->time(); }
    py::dict particles() const
    {
        ParticleSet now = h_->state();
        now.time        = time();
        return particlesToDict(now);
    }
    py::dict diagnostics()
    {
        HermiteDiagnostics d;
        {
            py::gil_scoped_release free;
            d = h_->diagnostics();
        }
        py::dict r;
        r["time"]                  = d.time;
        r["kinetic"]               = d.kinetic;
        r["potential"]             = d.potential;
        r["total"]                 = d.total;
        r["relative_energy_error"] = d.relativeEnergyError;
        r["virial_ratio"]          = d.virialRatio;
        r["momentum"]              = std::vector<double>{d.momentum.x, d.momentum.y, d.momentum.z};
        r["angular_momentum"]      = std::vector<double>{d.angularMomentum.x, d.angularMomentum.y, d.angularMomentum.z};
        return r;
    }
    py::dict counts() const
    {
        py::dict r;
        r["block_steps"] = earlier_.blockSteps + h_->counts().blockSteps;
        r["body_steps"]  = earlier_.bodySteps + h_->counts().bodySteps;
        return r;
    }
    py::dict settings() const
    {
        py::dict r;
        r["eta"]       = settings_.eta;
        r["eta_start"] = settings_.etaStart;
        r["dt_max"]    = settings_.dtMax;
        return r;
    }
    const Parameters& parameters() const { return params_; }

private:
    bool continues(double tEnd)
    {
        if (h_->plan().h != settings_.dtMax) return false;
        try
        {
            h_->extendTo(tEnd);
            return true;
        }
        catch (const ParameterError&)
        {
            // Not t0 + k dt_max: extendTo is the judge of that, and a new run ends there instead.
            return false;
        }
    }

    /// A new integrator from the synchronised state to tEnd (its start derivatives are computed afresh).
    void restart(double tEnd)
    {
        ParticleSet now = h_->state();
        now.time        = time();
        earlier_.blockSteps += h_->counts().blockSteps;
        earlier_.bodySteps += h_->counts().bodySteps;
        const double t0 = now.time;
        h_.reset(); // gives its libg6 cluster id back before the next one takes one
        h_ = std::make_unique<HermiteIntegrator>(std::move(now), params_, settings_,
                                                 planSteps(t0, tEnd, settings_.dtMax));
    }

    Parameters params_;
    HermiteSettings settings_;
    HermiteCounts earlier_;
    std::unique_ptr<HermiteIntegrator> h_;
};

/// libg6 reports an error as a non-zero return and one line on stderr: that line is caught through a pipe
/// put in place of file descriptor 2 for the call, and becomes the RuntimeError's message. Anything written
/// by a call that succeeded (the library's notices) is passed on to stderr.
class StderrCapture
{
public:
    StderrCapture()
    {
        if (pipe(fds_) != 0) throw BackendError("G6: cannot create a pipe for libg6's messages");
        fcntl(fds_[0], F_SETFL, fcntl(fds_[0], F_GETFL) | O_NONBLOCK);
        fcntl(fds_[1], F_SETFL, fcntl(fds_[1], F_GETFL) | O_NONBLOCK);
    }
    ~StderrCapture()
    {
        close(fds_[0]);
        close(fds_[1]);
    }
    StderrCapture(const StderrCapture&)            = delete;
    StderrCapture& operator=(const StderrCapture&) = delete;

    /// call() with stderr in the pipe; returns its code and what it wrote.
    template<class Call>
    int run(Call call, std::string& written)
    {
        std::fflush(stderr);
        const int saved = dup(2);
        if (saved < 0 || dup2(fds_[1], 2) < 0) return call();
        int rc = 0;
        try
        {
            rc = call();
        }
        catch (...)
        {
            restore(saved, written);
            throw;
        }
        restore(saved, written);
        return rc;
    }

private:
    void restore(int saved, std::string& written)
    {
        std::fflush(stderr);
        dup2(saved, 2);
        close(saved);
        char buffer[4096];
        ssize_t got;
        while ((got = read(fds_[0], buffer, sizeof buffer)) > 0) written.append(buffer, size_t(got));
    }

    int fds_[2] = {-1, -1};
};

/// OCTWALK_G6_BACKEND set to backend while it lives (libg6 reads it at g6_open), the earlier value put back.
class BackendEnvironment
{
public:
    explicit BackendEnvironment(const std::string& backend)
    {
        if (const char* old = std::getenv(kName)) old_ = old;
        setenv(kName, backend.c_str(), 1);
    }
    ~BackendEnvironment()
    {
        if (old_) setenv(kName, old_->c_str(), 1);
        else unsetenv(kName);
    }

private:
    static constexpr const char* kName = "OCTWALK_G6_BACKEND";
    std::optional<std::string> old_;
};

/// One libg6 cluster id, open from construction to close(); every call checked.
class PyG6
{
public:
    explicit PyG6(const std::string& backend)
    {
        if (backend != "auto" && backend != "cpu" && backend != "gpu")
            throw ParameterError("parameter backend = '" + backend + "' is invalid: must be auto, gpu or cpu");
        cluster_ = std::make_unique<G6Cluster>();
        std::string written;
        BackendEnvironment environment(backend);
        try
        {
            capture_.run(
                [&] {
                    cluster_->open();
                    return 0;
                },
                written);
        }
        catch (const BackendError& e)
        {
            cluster_.reset();
            throw std::runtime_error(firstLine(written, e.what()));
        }
        passOn(written);
    }

    int id() const { return checkedId("id"); }
    int npipes() const { return g6_npipes(); }
    bool closed() const { return !cluster_; }
    void close() { cluster_.reset(); }

    void setTi(double ti)
    {
        check("g6_set_ti", [&] { return g6_set_ti(checkedId("set_ti"), ti); });
    }

    void setJParticle(int address, int index, double tj, double dtj, py::handle a2by18, py::handle a1by6,
                      py::handle aby2, py::handle v, py::handle x, double m)
    {
        double k18[3], j6[3], a2[3], vj[3], xj[3];
        vector3(a2by18, "a2by18", k18);
        vector3(a1by6, "a1by6", j6);
        vector3(aby2, "aby2", a2);
        vector3(v, "v", vj);
        vector3(x, "x", xj);
        const int id = checkedId("set_j_particle");
        check("g6_set_j_particle",
              [&] { return g6_set_j_particle(id, address, index, tj, dtj, m, k18, j6, a2, vj, xj); });
        jCount_ = std::max(jCount_, address + 1);
    }

    /// Forces on ni i-particles from j-memory [0, nj) (nj < 0: the highest address set + 1).
    py::tuple calc(int nj, py::handle indexObj, py::handle xObj, py::handle vObj, double eps2, py::handle h2Obj)
    {
        const int id = checkedId("calc");
        if (nj < 0) nj = jCount_;
        auto x        = vectorsArray(xObj, "x");
        const auto ni = int64_t(x.shape(0));
        auto v        = vectorsArray(vObj, "v", ni);
        auto indexD   = py::array_t<int, py::array::c_style | py::array::forcecast>::ensure(indexObj);
        if (!indexD || indexD.ndim() != 1 || indexD.shape(0) != ni)
            throw InputError("index must have shape (" + std::to_string(ni) + ",), one per i-particle");
        std::vector<double> h2(size_t(ni), 0.0);
        if (!h2Obj.is_none())
        {
            auto h = scalarsArray(h2Obj, "h2", ni);
            std::copy(h.data(), h.data() + ni, h2.begin());
        }
        std::vector<int> index(indexD.data(), indexD.data() + ni);
        std::vector<Vec3d> xi = toVectors(x), vi = toVectors(v);
        std::vector<Vec3d> acc(static_cast<size_t>(ni)), jerk(static_cast<size_t>(ni));
        std::vector<double> pot(static_cast<size_t>(ni));
        auto* xp = reinterpret_cast<double(*)[3]>(xi.data());
        auto* vp = reinterpret_cast<double(*)[3]>(vi.data());
        check("g6calc", [&] {
            g6calc_firsthalf(id, nj, int(ni), index.data(), xp, vp, nullptr, nullptr, nullptr, eps2, h2.data());
            return g6calc_lasthalf(id, nj, int(ni), index.data(), xp, vp, eps2, h2.data(),
                                   reinterpret_cast<double(*)[3]>(acc.data()),
                                   reinterpret_cast<double(*)[3]>(jerk.data()), pot.data());
        });
        return py::make_tuple(toNumpy(std::move(acc)), toNumpy(std::move(jerk)), toNumpy(std::move(pot)));
    }

    void reset()
    {
        check("g6_reset", [&] { return g6_reset(checkedId("reset")); });
        jCount_ = 0;
    }

private:
    int checkedId(const char* method) const
    {
        if (!cluster_) throw std::runtime_error(std::string("G6.") + method + ": the G6 object is closed");
        return cluster_->id();
    }

    static void vector3(py::handle obj, const char* name, double out[3])
    {
        auto a = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(obj);
        if (!a || a.size() != 3) throw InputError(std::string(name) + " must be 3 numbers");
        std::copy(a.data(), a.data() + 3, out);
    }

    /// RuntimeError with libg6's line (or the call and its code when it wrote none) for a non-zero return.
    template<class Call>
    void check(const char* function, Call call)
    {
        std::string written;
        const int rc = capture_.run(call, written);
        if (rc != 0)
            throw std::runtime_error(firstLine(written, std::string(function) + " returned " + std::to_string(rc)));
        passOn(written);
    }

    static std::string firstLine(const std::string& written, const std::string& otherwise)
    {
        const std::string line = written.substr(0, written.find('\n'));
        return line.empty() ? otherwise : line;
    }

    static void passOn(const std::string& written)
    {
        if (!written.empty()) std::fputs(written.c_str(), stderr);
    }

    StderrCapture capture_;
    std::unique_ptr<G6Cluster> cluster_;
    int jCount_ = 0;
};

ParticleSet bodiesFromArrays(py::handle pos, py::handle vel, py::handle mass, double time)
{
    auto m       = scalarsArray(mass, "mass");
    const auto n = int64_t(m.shape(0));
    ParticleSet p;
    p.pos  = toVectors(vectorsArray(pos, "pos", n));
    p.vel  = toVectors(vectorsArray(vel, "vel", n));
    p.mass = std::vector<double>(m.data(), m.data() + n);
    p.id.resize(size_t(n));
    for (int64_t i = 0; i < n; ++i) p.id[i] = uint64_t(i);
    p.type.assign(size_t(n), uint8_t(1));
    p.time = time;
    return p;
}

} // namespace

void bindHermite(py::module_& m)
{
    py::class_<PyHermite>(m, "Hermite")
        .def(py::init([](py::handle pos, py::handle vel, py::handle mass, double time, const Parameters& p, double eta,
                         double etaStart, double dtMax) {
                 HermiteSettings s;
                 s.eta      = eta;
                 s.etaStart = etaStart;
                 s.dtMax    = dtMax;
                 return std::make_unique<PyHermite>(bodiesFromArrays(pos, vel, mass, time), p, s);
             }),
             py::arg("pos"), py::arg("vel"), py::arg("mass"), py::arg("time"), py::arg("parameters"), py::arg("eta"),
             py::arg("eta_start"), py::arg("dt_max"))
        .def("evolve", &PyHermite::evolve, py::arg("t_end"), py::arg("progress") = py::none())
        .def_property_readonly("time", &PyHermite::time)
        .def_property_readonly("parameters", &PyHermite::parameters)
        .def_property_readonly("settings", &PyHermite::settings)
        .def_property_readonly("counts", &PyHermite::counts)
        .def("particles", &PyHermite::particles)
        .def("diagnostics", &PyHermite::diagnostics);

    py::class_<PyG6>(m, "G6")
        .def(py::init<const std::string&>(), py::arg("backend"))
        .def_property_readonly("id", &PyG6::id)
        .def_property_readonly("npipes", &PyG6::npipes)
        .def_property_readonly("closed", &PyG6::closed)
        .def("close", &PyG6::close)
        .def("set_ti", &PyG6::setTi, py::arg("ti"))
        .def("set_j_particle", &PyG6::setJParticle, py::arg("address"), py::arg("index"), py::arg("tj"), py::arg("dtj"),
             py::arg("a2by18"), py::arg("a1by6"), py::arg("aby2"), py::arg("v"), py::arg("x"), py::arg("m"))
        .def("calc", &PyG6::calc, py::arg("nj"), py::arg("index"), py::arg("x"), py::arg("v"), py::arg("eps2"),
             py::arg("h2"))
        .def("reset", &PyG6::reset);
}

} // namespace octwalk::python
