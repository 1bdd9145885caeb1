#include "commands.h"

int main(int argc, char** argv) { return kb::cli_main(argc, argv); }
