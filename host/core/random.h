#pragma once
/// @file random.h
/// xoshiro256** seeded by splitmix64: the same stream on every platform and compiler, unlike
/// the standard library's distributions, so initial conditions are reproducible by seed.

#include <cstdint>

namespace octwalk {

class Random
{
public:
    explicit Random(uint64_t seed)
    {
        for (auto& s : s_)
        {
            seed += 0x9e3779b97f4a7c15ull;
            uint64_t z = seed;
            z          = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
            z          = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
            s          = z ^ (z >> 31);
        }
    }

    uint64_t next()
    {
        uint64_t result = rotl(s_[1] * 5, 7) * 9;
        uint64_t t      = s_[1] << 17;
        s_[2] ^= s_[0];
        s_[3] ^= s_[1];
        s_[1] ^= s_[2];
        s_[0] ^= s_[3];
        s_[2] ^= t;
        s_[3] = rotl(s_[3], 45);
        return result;
    }

    /// Uniform in [0, 1) with 53 random bits.
    double uniform() { return double(next() >> 11) * 0x1.0p-53; }

    /// Uniform integer in [0, n).
    uint64_t below(uint64_t n) { return uint64_t(uniform() * double(n)) % n; }

private:
    static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
    uint64_t s_[4];
};

} // namespace octwalk
