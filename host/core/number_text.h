#pragma once
/// @file number_text.h
/// How messages and reports write a number: printf's %.*g, the form the default stream output takes.

#include <cstdio>
#include <string>

namespace octwalk {

/// v to `digits` significant digits.
inline std::string significantDigits(double v, int digits)
{
    char text[40];
    std::snprintf(text, sizeof(text), "%.*g", digits, v);
    return text;
}

/// v to 17 significant digits: the value reads back as the same double, as an error message names a bad one.
inline std::string exactDigits(double v) { return significantDigits(v, 17); }

} // namespace octwalk
