// tests/frontend/main.cpp - the Catch2 main of the frontend tests.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
