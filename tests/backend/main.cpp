// tests/backend/main.cpp - the Catch2 entry point of txl_backend_tests.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
