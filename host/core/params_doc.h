#pragma once
/// @file params_doc.h
/// docs/parameters.md, the parameter reference, as the parameter table (params.h) renders it: every row's
/// command-line option, name in run.json and checkpoints, default, unit, valid values and description.
/// dev/params_doc.cpp (octwalk_params_doc) prints it; tests/unit/test_params_doc.cpp checks the committed page
/// against it.

#include <string>

namespace octwalk {

/// The command that regenerates docs/parameters.md, run from the repository root with the build in build/.
extern const char* const kParameterReferenceCommand;

/// The whole page (Markdown), the same on every call and platform: a header that says it is generated and by
/// kParameterReferenceCommand, a summary table and one section per parameter, in table order.
std::string parameterReferenceMarkdown();

} // namespace octwalk
