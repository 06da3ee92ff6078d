// tests/driver/main.cpp - the Catch2 main of the driver tests.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
