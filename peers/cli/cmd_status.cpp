// peers/cli/cmd_status.cpp: `archipelago status`: asks a local daemon's (or host's, or peer's) control
// API for its status, peers and rounds, and prints them as the host's round table does.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/log.h"
#include "peers/cli/commands.h"
#include "peers/cli/sessions.h"
#include "peers/control/token.h"

namespace arch::cli {

namespace {

using nlohmann::json;

json get(int port, const std::string& token, const std::string& target) {
    const HttpReply r = http_request(port, "GET", target, token);
    json v;
    try {
        v = json::parse(r.body);
    } catch (const json::exception&) {
        throw Error("status: " + target + " answered " + std::to_string(r.status) + " with a body that is not JSON: " +
                    r.body.substr(0, 200));
    }
    if (r.status != 200) {
        const auto e = v.find("error");
        throw Error("status: " + target + " answered " + std::to_string(r.status) + ": " +
                    (e != v.end() && e->is_string() ? e->get<std::string>() : r.body));
    }
    return v;
}

// A field as text for the terminal: a peer's name or a run's name is what someone else chose.
std::string s(const json& o, const char* key) {
    const auto v = o.find(key);
    if (v == o.end()) return "";
    if (v->is_string()) return log::printable(v->get<std::string>());
    if (v->is_boolean()) return v->get<bool>() ? "yes" : "no";
    if (v->is_number()) return v->dump();
    return "";
}

double n(const json& o, const char* key) {
    const auto v = o.find(key);
    return v != o.end() && v->is_number() ? v->get<double>() : 0.0;
}

void run_status(int port, std::string token_file) {
    if (token_file.empty()) token_file = default_token_file();
    const std::string token = load_token(token_file);

    const json st = get(port, token, "/api/status");
    std::printf("%s %s: %s, round %s of %s (%s, %s islands)%s, %.0f tokens/s, up %.0f s\n", s(st, "role").c_str(),
                s(st, "run").c_str(), s(st, "state").c_str(), s(st, "round").c_str(), s(st, "rounds").c_str(),
                s(st, "mode").c_str(), s(st, "islands").c_str(), n(st, "paused") || s(st, "paused") == "yes" ? " paused" : "",
                n(st, "tokens_per_s"), n(st, "uptime_s"));
    if (!s(st, "theta_hash").empty()) std::printf("θ %s\n", s(st, "theta_hash").c_str());
    if (n(st, "steps_per_round") > 0) std::printf("H %.0f (%s)\n", n(st, "steps_per_round"), s(st, "steps_why").c_str());
    if (s(st, "role") == "host" && s(st, "reachability") != "off")
        std::printf("reachability: %s\n", s(st, "reachability_detail").c_str());
    if (const auto p = st.find("privacy"); p != st.end() && p->is_object())
        std::printf("privacy %s: epsilon %.4g spent of %.4g at delta %g (clip %g, noise multiplier %.4g)\n",
                    s(*p, "mode").c_str(), n(*p, "epsilon_spent"), n(*p, "epsilon_budget"), n(*p, "delta"), n(*p, "clip"),
                    n(*p, "noise_multiplier"));

    const json peers = get(port, token, "/api/peers");
    if (const auto list = peers.find("peers"); list != peers.end() && list->is_array() && !list->empty()) {
        std::printf("\n%-16s %-20s %6s %7s %9s %8s %6s %12s %12s %9s %9s %10s %8s %6s %9s %7s  %s\n", "peer", "fingerprint",
                    "island", "devices", "steps/s", "s/step", "last", "bytes up", "bytes down", "up MB/s", "down MB/s",
                    "compute s", "comm s", "busy", "connected", "in sync", "came in on (from)");
        for (const json& p : *list) {
            const std::string came = s(p, "came_in_on").empty() ? "-" : s(p, "came_in_on") + " (" + s(p, "came_from") + ")";
            std::printf("%-16s %-20s %6s %7s %9.2f %8.3f %6s %12.0f %12.0f %9.2f %9.2f %10.2f %8.2f %5.0f%% %9s %7s  %s\n",
                        s(p, "name").c_str(), s(p, "fingerprint").substr(0, 20).c_str(), s(p, "island").c_str(),
                        s(p, "devices").c_str(), n(p, "steps_per_s"), n(p, "seconds_per_step"), s(p, "last_round").c_str(),
                        n(p, "bytes_up"), n(p, "bytes_down"), n(p, "up_bytes_per_s") / 1e6, n(p, "down_bytes_per_s") / 1e6,
                        n(p, "compute_s_per_round"), n(p, "communication_s_per_round"), 100 * n(p, "utilisation"),
                        s(p, "connected").c_str(), s(p, "in_sync").c_str(), came.c_str());
        }
    }
    const json rounds = get(port, token, "/api/rounds");
    if (const auto list = rounds.find("rounds"); list != rounds.end() && list->is_array() && !list->empty()) {
        std::printf("\n%5s %7s %10s %9s %12s %12s %7s %8s %6s %8s  %s\n", "round", "islands", "inner loss", "val loss", "bytes up",
                    "bytes down", "ratio", "seconds", "H", "epsilon", "why H");
        for (const json& r : *list)
            std::printf("%5.0f %7.0f %10.4f %9.4f %12.0f %12.0f %6.1fx %8.1f %6.0f %8s  %s\n", n(r, "round"), n(r, "islands"),
                        n(r, "inner_loss"), n(r, "val_loss"), n(r, "bytes_up"), n(r, "bytes_down"),
                        n(r, "compression_ratio"), n(r, "seconds"), n(r, "steps"), s(r, "epsilon").substr(0, 8).c_str(),
                        s(r, "steps_why").c_str());
    }
}

}  // namespace

void add_status(CLI::App& app, int& exit_code) {
    struct Flags {
        int port = kDefaultControlPort;
        std::string token_file;
    };
    auto f = std::make_shared<Flags>();
    CLI::App* cmd = app.add_subcommand("status", "print the status, peers and rounds of a local daemon, host or peer");
    cmd->add_option("--control-port", f->port, "the control API's port on 127.0.0.1")->check(CLI::Range(0, 65535));
    cmd->add_option("--token-file", f->token_file, "its bearer token (default $ARCH_TOKEN_FILE or ~/.config/archipelago/token)");
    cmd->callback([f, &exit_code] {
        run_status(f->port, f->token_file);
        exit_code = 0;
    });
}

}  // namespace arch::cli
