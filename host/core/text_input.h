#pragma once
/// @file text_input.h
/// Text files a user hands to octwalk (power spectrum tables, output lists), read line by line within
/// bounds: a file that is not text (a device such as /dev/zero, a binary, a huge log) is refused with
/// the line and the limit it broke, before it can take the machine's memory.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace octwalk {

struct TextLimits
{
    /// The most bytes the file may hold (64 MiB: a CAMB table of a million rows is 30 MB).
    uint64_t maxBytes = uint64_t(64) << 20;
    /// The most bytes of one line, without its end of line.
    size_t maxLineBytes = size_t(64) << 10;
};

/// Calls onLine(number, line) for each line of the file, numbered from 1, without its "\n" or "\r\n"
/// (a last line without a newline counts). FormatError "WHAT 'PATH' ..." when the file cannot be opened
/// or read, when line `number` makes it longer than limits.maxBytes, or when a line is longer than
/// limits.maxLineBytes; the message names the line and the limit.
/// @param[in] what  what the file is, for messages: "power spectrum file", "output list"
void forEachTextLine(const std::string& path, const std::string& what,
                     const std::function<void(int64_t, const std::string&)>& onLine, const TextLimits& limits = {});

/// A whole token as a double (strtod syntax, "inf" and "nan" included, so that the caller's range check
/// names them; no trailing characters: "1000abc" is not one). False leaves value as it was.
bool parseRealToken(const std::string& token, double& value);

} // namespace octwalk
