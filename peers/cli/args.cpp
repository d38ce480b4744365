// peers/cli/args.cpp: parsing and typed access for Args.
#include "peers/cli/args.h"

#include <cstdlib>

#include "core/error.h"

namespace arch::cli {

Args::Args(std::string command, std::vector<std::string> argv, std::string usage)
    : command_(std::move(command)), usage_(std::move(usage)) {
    std::string current;
    for (const std::string& a : argv) {
        if (a == "-h" || a == "--help") {
            help_ = true;
        } else if (a.rfind("--", 0) == 0 && a.size() > 2) {
            const auto eq = a.find('=');
            current = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
            auto& v = values_[current];
            if (eq != std::string::npos) v.push_back(a.substr(eq + 1));
            if (eq == std::string::npos && !v.empty()) v.clear();  // repeated flag: start over
        } else if (!current.empty()) {
            values_[current].push_back(a);
        } else {
            throw Error(command_ + ": unexpected argument '" + a + "'\n" + usage_);
        }
    }
}

std::optional<std::string> Args::maybe(const std::string& name) {
    used_.insert(name);
    auto it = values_.find(name);
    if (it == values_.end()) return std::nullopt;
    if (it->second.empty()) throw Error(command_ + ": --" + name + " expects a value");
    return it->second.back();  // a repeated flag: the last one wins
}

std::string Args::str(const std::string& name, const std::string& fallback) { return maybe(name).value_or(fallback); }

int Args::integer(const std::string& name, int fallback) {
    const auto v = maybe(name);
    if (!v) return fallback;
    char* end = nullptr;
    const long x = std::strtol(v->c_str(), &end, 10);
    if (end == v->c_str() || *end != '\0' || x < -2147483647L || x > 2147483647L)
        throw Error(command_ + ": --" + name + " expects an integer, got '" + *v + "'");
    return static_cast<int>(x);
}

double Args::real(const std::string& name, double fallback) {
    const auto v = maybe(name);
    if (!v) return fallback;
    char* end = nullptr;
    const double x = std::strtod(v->c_str(), &end);
    if (end == v->c_str() || *end != '\0') throw Error(command_ + ": --" + name + " expects a number, got '" + *v + "'");
    return x;
}

bool Args::flag(const std::string& name) {
    used_.insert(name);
    auto it = values_.find(name);
    if (it == values_.end()) return false;
    if (!it->second.empty()) throw Error(command_ + ": --" + name + " takes no value");
    return true;
}

std::vector<std::string> Args::list(const std::string& name) {
    used_.insert(name);
    auto it = values_.find(name);
    return it == values_.end() ? std::vector<std::string>{} : it->second;
}

void Args::finish() {
    for (const auto& [name, v] : values_)
        if (!used_.count(name)) throw Error(command_ + ": unknown option --" + name + "\n" + usage_);
}

}  // namespace arch::cli
