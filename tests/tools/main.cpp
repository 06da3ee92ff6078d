// tests/tools/main.cpp - the Catch2 main of the tools tests.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
