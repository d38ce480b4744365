// peers/cli/cmd_status.cpp: `archipelago status`: asks a local daemon's (or host's, or peer's) control
// API for its status, peers and rounds, and prints them as the host's round table does.
#include <cstdio>

#include "core/error.h"
#include "peers/cli/args.h"
#include "peers/cli/commands.h"
#include "peers/cli/sessions.h"
#include "peers/control/json.h"
#include "peers/control/token.h"

namespace arch::cli {

namespace {

json::Value get(int port, const std::string& token, const std::string& target) {
    const HttpReply r = http_request(port, "GET", target, token);
    json::Value v = json::parse(r.body);
    if (r.status != 200) {
        const json::Value* e = v.get("error");
        throw Error("status: " + target + " answered " + std::to_string(r.status) + ": " +
                    (e && e->is(json::Value::Kind::string) ? e->s : r.body));
    }
    return v;
}

std::string s(const json::Value& o, const char* key) {
    const json::Value* v = o.get(key);
    if (!v) return "";
    if (v->is(json::Value::Kind::string)) return v->s;
    if (v->is(json::Value::Kind::boolean)) return v->b ? "yes" : "no";
    if (v->is(json::Value::Kind::number)) return json::number(v->n);
    return "";
}

double n(const json::Value& o, const char* key) {
    const json::Value* v = o.get(key);
    return v && v->is(json::Value::Kind::number) ? v->n : 0.0;
}

}  // namespace

int cmd_status(const std::vector<std::string>& argv) {
    Args args("status", argv,
              "usage: archipelago status [--control-port P] [--token-file F]\n"
              "       prints the status, peers and rounds of the daemon, host or peer serving the control API\n");
    if (args.help()) {
        std::fputs(args.usage().c_str(), stdout);
        return 0;
    }
    const int port = args.integer("control-port", kDefaultControlPort);
    std::string token_file = args.str("token-file", "");
    args.finish();
    if (token_file.empty()) token_file = default_token_file();
    const std::string token = load_token(token_file);

    const json::Value st = get(port, token, "/api/status");
    std::printf("%s %s: %s, round %s of %s (%s, %s islands)%s, %.0f tokens/s, up %.0f s\n", s(st, "role").c_str(),
                s(st, "run").c_str(), s(st, "state").c_str(), s(st, "round").c_str(), s(st, "rounds").c_str(),
                s(st, "mode").c_str(), s(st, "islands").c_str(), n(st, "paused") || s(st, "paused") == "yes" ? " paused" : "",
                n(st, "tokens_per_s"), n(st, "uptime_s"));
    if (!s(st, "theta_hash").empty()) std::printf("θ %s\n", s(st, "theta_hash").c_str());

    const json::Value peers = get(port, token, "/api/peers");
    if (const json::Value* list = peers.get("peers"); list && !list->items.empty()) {
        std::printf("\n%-16s %-20s %6s %7s %9s %6s %12s %12s %9s %7s\n", "peer", "fingerprint", "island", "devices",
                    "steps/s", "last", "bytes up", "bytes down", "connected", "in sync");
        for (const json::Value& p : list->items)
            std::printf("%-16s %-20s %6s %7s %9.2f %6s %12.0f %12.0f %9s %7s\n", s(p, "name").c_str(),
                        s(p, "fingerprint").substr(0, 20).c_str(), s(p, "island").c_str(), s(p, "devices").c_str(),
                        n(p, "steps_per_s"), s(p, "last_round").c_str(), n(p, "bytes_up"), n(p, "bytes_down"),
                        s(p, "connected").c_str(), s(p, "in_sync").c_str());
    }
    const json::Value rounds = get(port, token, "/api/rounds");
    if (const json::Value* list = rounds.get("rounds"); list && !list->items.empty()) {
        std::printf("\n%5s %7s %10s %9s %12s %12s %7s %8s\n", "round", "islands", "inner loss", "val loss", "bytes up",
                    "bytes down", "ratio", "seconds");
        for (const json::Value& r : list->items)
            std::printf("%5.0f %7.0f %10.4f %9.4f %12.0f %12.0f %6.1fx %8.1f\n", n(r, "round"), n(r, "islands"),
                        n(r, "inner_loss"), n(r, "val_loss"), n(r, "bytes_up"), n(r, "bytes_down"),
                        n(r, "compression_ratio"), n(r, "seconds"));
    }
    return 0;
}

}  // namespace arch::cli
