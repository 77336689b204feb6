// octwalk._core: the compiled part of the Python package octwalk (python/octwalk/__init__.py is its API).
#include "common/errors.h"
#include "host/core/version.h"
#include "python/src/bindings.h"

namespace py = pybind11;

PYBIND11_MODULE(_core, m)
{
    m.doc() = "octwalk's force solver, snapshots, models and leapfrog (the package octwalk wraps it)";
    // The library's typed exceptions as Python ones of the matching built-in kind, with its one-line message.
    py::register_exception<octwalk::ParameterError>(m, "ParameterError", PyExc_ValueError);
    py::register_exception<octwalk::InputError>(m, "InputError", PyExc_ValueError);
    py::register_exception<octwalk::FormatError>(m, "FormatError", PyExc_OSError);
    py::register_exception<octwalk::BackendError>(m, "BackendError", PyExc_RuntimeError);
    m.attr("__version__") = OCTWALK_VERSION;
    m.attr("version")     = octwalk::versionHeader();
    octwalk::python::bindParameters(m);
    octwalk::python::bindGravity(m);
    octwalk::python::bindSnapshots(m);
    octwalk::python::bindSimulation(m);
    octwalk::python::bindCosmology(m);
    octwalk::python::bindHermite(m);
}
