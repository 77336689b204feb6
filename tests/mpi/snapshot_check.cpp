// snapshot_check FILE N: exit 0 when the snapshot FILE holds N bodies with the ids 0..N-1, each once;
// prints its count and total mass (for the distributed run's tests: the gather to rank 0 lost or repeated
// no body).
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <vector>

#include "host/io/snapshot.h"

int main(int argc, char** argv)
{
    if (argc != 3)
    {
        std::fprintf(stderr, "usage: snapshot_check FILE N\n");
        return 2;
    }
    try
    {
        const octwalk::ParticleSet s = octwalk::readSnapshot(argv[1]);
        const long long n            = std::atoll(argv[2]);
        double mass                  = 0;
        std::vector<int> seen(size_t(n > 0 ? n : 0), 0);
        for (size_t i = 0; i < s.id.size(); ++i)
        {
            mass += s.mass[i];
            if (s.id[i] >= uint64_t(n) || seen[s.id[i]]++)
            {
                std::fprintf(stderr, "%s: id %llu is outside 0..%lld or repeated\n", argv[1],
                             static_cast<unsigned long long>(s.id[i]), n - 1);
                return 1;
            }
        }
        std::printf("%s: %lld bodies, total mass %.9g\n", argv[1], static_cast<long long>(s.size()), mass);
        if (s.size() != n)
        {
            std::fprintf(stderr, "%s: %lld bodies, expected %lld\n", argv[1], static_cast<long long>(s.size()), n);
            return 1;
        }
        return 0;
    }
    catch (const std::exception& e)
    {
        std::fprintf(stderr, "snapshot_check: %s\n", e.what());
        return 1;
    }
}
