// NumPy arrays to and from the library's types.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <type_traits>

#include "common/errors.h"
#include "python/src/bindings.h"

namespace octwalk::python {

// An (N, 3) float64 C-contiguous array is read as N Vec3d in place.
static_assert(sizeof(Vec3d) == 3 * sizeof(double) && alignof(Vec3d) == alignof(double) &&
                  std::is_standard_layout_v<Vec3d>,
              "Vec3d must be three packed doubles");

namespace {

std::string shapeText(const py::array& a)
{
    std::string s = "(";
    for (py::ssize_t k = 0; k < a.ndim(); ++k) s += (k ? ", " : "") + std::to_string(a.shape(k));
    return s + (a.ndim() == 1 ? ",)" : ")");
}

/// obj as an array of T, C-contiguous: itself when it already is one, else converted once. Real dtypes only:
/// a complex, object or text array would lose its meaning in the conversion.
template<class T>
py::array_t<T> contiguous(py::handle obj, const char* name)
{
    py::array any = py::array::ensure(obj);
    if (!any)
        throw py::type_error(std::string(name) + " must be an array of numbers, not " +
                             std::string(py::str(py::type::handle_of(obj).attr("__name__"))));
    const char kind = any.dtype().kind();
    if (kind != 'f' && kind != 'i' && kind != 'u')
    {
        throw py::type_error(std::string(name) + " must hold real numbers, not dtype " +
                             std::string(py::str(any.dtype())));
    }
    auto converted = py::array_t<T, py::array::c_style | py::array::forcecast>::ensure(any);
    if (!converted)
        throw py::type_error(std::string(name) + " cannot be converted to " + std::string(py::str(py::dtype::of<T>())));
    return py::reinterpret_borrow<py::array_t<T>>(converted);
}

void checkRows(const py::array& a, const char* name, int64_t expected, const char* shape)
{
    if (expected >= 0 && a.shape(0) != expected)
    {
        throw InputError(std::string(name) + " has " + std::to_string(a.shape(0)) + " rows, expected " +
                         std::to_string(expected) + " (shape " + shape + ")");
    }
}

template<class T>
py::array_t<T> takeOver(std::vector<T>&& v, std::vector<py::ssize_t> shape)
{
    auto* owned = new std::vector<T>(std::move(v));
    py::capsule free(owned, [](void* p) { delete static_cast<std::vector<T>*>(p); });
    return py::array_t<T>(shape, reinterpret_cast<const T*>(owned->data()), free);
}

} // namespace

py::array_t<double> vectorsArray(py::handle obj, const char* name, int64_t expected)
{
    auto a = contiguous<double>(obj, name);
    if (a.ndim() != 2 || a.shape(1) != 3)
    {
        throw InputError(std::string(name) + " must have shape (N, 3), not " + shapeText(a));
    }
    checkRows(a, name, expected, "(N, 3)");
    return a;
}

py::array_t<double> scalarsArray(py::handle obj, const char* name, int64_t expected)
{
    auto a = contiguous<double>(obj, name);
    if (a.ndim() != 1) throw InputError(std::string(name) + " must have shape (N,), not " + shapeText(a));
    checkRows(a, name, expected, "(N,)");
    return a;
}

py::array_t<uint64_t> idsArray(py::handle obj, const char* name, int64_t expected)
{
    py::array any = py::array::ensure(obj);
    if (any && any.dtype().kind() == 'i')
    {
        // A signed array converts to uint64 modulo 2^64: a negative id would become a huge one.
        auto s           = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(any);
        const int64_t* v = s.data();
        for (py::ssize_t i = 0; i < s.size(); ++i)
        {
            if (v[i] < 0)
                throw InputError(std::string(name) + "[" + std::to_string(i) + "] = " + std::to_string(v[i]) +
                                 " is negative");
        }
    }
    else if (any && any.dtype().kind() != 'u')
    {
        throw py::type_error(std::string(name) + " must hold integers, not dtype " + std::string(py::str(any.dtype())));
    }
    auto a = contiguous<uint64_t>(obj, name);
    if (a.ndim() != 1) throw InputError(std::string(name) + " must have shape (N,), not " + shapeText(a));
    checkRows(a, name, expected, "(N,)");
    return a;
}

std::vector<Vec3d> toVectors(const py::array_t<double>& a)
{
    const Vec3d* v = vectors(a);
    return std::vector<Vec3d>(v, v + a.shape(0));
}

py::array_t<double> toNumpy(std::vector<Vec3d>&& v)
{
    const py::ssize_t n = py::ssize_t(v.size());
    auto* owned         = new std::vector<Vec3d>(std::move(v));
    py::capsule free(owned, [](void* p) { delete static_cast<std::vector<Vec3d>*>(p); });
    return py::array_t<double>({n, py::ssize_t(3)}, reinterpret_cast<const double*>(owned->data()), free);
}

py::array_t<double> toNumpy(std::vector<double>&& v)
{
    const py::ssize_t n = py::ssize_t(v.size());
    return takeOver(std::move(v), {n});
}

py::array_t<double> copyToNumpy(const std::vector<Vec3d>& v) { return toNumpy(std::vector<Vec3d>(v)); }

py::dict particlesToDict(const ParticleSet& p)
{
    py::dict d;
    d["pos"]      = copyToNumpy(p.pos);
    d["vel"]      = copyToNumpy(p.vel);
    d["mass"]     = copyToNumpy(p.mass);
    d["id"]       = copyToNumpy(p.id);
    d["type"]     = copyToNumpy(p.type);
    d["time"]     = p.time;
    d["box_size"] = p.boxSize;
    if (p.cosmology)
    {
        py::dict c;
        c["omega0"]       = p.cosmology->omega0;
        c["omega_lambda"] = p.cosmology->omegaLambda;
        c["hubble_param"] = p.cosmology->hubbleParam;
        d["cosmology"]    = c;
    }
    else d["cosmology"] = py::none();
    return d;
}

} // namespace octwalk::python
