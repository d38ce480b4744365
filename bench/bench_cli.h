// bench/bench_cli.h: what every bench main shares: one main() shape around a CLI11 App, and one
// --json row per line (nlohmann::ordered_json, so keys print in the order the bench adds them).
// Parsing and JSON are the libraries' own; this file only fixes the exit codes and the row format.
#pragma once

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "core/named_enum.h"
#include "peers/cli/parse_error.h"

namespace arch::bench {

// Parses argv into app's options, then runs body(). --help exits 0; a bad or unknown flag exits
// non-zero naming it, with the closest known flag; anything body throws prints "error: ..." and returns 1.
template <class Body>
int run_main(CLI::App& app, int argc, char** argv, Body&& body) {
    if (app.get_name().empty() && argc > 0) app.name(std::filesystem::path(argv[0]).filename().string());
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        std::fprintf(stderr, "error: %s\n", cli::explain_parse_error(e, app).c_str());
        return e.get_exit_code();
    }
    try {
        body();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
    return 0;
}

// A flag whose value is one of an enum's names (core/named_enum.h).
template <class E>
CLI::Option* add_choice(CLI::App& app, const std::string& flag, E& out, const EnumNames<E>& names, const std::string& help) {
    const std::map<std::string, E> by_name(names.begin(), names.end());
    return app.add_option(flag, out, help)->transform(CLI::CheckedTransformer(by_name));
}

// For a count that must be at least 1 (steps, repetitions, islands); --help shows it as POSITIVE.
inline CLI::Validator at_least_one() {
    return CLI::Range(1, std::numeric_limits<int>::max()).description("POSITIVE");
}

// One --json row on its own line of stdout, flushed so a long run shows each row as it finishes.
inline void print_row(const nlohmann::ordered_json& row) {
    std::puts(row.dump().c_str());
    std::fflush(stdout);
}

// x to `decimals` places, so a JSON number carries the digits the table shows, not all seventeen.
inline double rounded(double x, int decimals) {
    const double scale = std::pow(10.0, decimals);
    return std::round(x * scale) / scale;
}

}  // namespace arch::bench
