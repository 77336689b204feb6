#include <iostream>

#include "host/cli/cli.h"

int main(int argc, char** argv) { return octwalk::runCli(argc, argv, std::cout, std::cerr); }
