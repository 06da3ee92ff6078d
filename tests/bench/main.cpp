// tests/bench/main.cpp - the Catch2 entry point of txl_bench_tests.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
