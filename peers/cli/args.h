// peers/cli/args.h: a small command-line flag reader for the archipelago subcommands.
// Flags are "--name value" or "--name=value"; booleans are "--name". Every flag a command reads is
// declared by reading it; finish() then rejects any flag nobody asked for, with the command's usage.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace arch::cli {

class Args {
public:
    Args(std::string command, std::vector<std::string> argv, std::string usage);

    std::string str(const std::string& name, const std::string& fallback);
    std::optional<std::string> maybe(const std::string& name);
    int integer(const std::string& name, int fallback);
    double real(const std::string& name, double fallback);
    bool flag(const std::string& name);                     // a boolean flag, present or not
    std::vector<std::string> list(const std::string& name);  // "--input a b c" (values up to the next flag)
    bool help() const { return help_; }
    const std::string& usage() const { return usage_; }
    void finish();  // throws arch::Error on unknown flags

private:
    std::string command_, usage_;
    std::map<std::string, std::vector<std::string>> values_;
    std::set<std::string> used_;
    bool help_ = false;
};

}  // namespace arch::cli
