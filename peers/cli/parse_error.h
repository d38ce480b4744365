// peers/cli/parse_error.h: the message for a command line CLI11 refused, shared by archipelago and
// every bench: CLI11's own words, plus the closest known spelling of a mistyped flag or command
// ("unknown option --stpes (did you mean '--steps'?)"). Header-only, so the benches can use it.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "core/spelling.h"

namespace arch::cli {

inline std::string explain_parse_error(const CLI::ParseError& e, const CLI::App& app) {
    const std::vector<CLI::App*> chosen = app.get_subcommands();
    const CLI::App& where = chosen.empty() ? app : *chosen.back();
    const std::string who = chosen.empty() ? app.get_name() : app.get_name() + " " + where.get_name();
    if (dynamic_cast<const CLI::ExtrasError*>(&e) || dynamic_cast<const CLI::RequiredError*>(&e)) {
        for (const std::string& extra : app.remaining(true)) {
            if (extra.rfind("--", 0) == 0) {
                std::vector<std::string> flags;
                for (const CLI::Option* o : where.get_options())
                    for (const std::string& name : o->get_lnames()) flags.push_back(name);
                const std::string flag = extra.substr(2, extra.find('=') == std::string::npos ? std::string::npos : extra.find('=') - 2);
                return who + ": unknown option --" + flag + did_you_mean(flag, flags, "--") + "; see '" + who + " --help'";
            }
            if (chosen.empty() && !app.get_subcommands({}).empty()) {
                std::vector<std::string> commands;
                for (const CLI::App* sub : app.get_subcommands({})) commands.push_back(sub->get_name());
                return "unknown command '" + extra + "'" + did_you_mean(extra, commands) + "; see '" + who + " --help'";
            }
            return who + ": unexpected argument '" + extra + "'; see '" + who + " --help'";
        }
    }
    return who + ": " + e.what();
}

}  // namespace arch::cli
