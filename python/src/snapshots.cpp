// Snapshots (host/io/snapshot.h) and the built-in models (host/models/models.h) as dicts of arrays.
#include "common/errors.h"
#include "host/core/version.h"
#include "host/io/snapshot.h"
#include "host/models/models.h"
#include "python/src/bindings.h"

namespace octwalk::python {

namespace {

py::dict readSnapshotDict(const std::string& path, py::handle format, const std::string& cosmology)
{
    SnapshotReadOptions options;
    options.cosmology = parseCosmologyReading(cosmology);
    std::vector<std::string> notes;
    options.notice   = [&notes](const std::string& text) { notes.push_back(text); };
    SnapshotFormat f = format.is_none() ? detectFormat(path) : parseSnapshotFormat(format.cast<std::string>());
    ParticleSet p    = readSnapshot(path, f, options);
    py::dict d       = particlesToDict(p);
    d["format"]      = toString(f);
    d["notes"]       = notes;
    return d;
}

std::optional<Cosmology> cosmologyFrom(py::handle c)
{
    if (c.is_none()) return std::nullopt;
    py::dict d = py::reinterpret_borrow<py::dict>(c);
    Cosmology cosmo;
    for (auto [key, value] : d)
    {
        std::string k = py::str(key);
        double v      = value.cast<double>();
        if (k == "omega0") cosmo.omega0 = v;
        else if (k == "omega_lambda") cosmo.omegaLambda = v;
        else if (k == "hubble_param") cosmo.hubbleParam = v;
        else throw py::type_error("cosmology has no field '" + k + "' (omega0, omega_lambda, hubble_param)");
    }
    return cosmo;
}

void writeSnapshotArrays(const std::string& path, py::handle pos, py::handle vel, py::handle mass,
                         const std::string& format, py::handle ids, py::handle types, double time, double boxSize,
                         py::handle cosmology, double G, bool overwrite)
{
    auto m       = scalarsArray(mass, "mass");
    const auto n = int64_t(m.shape(0));
    ParticleSet p;
    p.pos  = toVectors(vectorsArray(pos, "pos", n));
    p.vel  = toVectors(vectorsArray(vel, "vel", n));
    p.mass = std::vector<double>(m.data(), m.data() + n);
    p.id.resize(size_t(n));
    if (ids.is_none())
    {
        for (int64_t i = 0; i < n; ++i) p.id[i] = uint64_t(i);
    }
    else
    {
        auto id = idsArray(ids, "id", n);
        std::copy(id.data(), id.data() + n, p.id.begin());
    }
    p.type.assign(size_t(n), uint8_t(1));
    if (!types.is_none())
    {
        auto t = idsArray(types, "type", n);
        for (int64_t i = 0; i < n; ++i)
        {
            if (t.data()[i] > 5)
                throw InputError("type[" + std::to_string(i) + "] = " + std::to_string(t.data()[i]) +
                                 " is not a GADGET type 0..5");
            p.type[i] = uint8_t(t.data()[i]);
        }
    }
    p.time      = time;
    p.boxSize   = boxSize;
    p.cosmology = cosmologyFrom(cosmology);
    SnapshotMeta meta;
    meta.version               = versionAndHash();
    meta.gravitationalConstant = G;
    SnapshotFormat f           = parseSnapshotFormat(format);
    py::gil_scoped_release free;
    writeSnapshot(path, f, p, meta, overwrite);
}

} // namespace

void bindSnapshots(py::module_& m)
{
    m.def("read_snapshot", &readSnapshotDict, py::arg("path"), py::arg("format") = py::none(),
          py::arg("cosmology") = "auto");
    m.def("write_snapshot", &writeSnapshotArrays, py::arg("path"), py::arg("pos"), py::arg("vel"), py::arg("mass"),
          py::kw_only(), py::arg("format") = "tipsy", py::arg("id") = py::none(), py::arg("type") = py::none(),
          py::arg("time") = 0.0, py::arg("box_size") = 0.0, py::arg("cosmology") = py::none(), py::arg("G") = 1.0,
          py::arg("overwrite") = false);
    m.def(
        "make_model",
        [](const std::string& name, int64_t n, uint64_t seed) {
            ParticleSet p;
            {
                py::gil_scoped_release free;
                p = makeModel(name, n, seed);
            }
            return particlesToDict(p);
        },
        py::arg("name"), py::arg("n"), py::arg("seed"));
}

} // namespace octwalk::python
