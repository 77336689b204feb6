#include "host/cli/lists.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "common/errors.h"
#include "host/core/number_text.h"

namespace octwalk::cli {

namespace {

// ---------------------------------------------------------------------------------------------
// Strict parsing of option lists

[[noreturn]] void badItem(const std::string& option, const std::string& text, const std::string& why)
{
    throw ParameterError("option --" + option + " = '" + text + "' is invalid: " + why);
}

/// Items between commas; an empty item ("0.2,,0.3", a trailing comma) is an error, not skipped.
std::vector<std::string> splitList(const std::string& option, const std::string& text)
{
    std::vector<std::string> items;
    size_t start = 0;
    while (true)
    {
        size_t comma     = text.find(',', start);
        std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (item.empty()) badItem(option, text, "it has an empty item");
        items.push_back(item);
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return items;
}

/// strtod accepts leading blanks, hex floats, "inf" and "nan"; a study option wants none of them.
double parseReal(const std::string& option, const std::string& text, const std::string& item)
{
    bool plain = !item.empty() && item.find_first_not_of("0123456789.eE+-") == std::string::npos;
    char* end  = nullptr;
    errno      = 0;
    double v   = plain ? std::strtod(item.c_str(), &end) : 0.0;
    if (!plain || end != item.c_str() + item.size() || errno == ERANGE || !std::isfinite(v))
    {
        badItem(option, text, "'" + item + "' is not a number");
    }
    return v;
}

int64_t parseInteger(const std::string& option, const std::string& text, const std::string& item)
{
    bool digits = !item.empty() && item.find_first_not_of("0123456789") == std::string::npos;
    char* end   = nullptr;
    errno       = 0;
    long long v = digits ? std::strtoll(item.c_str(), &end, 10) : 0;
    if (!digits || end != item.c_str() + item.size() || errno == ERANGE)
    {
        badItem(option, text, "'" + item + "' is not a non-negative integer");
    }
    return int64_t(v);
}

/// "4096" or "2^12".
int64_t parseCount(const std::string& option, const std::string& text, const std::string& item)
{
    if (item.rfind("2^", 0) != 0) return parseInteger(option, text, item);
    int64_t k = parseInteger(option, text, item.substr(2));
    if (k > 62) badItem(option, text, "'" + item + "' is too large");
    return int64_t(1) << k;
}

bool isPowerOfTwo(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

/// Rounds away the binary noise of start + i * step (0.30000000000000004 -> 0.3).
double roundTo12Digits(double v)
{
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.12g", v);
    return std::strtod(buf, nullptr);
}

std::vector<double> thetaRange(const std::string& option, const std::string& text, const std::string& item)
{
    size_t a = item.find(':'), b = item.find(':', a + 1);
    if (b == std::string::npos || item.find(':', b + 1) != std::string::npos)
    {
        badItem(option, text, "range '" + item + "' must be start:stop:step");
    }
    double start = parseReal(option, text, item.substr(0, a));
    double stop  = parseReal(option, text, item.substr(a + 1, b - a - 1));
    double step  = parseReal(option, text, item.substr(b + 1));
    if (!(step > 0)) badItem(option, text, "the step of '" + item + "' must be > 0");
    if (stop < start) badItem(option, text, "range '" + item + "' ends before it starts");
    // The tolerance keeps the stop value when (stop - start) / step is an integer up to round-off.
    double count = std::floor((stop - start) / step + 1e-9) + 1;
    if (count > 10000) badItem(option, text, "range '" + item + "' has more than 10000 values");
    std::vector<double> values;
    for (int64_t i = 0; i < int64_t(count); ++i) values.push_back(roundTo12Digits(start + double(i) * step));
    return values;
}

std::vector<int64_t> powerOfTwoRange(const std::string& option, const std::string& text, const std::string& item)
{
    size_t colon = item.find(':');
    if (item.find(':', colon + 1) != std::string::npos)
    {
        badItem(option, text, "range '" + item + "' must be 2^a:2^b (every power of two in between)");
    }
    int64_t lo = parseCount(option, text, item.substr(0, colon));
    int64_t hi = parseCount(option, text, item.substr(colon + 1));
    if (!isPowerOfTwo(lo) || !isPowerOfTwo(hi))
    {
        badItem(option, text, "the bounds of range '" + item + "' must be powers of two");
    }
    if (hi < lo) badItem(option, text, "range '" + item + "' ends before it starts");
    std::vector<int64_t> values;
    for (int64_t v = lo; v <= hi; v *= 2)
    {
        values.push_back(v);
        if (v == hi) break; // v * 2 could overflow at 2^62
    }
    return values;
}

} // namespace

// ---------------------------------------------------------------------------------------------
// Option lists

std::vector<double> parseThetaList(const std::string& option, const std::string& text)
{
    std::vector<double> values;
    for (const std::string& item : splitList(option, text))
    {
        if (item.find(':') != std::string::npos)
        {
            for (double v : thetaRange(option, text, item)) values.push_back(v);
        }
        else
        {
            values.push_back(parseReal(option, text, item));
        }
    }
    for (double v : values)
    {
        if (!(v > 0 && v <= 1)) badItem(option, text, "theta " + significantDigits(v, 12) + " is outside (0, 1]");
    }
    return values;
}

std::vector<int> parseIntList(const std::string& option, const std::string& text, int minValue)
{
    std::vector<int> values;
    for (const std::string& item : splitList(option, text))
    {
        int64_t v = parseInteger(option, text, item);
        if (v < minValue || v > INT32_MAX)
        {
            badItem(option, text, item + " is outside [" + std::to_string(minValue) + ", 2147483647]");
        }
        values.push_back(int(v));
    }
    return values;
}

std::vector<int64_t> parseCountList(const std::string& option, const std::string& text, int64_t minValue)
{
    std::vector<int64_t> values;
    for (const std::string& item : splitList(option, text))
    {
        if (item.find(':') != std::string::npos)
        {
            for (int64_t v : powerOfTwoRange(option, text, item)) values.push_back(v);
        }
        else
        {
            values.push_back(parseCount(option, text, item));
        }
    }
    for (int64_t v : values)
    {
        if (v < minValue) badItem(option, text, std::to_string(v) + " must be >= " + std::to_string(minValue));
    }
    return values;
}

std::vector<std::string> parseNameList(const std::string& option, const std::string& text,
                                       const std::vector<std::string>& allowed)
{
    std::vector<std::string> names = splitList(option, text);
    for (const std::string& name : names)
    {
        if (std::find(allowed.begin(), allowed.end(), name) == allowed.end())
        {
            std::string choices;
            for (const std::string& a : allowed) choices += (choices.empty() ? "" : ", ") + a;
            badItem(option, text, "'" + name + "' is not one of " + choices);
        }
    }
    return names;
}

} // namespace octwalk::cli
