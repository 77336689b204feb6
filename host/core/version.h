#pragma once
/// @file version.h
/// The program's version and git hash as every output records them (run.json, CSV headers, snapshot
/// metadata, the CLI's first line). The numbers come from the generated octwalk_version.h.

#include <string>

#include "octwalk_version.h"

namespace octwalk {

/// "octwalk VERSION (git HASH)".
inline std::string versionHeader()
{
    return std::string("octwalk ") + OCTWALK_VERSION + " (git " + OCTWALK_GIT_HASH + ")";
}

/// "VERSION HASH", as snapshot metadata stores it.
inline std::string versionAndHash() { return std::string(OCTWALK_VERSION) + " " + OCTWALK_GIT_HASH; }

} // namespace octwalk
