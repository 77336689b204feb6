#include "host/core/text_input.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

#include "common/errors.h"

namespace octwalk {

namespace {

std::string byteText(uint64_t bytes)
{
    if (bytes >= (uint64_t(1) << 20) && bytes % (uint64_t(1) << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
    if (bytes >= 1024 && bytes % 1024 == 0) return std::to_string(bytes >> 10) + " KiB";
    return std::to_string(bytes) + " bytes";
}

} // namespace

void forEachTextLine(const std::string& path, const std::string& what,
                     const std::function<void(int64_t, const std::string&)>& onLine, const TextLimits& limits)
{
    const std::string name = what + " '" + path + "'";
    std::ifstream in(path, std::ios::binary);
    if (!in) throw FormatError(name + " cannot be opened: " + std::strerror(errno));
    std::vector<char> chunk(size_t(1) << 16);
    std::string line;
    int64_t number = 1;
    uint64_t total = 0;
    auto emit      = [&] {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        onLine(number, line);
        line.clear();
        ++number;
    };
    while (in)
    {
        in.read(chunk.data(), std::streamsize(chunk.size()));
        const size_t got = size_t(in.gcount());
        if (got == 0) break;
        for (size_t i = 0; i < got; ++i)
        {
            if (++total > limits.maxBytes)
            {
                throw FormatError(name + " line " + std::to_string(number) + ": the file is larger than the limit of " +
                                  byteText(limits.maxBytes) + " for a text input");
            }
            if (chunk[i] == '\n')
            {
                emit();
                continue;
            }
            if (line.size() >= limits.maxLineBytes)
            {
                throw FormatError(name + " line " + std::to_string(number) + ": longer than the limit of " +
                                  byteText(limits.maxLineBytes) + " for a line (is it a text file?)");
            }
            line += chunk[i];
        }
    }
    if (in.bad()) throw FormatError(name + " could not be read: " + std::strerror(errno));
    if (!line.empty()) emit();
}

bool parseRealToken(const std::string& token, double& value)
{
    if (token.empty() || std::isspace(static_cast<unsigned char>(token[0]))) return false;
    char* end      = nullptr;
    const double v = std::strtod(token.c_str(), &end);
    if (end != token.c_str() + token.size()) return false;
    value = v;
    return true;
}

} // namespace octwalk
