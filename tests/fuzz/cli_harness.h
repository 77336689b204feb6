#pragma once
// What the command-line fuzz target (fuzz_cli.cpp) does with one input, shared with the regression
// replay (test_fuzz_replay.cpp).
//
// The input is split into argv tokens on NUL and whitespace and passed to octwalk::runCli with string
// streams, inside a sandbox directory, so that everything a command writes stays there:
//   - no token may contain '/' (so no path leaves the sandbox), and --restart is not fuzzed (a restart
//     writes into its checkpoint's directory);
//   - forces, run, ic, accuracy and profile always get "--n N" first, with N from an optional second
//     token of at most two digits (default 16, at most 64); run also gets "--t-end 0.03125 --dt 0.0078125
//     --quiet" (4 steps), accuracy "--repeat 1" and profile "--repeat 2"; the sweeps of accuracy and
//     profile take no ranges (':') and at most 4 commas in all. So no input can start a long
//     computation, and the fuzzer giving one of these options again is a usage error;
//   - any other first token must be convert, a help or version flag, or start with '-' or a digit
//     (an unknown command): other commands are not run.
// Snapshot files a.tipsy, b.gadget and c.hdf5 (16 bodies) lie in the sandbox for run --input and
// convert. The properties: runCli returns 0, 1 or 2; no command at all prints the usage (code 2); any
// other non-zero return writes exactly one line to err,
// and that line shows an octwalk error, not a stray standard-library exception (std::bad_alloc,
// std::length_error, a failed std::stoll, ...).
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "snapshot_harness.h"
#include "host/cli/cli.h"
#include "host/models/models.h"
#include "host/io/snapshot.h"

namespace octwalk::fuzz {

constexpr size_t kMaxTokens      = 24;
constexpr size_t kMaxTokenLength = 64;
constexpr int kDefaultBodies     = 16;
constexpr int kMaxBodies         = 64;

/// argv tokens of the input, or false when the input is outside the sandbox's rules.
inline bool cliTokens(const uint8_t* data, size_t size, std::vector<std::string>& argv)
{
    std::vector<std::string> tokens;
    std::string token;
    for (size_t i = 0; i <= size; ++i)
    {
        const char c = i < size ? char(data[i]) : '\0';
        if (c == '\0' || std::isspace(static_cast<unsigned char>(c)))
        {
            if (!token.empty()) tokens.push_back(token);
            token.clear();
            continue;
        }
        if (c == '/') return false;
        token += c;
        if (token.size() > kMaxTokenLength) return false;
    }
    if (tokens.size() > kMaxTokens) return false;
    for (const std::string& t : tokens)
    {
        if (t.rfind("--restart", 0) == 0) return false;
    }

    argv = {"octwalk"};
    if (tokens.empty()) return true;
    const std::string command = tokens[0];
    const bool sweep          = command == "accuracy" || command == "profile";
    if (command == "forces" || command == "run" || command == "ic" || sweep)
    {
        if (sweep)
        {
            size_t commas = 0;
            for (const std::string& t : tokens)
            {
                if (t.find(':') != std::string::npos) return false;
                commas += size_t(std::count(t.begin(), t.end(), ','));
            }
            if (commas > 4) return false;
        }
        int n     = kDefaultBodies;
        size_t at = 1;
        if (tokens.size() > 1 && tokens[1].size() <= 2 && std::all_of(tokens[1].begin(), tokens[1].end(), [](char c) {
                return std::isdigit(static_cast<unsigned char>(c));
            }))
        {
            n  = std::stoi(tokens[1]);
            at = 2;
        }
        if (n > kMaxBodies) return false;
        argv.insert(argv.end(), {command, "--n", std::to_string(n)});
        if (command == "run") argv.insert(argv.end(), {"--t-end", "0.03125", "--dt", "0.0078125", "--quiet"});
        if (command == "accuracy") argv.insert(argv.end(), {"--repeat", "1"});
        if (command == "profile") argv.insert(argv.end(), {"--repeat", "2"});
        argv.insert(argv.end(), tokens.begin() + long(at), tokens.end());
        return true;
    }
    const std::set<std::string> harmless{"convert", "--help", "-h", "help", "--version"};
    const unsigned char first = static_cast<unsigned char>(command[0]);
    if (!harmless.count(command) && command[0] != '-' && !std::isdigit(first)) return false;
    argv.insert(argv.end(), tokens.begin(), tokens.end());
    return true;
}

/// The sandbox of the command-line target: a scratch directory holding the snapshot fixtures.
class CliSandbox
{
public:
    CliSandbox() : scratch_("cli")
    {
        ParticleSet p = makePlummer(kDefaultBodies, 11);
        writeSnapshot(scratch_.file("a.tipsy"), SnapshotFormat::TipsyStandard, p);
        writeSnapshot(scratch_.file("b.gadget"), SnapshotFormat::Gadget2, p);
        fixtures_ = {"a.tipsy", "b.gadget"};
        try
        {
            writeSnapshot(scratch_.file("c.hdf5"), SnapshotFormat::Hdf5, p);
            fixtures_.insert("c.hdf5");
        }
        catch (const FormatError&)
        {
            // built without HDF5: c.hdf5 names a missing file
        }
    }

    /// Runs one input; PropertyViolation when the command line misbehaves.
    void run(const uint8_t* data, size_t size)
    {
        std::vector<std::string> args;
        if (!cliTokens(data, size, args)) return;
        std::vector<const char*> argv;
        for (const std::string& a : args) argv.push_back(a.c_str());

        std::ostringstream out, err;
        const std::filesystem::path home = std::filesystem::current_path();
        std::filesystem::current_path(scratch_.path());
        int code = 0;
        try
        {
            code = runCli(int(argv.size()), argv.data(), out, err);
        }
        catch (...)
        {
            std::filesystem::current_path(home);
            cleanUp();
            throw;
        }
        std::filesystem::current_path(home);
        cleanUp();

        const std::string message = err.str();
        require(code == 0 || code == 1 || code == 2, "runCli returned " + std::to_string(code));
        if (argv.size() == 1)
        {
            require(code == 2 && message.find("usage: octwalk") != std::string::npos, "no command: no usage on err");
            return;
        }
        if (code == 0) return;
        const size_t lines = size_t(std::count(message.begin(), message.end(), '\n'));
        require(lines == 1 && message.back() == '\n', "error output is not one line: " + message);
        // "octwalk COMMAND: error: WHAT" for a runtime error: WHAT must not be the bare what() of a
        // standard-library exception (the user's own words may contain anything, so only WHAT is checked).
        const size_t at = message.find(": error: ");
        if (code == 1 && at != std::string::npos)
        {
            const std::string what = message.substr(at + 9, message.size() - at - 10);
            const std::set<std::string> bare{
                "stoi",          "stol", "stoll", "stoul",          "stoull",
                "stof",          "stod", "stold", "std::bad_alloc", "std::bad_array_new_length",
                "std::exception"};
            const bool stray = bare.count(what) || what.rfind("vector::", 0) == 0 ||
                               what.rfind("basic_string", 0) == 0 || what.rfind("cannot create std::vector", 0) == 0 ||
                               what.rfind("std::", 0) == 0;
            require(!stray, "a standard-library exception escaped: " + message);
        }
    }

private:
    /// Removes everything a command wrote; the fixtures stay.
    void cleanUp()
    {
        std::error_code ignored;
        for (const auto& entry : std::filesystem::directory_iterator(scratch_.path()))
        {
            if (!fixtures_.count(entry.path().filename().string())) std::filesystem::remove_all(entry.path(), ignored);
        }
    }

    ScratchDirectory scratch_;
    std::set<std::string> fixtures_;
};

} // namespace octwalk::fuzz
