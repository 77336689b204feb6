// Keyword arguments onto Parameters, through the parameter table (host/core/params.h), so that every
// table parameter is a keyword of every entry point without a second list here.
#include <cmath>
#include <sstream>
#include <type_traits>

#include "common/errors.h"
#include "python/src/bindings.h"

namespace octwalk::python {

namespace {

/// How a keyword sets its row's member.
struct Keyword
{
    std::string word;
    const ParameterInfo* row;
    CliForm form;
};

/// Every keyword: the row's name (the member as stored), its option and its alias as Python identifiers.
const std::vector<Keyword>& keywords()
{
    static const std::vector<Keyword> list = [] {
        std::vector<Keyword> k;
        for (const ParameterInfo& row : parameterTable())
        {
            k.push_back({row.name, &row, CliForm::Plain});
            for (const char* spelling : {row.option, row.alias})
            {
                if (!spelling) continue;
                std::string word = spelling;
                for (char& c : word) c = c == '-' ? '_' : c;
                if (word != row.name) k.push_back({word, &row, row.form});
            }
        }
        return k;
    }();
    return list;
}

const Keyword* findKeyword(const std::string& word)
{
    for (const Keyword& k : keywords())
    {
        if (k.word == word) return &k;
    }
    return nullptr;
}

std::string typeName(py::handle value) { return py::str(py::type::handle_of(value).attr("__name__")); }

bool isBool(py::handle v) { return py::isinstance<py::bool_>(v) || typeName(v) == "bool_"; }

[[noreturn]] void wrongType(const char* function, const std::string& word, py::handle value, const char* wanted)
{
    throw py::type_error(std::string(function) + "() keyword " + word + " must be " + wanted + ", not " +
                         typeName(value));
}

double realValue(const char* function, const std::string& word, py::handle value)
{
    if (isBool(value) || !py::isinstance(value, py::module_::import("numbers").attr("Real")))
    {
        wrongType(function, word, value, "a real number");
    }
    return value.cast<double>();
}

/// Sets one member from a Python value of its type (a str: as text, parameterFromText).
void setMember(const char* function, const Keyword& k, py::handle value, Parameters& p)
{
    const ParameterInfo& row = *k.row;
    if (py::isinstance<py::str>(value) && k.form == CliForm::Plain)
    {
        parameterFromText(row, p, value.cast<std::string>());
        return;
    }
    std::visit(
        [&](auto member) {
            using T = std::decay_t<decltype(p.*member)>;
            if constexpr (std::is_same_v<T, bool>)
            {
                if (!isBool(value)) wrongType(function, k.word, value, "True or False");
                bool on   = value.cast<bool>();
                p.*member = k.form == CliForm::Negated ? !on : on;
            }
            else if constexpr (std::is_enum_v<T>)
            {
                wrongType(function, k.word, value, "a str");
            }
            else if constexpr (std::is_same_v<T, int>)
            {
                if (isBool(value) || !py::isinstance(value, py::module_::import("numbers").attr("Integral")))
                {
                    wrongType(function, k.word, value, "an int");
                }
                // Through the table's own reading, which refuses what an int cannot hold.
                parameterFromText(row, p,
                                  py::str(py::int_(py::reinterpret_borrow<py::object>(value))).cast<std::string>());
            }
            else
            {
                double v = realValue(function, k.word, value);
                if (k.form == CliForm::Length)
                {
                    // The square of a negative length would pass as a valid epsilon_squared.
                    if (!(std::isfinite(v) && v >= 0))
                    {
                        std::ostringstream s;
                        s.precision(17);
                        s << "parameter " << k.word << " = " << v << " is invalid: must be finite and >= 0";
                        throw ParameterError(s.str());
                    }
                    v = v * v;
                }
                p.*member = v;
            }
        },
        row.member);
}

/// The value of a member as a Python object (float, int, bool, or the choice's name; "auto" for an automatic int).
py::object memberValue(const ParameterInfo& row, const Parameters& p)
{
    return std::visit(
        [&](auto member) -> py::object {
            using T = std::decay_t<decltype(p.*member)>;
            if constexpr (std::is_enum_v<T>) return py::str(parameterText(row, p));
            else if constexpr (std::is_same_v<T, bool>) return py::bool_(p.*member);
            else if constexpr (std::is_same_v<T, int>)
            {
                if (parameterText(row, p) == "auto") return py::str("auto");
                return py::int_(p.*member);
            }
            else return py::float_(p.*member);
        },
        row.member);
}

const char* typeOf(const ParameterInfo& row)
{
    return std::visit(
        [](auto member) {
            using T = std::decay_t<decltype(Parameters{}.*member)>;
            if constexpr (std::is_enum_v<T>) return "choice";
            else if constexpr (std::is_same_v<T, bool>) return "bool";
            else if constexpr (std::is_same_v<T, int>) return "int";
            else return "float";
        },
        row.member);
}

py::dict toDict(const Parameters& p)
{
    py::dict d;
    for (const ParameterInfo& row : parameterTable()) d[row.name] = memberValue(row, p);
    return d;
}

/// One row of octwalk.parameters().
py::dict describe(const ParameterInfo& row)
{
    py::dict d;
    d["name"] = row.name;
    py::list words;
    for (const Keyword& k : keywords())
    {
        if (k.row == &row) words.append(k.word);
    }
    d["keywords"]       = words;
    d["type"]           = typeOf(row);
    d["default"]        = memberValue(row, Parameters{});
    d["python_default"] = memberValue(row, pythonDefaults());
    // The table's unit is the command-line value's: epsilon's length for epsilon_squared.
    d["unit"]    = row.form == CliForm::Length ? std::string(row.unit) + "^2" : std::string(row.unit);
    d["range"]   = rangeText(row);
    d["choices"] = choiceNames(row);
    d["help"]    = row.help;
    return d;
}

} // namespace

Parameters pythonDefaults()
{
    Parameters p;
    p.epsilon_squared = 1e-4;
    return p;
}

Parameters applyKeywords(Parameters base, const py::dict& given, const char* function)
{
    std::vector<const ParameterInfo*> set;
    std::vector<std::string> setBy;
    for (auto [key, value] : given)
    {
        std::string word = py::str(key);
        const Keyword* k = findKeyword(word);
        if (!k)
        {
            throw py::type_error(std::string(function) + "() got an unexpected keyword argument '" + word +
                                 "' (octwalk.parameters() lists the parameters)");
        }
        for (size_t i = 0; i < set.size(); ++i)
        {
            if (set[i] == k->row)
            {
                throw py::type_error(std::string(function) + "() got both " + setBy[i] + " and " + word +
                                     ", two spellings of parameter " + k->row->name);
            }
        }
        set.push_back(k->row);
        setBy.push_back(word);
        setMember(function, *k, value, base);
    }
    validate(base);
    return base;
}

void bindParameters(py::module_& m)
{
    py::class_<Parameters>(m, "Parameters", "Force-solver parameters (host/core/params.h); read with [name]")
        .def(py::init([](const py::kwargs& kw) { return applyKeywords(pythonDefaults(), kw, "Parameters"); }))
        .def(
            "replace", [](const Parameters& p, const py::kwargs& kw) { return applyKeywords(p, kw, "replace"); },
            "A copy with the given keywords changed")
        .def("to_dict", &toDict)
        .def("__getitem__",
             [](const Parameters& p, const std::string& name) {
                 const ParameterInfo* row = findParameter(name);
                 if (!row) throw py::key_error(name);
                 return memberValue(*row, p);
             })
        .def("__eq__", [](const Parameters& a, const Parameters& b) { return toText(a) == toText(b); })
        .def("__repr__", [](const Parameters& p) { return "octwalk.Parameters(" + toJson(p) + ")"; });

    m.def(
        "make_parameters",
        [](const std::string& function, const py::dict& keywords) {
            return applyKeywords(pythonDefaults(), keywords, function.c_str());
        },
        py::arg("function"), py::arg("keywords"), "Parameters from keywords over pythonDefaults()");
    m.def(
        "parameter_table",
        [] {
            py::list rows;
            for (const ParameterInfo& row : parameterTable()) rows.append(describe(row));
            return rows;
        },
        "Every parameter of the table: name, keywords, type, default, python_default, unit, range, choices, help");
}

} // namespace octwalk::python
