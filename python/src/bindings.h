#pragma once
/// @file bindings.h
/// The pieces of the Python module's core (octwalk._core), one file each: exceptions, parameters, array
/// conversions, the gravity solver, snapshots and models, the leapfrog simulation,
/// the Hermite integrator and libg6.

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/vec.h"
#include "host/core/params.h"
#include "host/core/particles.h"

namespace octwalk::python {

namespace py = pybind11;

void bindParameters(py::module_& m);
void bindGravity(py::module_& m);
void bindSnapshots(py::module_& m);
void bindSimulation(py::module_& m);
void bindCosmology(py::module_& m);
void bindHermite(py::module_& m);

/// The parameters every Python entry point starts from: the table's defaults, except a softening of
/// epsilon = 0.01 (epsilon_squared = 1e-4), as pytreegrav and AMUSE's tree codes have one by default.
Parameters pythonDefaults();

/// base with the keyword arguments applied, validated (ParameterError naming the first bad value). A keyword
/// is a table parameter's name, its command-line option with '-' as '_' (epsilon is a length, the negated
/// switches such as monopole clear their member) or its alias (theta). TypeError for an unknown keyword or
/// two spellings of one parameter; a value of the wrong type is a TypeError, a string is read as run.json's
/// text is (parameterFromText).
/// @param[in] function  named in TypeError messages, as Python names the function that got the keyword
Parameters applyKeywords(Parameters base, const py::dict& keywords, const char* function);

/// An (N, 3) float64 C-contiguous array: obj itself when it already is one (then read in place), else a
/// converted copy. TypeError for a dtype that is not real (complex, object, text); InputError for another shape
/// or N that is not `expected` (>= 0).
py::array_t<double> vectorsArray(py::handle obj, const char* name, int64_t expected = -1);
/// As vectorsArray, for an (N,) array.
py::array_t<double> scalarsArray(py::handle obj, const char* name, int64_t expected = -1);
/// As vectorsArray, for N unsigned 64-bit integers (ids); negative or fractional values are an InputError.
py::array_t<uint64_t> idsArray(py::handle obj, const char* name, int64_t expected);

/// The array's rows as Vec3d, in place (vectorsArray's result).
inline const Vec3d* vectors(const py::array_t<double>& a) { return reinterpret_cast<const Vec3d*>(a.data()); }
/// A copy of the rows as Vec3d (the APIs that take std::vector).
std::vector<Vec3d> toVectors(const py::array_t<double>& a);

/// Arrays that take over v's storage (no copy): (N, 3) and (N,).
py::array_t<double> toNumpy(std::vector<Vec3d>&& v);
py::array_t<double> toNumpy(std::vector<double>&& v);
template<class T>
py::array_t<T> copyToNumpy(const std::vector<T>& v)
{
    py::array_t<T> a(py::ssize_t(v.size()));
    std::copy(v.begin(), v.end(), a.mutable_data());
    return a;
}
py::array_t<double> copyToNumpy(const std::vector<Vec3d>& v);

/// A particle set as a dict of arrays and header fields (pos, vel, mass, id, type, time, box_size,
/// cosmology: dict or None).
py::dict particlesToDict(const ParticleSet& p);

} // namespace octwalk::python
