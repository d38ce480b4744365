// tests/catch_main.cpp: the one Catch2 main, compiled once into a static library for all test binaries.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
