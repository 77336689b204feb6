#pragma once
/// @file json.h
/// The small pieces of JSON that octwalk's outputs (run.json, sidecars, study reports) are built from.

#include <string>

namespace octwalk {

/// JSON string literal of s, with '"', '\\' and newlines escaped.
std::string jsonString(const std::string& s);

} // namespace octwalk
