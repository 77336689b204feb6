#pragma once
/// @file errors.h
/// Typed exceptions of the library. Library code never exits; the CLI turns these into a
/// one-line message and a non-zero exit code.

#include <stdexcept>
#include <string>

namespace octwalk {

/// A parameter outside its documented range (names the parameter and the value).
class ParameterError : public std::invalid_argument
{
public:
    using std::invalid_argument::invalid_argument;
};

/// Bad body data (names the body index and the field).
class InputError : public std::invalid_argument
{
public:
    using std::invalid_argument::invalid_argument;
};

/// A requested backend or device that is not available, a device failure, or memory (host or device)
/// that could not be allocated (the message names what and how much).
class BackendError : public std::runtime_error
{
public:
    using std::runtime_error::runtime_error;
};

/// A snapshot or data file that cannot be read or written (names the file, field and offset).
class FormatError : public std::runtime_error
{
public:
    using std::runtime_error::runtime_error;
};

} // namespace octwalk
