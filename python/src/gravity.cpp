// octwalk._core.Gravity and the one-call functions: the library's GravitySolver on NumPy arrays.
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "common/errors.h"
#include "host/solver/solver.h"
#include "python/src/bindings.h"

namespace octwalk::python {

namespace {

/// A solver over arrays that Python owns. Positions and masses that are float64 and C-contiguous are read in
/// place (attachBodies): the references held here keep them alive, and update() re-reads them after the
/// caller has changed them. Other arrays are converted once, and the copy is what is read.
class Gravity
{
public:
    Gravity(py::handle pos, py::handle mass, py::handle ids, const Parameters& p) : solver_(p)
    {
        attach(pos, mass, ids);
    }

    /// New positions (and masses), or with none given the same arrays again, read anew.
    void update(py::handle pos, py::handle mass)
    {
        py::object newPos  = pos.is_none() ? py::object(pos_) : py::reinterpret_borrow<py::object>(pos);
        py::object newMass = mass.is_none() ? py::object(mass_) : py::reinterpret_borrow<py::object>(mass);
        bool sameN         = !pos.is_none() && mass.is_none();
        attach(newPos, newMass, sameN || pos.is_none() ? py::object(ids_) : py::object(py::none()));
    }

    /// Accelerations and potentials of all bodies (G applied), computed once per update.
    std::pair<py::array_t<double>, py::array_t<double>> forces()
    {
        checkAttached();
        if (!acc_)
        {
            std::vector<Vec3d> acc;
            std::vector<double> pot;
            {
                py::gil_scoped_release free;
                std::lock_guard<std::mutex> lock(mutex_);
                solver_.computeForces(acc, pot);
            }
            acc_ = toNumpy(std::move(acc));
            pot_ = toNumpy(std::move(pot));
        }
        return {*acc_, *pot_};
    }

    /// The field at massless probe points; softening eps (None: the solver's).
    std::pair<py::array_t<double>, py::array_t<double>> atPoints(py::handle eps, py::handle points)
    {
        checkAttached();
        auto p                     = vectorsArray(points, "points");
        std::vector<Vec3d> pointsV = toVectors(p);
        std::vector<Vec3d> acc;
        std::vector<double> pot;
        Parameters kept = solver_.parameters();
        Parameters used = kept;
        if (!eps.is_none()) used.epsilon_squared = softeningSquared(eps, p.shape(0));
        {
            py::gil_scoped_release free;
            std::lock_guard<std::mutex> lock(mutex_);
            bool other = used.epsilon_squared != kept.epsilon_squared;
            if (other) solver_.setParameters(used);
            try
            {
                solver_.evaluateAt(pointsV, acc, pot);
            }
            catch (...)
            {
                if (other) solver_.setParameters(kept);
                throw;
            }
            if (other) solver_.setParameters(kept);
        }
        return {toNumpy(std::move(acc)), toNumpy(std::move(pot))};
    }

    /// Exact direct summation over all bodies (double on the CPU).
    std::pair<py::array_t<double>, py::array_t<double>> direct()
    {
        checkAttached();
        std::vector<Vec3d> acc;
        std::vector<double> pot;
        {
            py::gil_scoped_release free;
            std::lock_guard<std::mutex> lock(mutex_);
            solver_.computeDirect({}, acc, pot);
        }
        return {toNumpy(std::move(acc)), toNumpy(std::move(pot))};
    }

    const Parameters& parameters() const { return solver_.parameters(); }
    void setParameters(const Parameters& p)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        solver_.setParameters(p);
        acc_.reset();
        pot_.reset();
    }

    int64_t size() const { return int64_t(mass_.shape(0)); }
    /// The addresses the solver reads positions and masses from.
    uintptr_t positionsAddress() const { return uintptr_t(pos_.data()); }
    uintptr_t massesAddress() const { return uintptr_t(mass_.data()); }
    /// The arrays the solver reads (the caller's own, or the converted copies).
    py::array_t<double> positions() const { return pos_; }
    py::array_t<double> masses() const { return mass_; }
    py::array_t<uint64_t> ids() const { return ids_; }
    std::string backend() const { return toString(solver_.activeBackend()); }
    py::dict stats() const
    {
        const InteractionStats& s = solver_.stats();
        py::dict d;
        d["node_interactions"] = s.nodeInteractions;
        d["leaf_interactions"] = s.leafInteractions;
        d["nodes_per_body"]    = s.nodesPerBody();
        d["leaves_per_body"]   = s.leavesPerBody();
        d["depth"]             = s.depth;
        return d;
    }

private:
    void attach(py::handle pos, py::handle mass, py::handle ids)
    {
        auto m       = scalarsArray(mass, "mass");
        const auto n = int64_t(m.shape(0));
        auto x       = vectorsArray(pos, "pos", n);
        py::array_t<uint64_t> id;
        if (ids.is_none())
        {
            id = py::array_t<uint64_t>(n);
            for (int64_t i = 0; i < n; ++i) id.mutable_data()[i] = uint64_t(i);
        }
        else id = idsArray(ids, "ids", n);
        acc_.reset();
        pot_.reset();
        attached_ = false;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            solver_.attachBodies(vectors(x), m.data(), id.data(), n);
        }
        pos_      = std::move(x);
        mass_     = std::move(m);
        ids_      = std::move(id);
        attached_ = true;
    }

    /// After a refused update() the solver may still point at arrays changed in place since they were checked.
    void checkAttached() const
    {
        if (!attached_)
            throw InputError("the bodies of the last update() were refused: update() with valid ones first");
    }

    /// AMUSE passes one softening per point; the walk has one for all.
    static double softeningSquared(py::handle eps, int64_t numPoints)
    {
        auto e = py::array_t<double, py::array::forcecast>::ensure(eps);
        if (!e) throw py::type_error("eps must be a number or an array of numbers");
        if (e.ndim() > 1 || (e.ndim() == 1 && e.shape(0) != numPoints))
        {
            throw InputError("eps must be one number or one per point (" + std::to_string(numPoints) + ")");
        }
        const double* v  = e.data();
        const int64_t ne = int64_t(e.size());
        for (int64_t k = 1; k < ne; ++k)
        {
            if (v[k] != v[0])
            {
                throw InputError("eps[" + std::to_string(k) +
                                 "] differs from eps[0]: the tree is walked with one "
                                 "softening for all points");
            }
        }
        if (ne == 0) return 0;
        if (!(std::isfinite(v[0]) && v[0] >= 0))
        {
            throw ParameterError("parameter eps = " + std::to_string(v[0]) + " is invalid: must be finite and >= 0");
        }
        return v[0] * v[0];
    }

    GravitySolver solver_;
    py::array_t<double> pos_, mass_;
    py::array_t<uint64_t> ids_;
    std::optional<py::array_t<double>> acc_, pot_;
    bool attached_ = false;
    /// One evaluation at a time: the solver's buffers are shared, and the GIL is released while it runs.
    std::mutex mutex_;
};

} // namespace

void bindGravity(py::module_& m)
{
    py::class_<Gravity>(m, "Gravity")
        .def(py::init([](py::handle pos, py::handle mass, py::handle ids, const Parameters& p) {
                 return std::make_unique<Gravity>(pos, mass, ids, p);
             }),
             py::arg("pos"), py::arg("mass"), py::arg("ids"), py::arg("parameters"))
        .def("update", &Gravity::update, py::arg("pos") = py::none(), py::arg("mass") = py::none())
        .def("forces", &Gravity::forces)
        .def("at_points", &Gravity::atPoints, py::arg("eps"), py::arg("points"))
        .def("direct", &Gravity::direct)
        .def_property("parameters", &Gravity::parameters, &Gravity::setParameters)
        .def_property_readonly("n", &Gravity::size)
        .def_property_readonly("positions_address", &Gravity::positionsAddress)
        .def_property_readonly("masses_address", &Gravity::massesAddress)
        .def_property_readonly("positions", &Gravity::positions)
        .def_property_readonly("masses", &Gravity::masses)
        .def_property_readonly("ids", &Gravity::ids)
        .def_property_readonly("backend", &Gravity::backend)
        .def_property_readonly("stats", &Gravity::stats);
}

} // namespace octwalk::python
