#pragma once
/// @file timer.h
/// Host phase timing with a steady clock.

#include <chrono>

namespace octwalk {

class Stopwatch
{
public:
    Stopwatch() : start_(std::chrono::steady_clock::now()) {}
    /// Seconds since construction or the last lap(), and restart.
    double lap()
    {
        auto now = std::chrono::steady_clock::now();
        double s = std::chrono::duration<double>(now - start_).count();
        start_   = now;
        return s;
    }

private:
    std::chrono::steady_clock::time_point start_;
};

} // namespace octwalk
