// octwalk_params_doc: prints docs/parameters.md, the parameter reference, from the parameter table
// (host/core/params.cpp). From the repository root, with the build in build/:
//   cmake --build build --target octwalk_params_doc && build/octwalk_params_doc > docs/parameters.md
#include <iostream>

#include "host/core/params_doc.h"

int main(int argc, char** argv)
{
    if (argc > 1)
    {
        std::cerr << "usage: " << argv[0] << " > docs/parameters.md\n"
                  << "prints the parameter reference generated from the parameter table; regenerate it with\n  "
                  << octwalk::kParameterReferenceCommand << "\n";
        return 2;
    }
    std::cout << octwalk::parameterReferenceMarkdown();
    std::cout.flush();
    return std::cout ? 0 : 1;
}
