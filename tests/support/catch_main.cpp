// tests/support/catch_main.cpp - the one Catch2 main every test executable links (txl_catch_main):
// Catch2 2's implementation is compiled once instead of once per executable.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
