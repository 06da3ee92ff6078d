// tests/robustness/main.cpp - the Catch2 main of the robustness tests.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
