// peers/control/control_api.cpp: routing, auth and the JSON bodies of the control API.
// Bodies are nlohmann::ordered_json, so fields come out in the order docs/control-api.md lists them;
// non-finite numbers are written as null, and invalid UTF-8 in a name or log line as U+FFFD.
#include "peers/control/control_api.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "net/keys.h"
#include "peers/control/token.h"

namespace arch {

namespace {

using nlohmann::ordered_json;

constexpr int kMaxBodyDepth = 64;  // nesting levels a request body may have below its top value

// Compact JSON text. A peer name or log line that is not UTF-8 must not turn a status into a 500.
std::string json_text(const ordered_json& j) { return j.dump(-1, ' ', false, ordered_json::error_handler_t::replace); }

ApiResponse ok_json(std::string body) {
    ApiResponse r;
    r.body = std::move(body);
    return r;
}

ApiResponse ok() { return ok_json(json_text({{"ok", true}})); }

// "/api/log?lines=5&x=y" -> path "/api/log", and the value of one query parameter.
std::string path_of(const std::string& target) { return target.substr(0, target.find('?')); }

std::optional<std::string> query_param(const std::string& target, const std::string& name) {
    const std::size_t q = target.find('?');
    if (q == std::string::npos) return std::nullopt;
    std::size_t i = q + 1;
    while (i <= target.size()) {
        const std::size_t amp = std::min(target.find('&', i), target.size());
        const std::string pair = target.substr(i, amp - i);
        const std::size_t eq = pair.find('=');
        if (pair.substr(0, eq) == name) return eq == std::string::npos ? "" : pair.substr(eq + 1);
        i = amp + 1;
    }
    return std::nullopt;
}

bool is_get_route(const std::string& path) {
    return path == "/api/status" || path == "/api/peers" || path == "/api/rounds" || path == "/api/log" ||
           path == "/metrics";
}

bool is_post_route(const std::string& path) {
    return path == "/api/host" || path == "/api/join" || path == "/api/leave" || path == "/api/pause" ||
           path == "/api/resume" || path == "/api/invite" || path == "/api/revoke";
}

// A POST body as a JSON object; throws arch::Error saying what is wrong with it (the caller's 400).
nlohmann::json parse_body(const std::string& body) {
    nlohmann::json parsed;
    try {
        parsed = nlohmann::json::parse(body, [](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
            if (depth > kMaxBodyDepth) throw Error("malformed JSON: nested more than 64 levels deep");
            return true;
        });
    } catch (const nlohmann::json::exception& e) {
        // "[json.exception.parse_error.101] parse error at line 1, column 2: ...", without the tag
        std::string what = e.what();
        if (what.rfind("[json.exception.", 0) == 0) what.erase(0, what.find("] ") + 2);
        throw Error("malformed JSON: " + what);
    }
    if (!parsed.is_object()) throw Error("the body must be a JSON object");
    return parsed;
}

const std::string& required_string(const nlohmann::json& body, const std::string& key) {
    const auto it = body.find(key);
    if (it == body.end()) throw Error("the body has no \"" + key + "\" field");
    if (!it->is_string()) throw Error("\"" + key + "\" must be a string");
    return it->get_ref<const std::string&>();
}

// An optional string field: "" when absent.
std::string optional_string(const nlohmann::json& body, const std::string& key) {
    return body.contains(key) ? required_string(body, key) : std::string();
}

// A Prometheus sample value: the shortest decimal that reads back as v, or NaN, +Inf, -Inf.
std::string sample_value(double v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof(buf), v);
    return std::string(buf, r.ptr);
}

std::string metric(const std::string& name, const std::string& type, const std::string& help,
                   const std::vector<std::pair<std::string, double>>& samples) {
    std::string out = "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
    for (const auto& [labels, v] : samples) out += name + labels + " " + sample_value(v) + "\n";
    return out;
}

// A Prometheus label value: backslash, double quote and newline escaped (a peer names itself).
std::string label_value(const std::string& v) {
    std::string out;
    for (char c : v) {
        if (c == '\\' || c == '"') out += '\\';
        if (c == '\n') out += "\\n";
        else out += c;
    }
    return out;
}

}  // namespace

ApiResponse api_error(int status, const std::string& message) {
    ApiResponse r;
    r.status = status;
    r.body = json_text({{"error", message}});
    return r;
}

namespace {
// null when the run has no differential privacy.
ordered_json privacy_json(const PrivacyFigures& p) {
    if (p.mode == "off") return nullptr;
    return ordered_json{{"mode", p.mode},
                        {"clip", p.clip},
                        {"noise_multiplier", p.noise_multiplier},
                        {"delta", p.delta},
                        {"epsilon_budget", p.epsilon_budget},
                        {"epsilon_spent", p.epsilon_spent},
                        {"honest", p.honest},
                        {"updates_affordable", p.updates_affordable}};
}
}  // namespace

std::string status_json(const StatusSnapshot& s) {
    return json_text({{"role", s.role},
                      {"run", s.run},
                      {"state", s.state},
                      {"round", s.round},
                      {"rounds", s.rounds},
                      {"mode", s.mode},
                      {"islands", s.islands},
                      {"theta_hash", s.theta_hash},
                      {"paused", s.paused},
                      {"tokens_per_s", s.tokens_per_s},
                      {"uptime_s", s.uptime_s},
                      {"rounds_finished", s.rounds_finished},
                      {"steps_per_round", s.steps_per_round},
                      {"steps_why", s.steps_why},
                      {"reachability", s.reachability},
                      {"external_endpoint", s.external_endpoint},
                      {"reachability_detail", s.reachability_detail},
                      {"privacy", privacy_json(s.privacy)}});
}

std::string peers_json(const StatusSnapshot& s) {
    ordered_json list = ordered_json::array();
    for (const PeerRow& p : s.peers)
        list.push_back(ordered_json{{"name", p.name},
                                    {"fingerprint", p.fingerprint},
                                    {"island", p.island},
                                    {"devices", p.devices},
                                    {"steps_per_s", p.steps_per_s},
                                    {"last_round", p.last_round},
                                    {"bytes_up", p.bytes_up},
                                    {"bytes_down", p.bytes_down},
                                    {"connected", p.connected},
                                    {"in_sync", p.in_sync},
                                    {"seconds_per_step", p.seconds_per_step},
                                    {"up_bytes_per_s", p.up_bytes_per_s},
                                    {"down_bytes_per_s", p.down_bytes_per_s},
                                    {"wire_bytes_sent", p.wire_bytes_sent},
                                    {"wire_bytes_received", p.wire_bytes_received},
                                    {"compute_s_per_round", p.compute_s_per_round},
                                    {"communication_s_per_round", p.communication_s_per_round},
                                    {"utilisation", p.utilisation},
                                    {"came_from", p.came_from},
                                    {"came_in_on", p.came_in_on}});
    return json_text({{"peers", list}});
}

std::string rounds_json(const StatusSnapshot& s) {
    ordered_json list = ordered_json::array();
    for (const RoundRow& r : s.history)
        list.push_back(ordered_json{{"round", r.round},
                                    {"islands", r.islands},
                                    {"inner_loss", static_cast<double>(r.mean_inner_loss)},
                                    {"val_loss", static_cast<double>(r.val_loss)},
                                    {"bytes_up", r.bytes_up},
                                    {"bytes_down", r.bytes_down},
                                    {"compression_ratio", r.compression_ratio},
                                    {"seconds", r.seconds},
                                    {"epsilon", r.epsilon >= 0 ? ordered_json(r.epsilon) : ordered_json(nullptr)},
                                    {"steps", r.steps},
                                    {"steps_why", r.steps_why}});
    return json_text({{"rounds", list}});
}

std::string log_json(const std::vector<std::string>& lines) {
    return json_text({{"lines", lines}});
}

std::string metrics_text(const StatusSnapshot& s) {
    const double nan = std::nan("");
    int connected = 0;
    for (const PeerRow& p : s.peers) connected += p.connected;
    std::vector<std::pair<std::string, double>> sent, received;
    for (protocol::Type t : RunStatus::kTypes) {
        const std::string label = std::string("{type=\"") + protocol::type_name(t) + "\"}";
        const auto si = s.bytes_sent.find(t);
        const auto ri = s.bytes_received.find(t);
        sent.emplace_back(label, si == s.bytes_sent.end() ? 0.0 : static_cast<double>(si->second));
        received.emplace_back(label, ri == s.bytes_received.end() ? 0.0 : static_cast<double>(ri->second));
    }
    std::string out;
    out += metric("archipelago_round", "gauge", "The round in progress (or next to start).",
                  {{"", static_cast<double>(s.round)}});
    out += metric("archipelago_rounds_planned", "gauge", "Rounds the run is configured for.", {{"", s.rounds}});
    out += metric("archipelago_rounds_total", "counter", "Rounds finished (host) or applied (peer) by this process.",
                  {{"", static_cast<double>(s.rounds_finished)}});
    out += metric("archipelago_inner_loss", "gauge", "Latest mean inner training loss (NaN before the first).",
                  {{"", s.inner_loss >= 0 ? s.inner_loss : nan}});
    out += metric("archipelago_val_loss", "gauge", "Validation loss of the latest global model (NaN if unknown).",
                  {{"", s.val_loss >= 0 ? s.val_loss : nan}});
    out += metric("archipelago_bytes_sent_total", "counter", "Bytes sent on the run's link, by message type.", sent);
    out += metric("archipelago_bytes_received_total", "counter", "Bytes received on the run's link, by message type.",
                  received);
    out += metric("archipelago_compression_ratio", "gauge",
                  "fp32 size of the latest round's pseudo-gradients over the bytes that carried them.",
                  {{"", s.compression_ratio}});
    out += metric("archipelago_steps_per_round", "gauge",
                  "H, the inner steps of the round in progress (host) or the last one trained (peer); 0 before the first.",
                  {{"", static_cast<double>(s.steps_per_round)}});
    out += metric("archipelago_inner_tokens_per_second", "gauge",
                  "Inner training tokens per second (host: the sum over connected islands).", {{"", s.tokens_per_s}});
    out += metric("archipelago_peers_connected", "gauge", "Peers connected now (a peer counts itself).",
                  {{"", connected}});
    const bool dp = s.privacy.mode != "off";
    out += metric("archipelago_privacy_epsilon_spent", "gauge",
                  "Differential privacy: epsilon the run's updates have spent (NaN when the run has none).",
                  {{"", dp ? s.privacy.epsilon_spent : nan}});
    out += metric("archipelago_privacy_epsilon_budget", "gauge",
                  "Differential privacy: the run's epsilon budget, at its delta (NaN when the run has none).",
                  {{"", dp ? s.privacy.epsilon_budget : nan}});
    out += metric("archipelago_paused", "gauge", "1 while paused by the control API.", {{"", s.paused ? 1.0 : 0.0}});
    std::vector<std::pair<std::string, double>> step, up, down, wire_sent, wire_received, compute, communication, busy;
    for (const PeerRow& p : s.peers) {
        const std::string label = "{peer=\"" + label_value(p.name) + "\",island=\"" + std::to_string(p.island) + "\"}";
        step.emplace_back(label, p.seconds_per_step);
        up.emplace_back(label, p.up_bytes_per_s);
        down.emplace_back(label, p.down_bytes_per_s);
        wire_sent.emplace_back(label, static_cast<double>(p.wire_bytes_sent));
        wire_received.emplace_back(label, static_cast<double>(p.wire_bytes_received));
        compute.emplace_back(label, p.compute_s_per_round);
        communication.emplace_back(label, p.communication_s_per_round);
        busy.emplace_back(label, p.utilisation);
    }
    out += metric("archipelago_peer_seconds_per_step", "gauge",
                  "A peer's inner step time, measured by the host (round_start to its pseudo-gradient, less the transfer).", step);
    out += metric("archipelago_peer_up_bytes_per_second", "gauge",
                  "Throughput of the blobs a peer sent the host, measured by the host.", up);
    out += metric("archipelago_peer_down_bytes_per_second", "gauge",
                  "Throughput of the blobs the host sent a peer, measured by the host.", down);
    out += metric("archipelago_peer_compute_seconds_per_round", "gauge",
                  "A peer's inner steps in its last round (Δ to Δ), measured by the host.", compute);
    out += metric("archipelago_peer_communication_seconds_per_round", "gauge",
                  "The rest of a peer's last round: its link and waiting, measured by the host.", communication);
    out += metric("archipelago_peer_utilisation", "gauge",
                  "The share of a peer's last round spent in inner steps (0: not measured yet).", busy);
    out += metric("archipelago_peer_wire_sent_bytes_total", "counter", "Bytes of frames sent to a peer.", wire_sent);
    out += metric("archipelago_peer_wire_received_bytes_total", "counter", "Bytes of frames received from a peer.",
                  wire_received);
    return out;
}

ControlApi::ControlApi(RunStatus& status, std::string token, ControlActions actions, bool metrics_public)
    : status_(status), token_(std::move(token)), actions_(std::move(actions)), metrics_public_(metrics_public) {}

ApiResponse ControlApi::handle(const ApiRequest& request) const {
    try {
        return route(request);
    } catch (const std::exception& e) {
        return api_error(500, e.what());
    }
}

ApiResponse ControlApi::route(const ApiRequest& request) const {
    const std::string path = path_of(request.target);
    const bool public_route = metrics_public_ && path == "/metrics";
    const std::string prefix = "Bearer ";
    const bool has_bearer = request.authorization.compare(0, prefix.size(), prefix) == 0;
    if (!public_route && !(has_bearer && token_equal(request.authorization.substr(prefix.size()), token_))) {
        ApiResponse r = api_error(401, request.authorization.empty() ? "missing bearer token" : "wrong bearer token");
        r.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"archipelago\"");
        return r;
    }
    const bool get = is_get_route(path), post = is_post_route(path);
    if (!get && !post) return api_error(404, "no such endpoint: " + path);
    if (get && request.method != "GET") return api_error(405, path + " takes GET");
    if (post && request.method != "POST") return api_error(405, path + " takes POST");
    if (post) return command(path.substr(5), request.body);

    if (path == "/api/log") {
        int lines = 100;
        if (const auto q = query_param(request.target, "lines")) {
            char* end = nullptr;
            const long n = std::strtol(q->c_str(), &end, 10);
            if (q->empty() || *end != '\0' || n < 1) return api_error(400, "lines must be a positive integer");
            lines = static_cast<int>(std::min<long>(n, static_cast<long>(RunStatus::kLogLines)));
        }
        return ok_json(log_json(status_.log_tail(static_cast<std::size_t>(lines))));
    }
    const StatusSnapshot s = status_.snapshot();
    if (path == "/api/status") return ok_json(status_json(s));
    if (path == "/api/peers") return ok_json(peers_json(s));
    if (path == "/api/rounds") return ok_json(rounds_json(s));
    ApiResponse r = ok_json(metrics_text(s));
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    return r;
}

namespace {

// invite: {"name", "public_key", "endpoint"?} -> the invite text; revoke: {"name"} or {"public_key"}.
// The body is checked first (400), then whether a run is hosted here (409), then the action's own
// checks (400: a malformed key, an unknown name), which change nothing when they fail.
ApiResponse membership(const ControlActions& actions, RunStatus& status, const std::string& name,
                       const nlohmann::json& body) {
    const bool invite = name == "invite";
    const std::string peer = invite ? required_string(body, "name") : optional_string(body, "name");
    const std::string key = invite ? required_string(body, "public_key") : optional_string(body, "public_key");
    const std::string endpoint = invite ? optional_string(body, "endpoint") : "";
    if (!invite && peer.empty() == key.empty()) throw Error("give either \"name\" or \"public_key\"");
    const bool hosting = actions.hosting && actions.hosting() && (invite ? bool(actions.invite) : bool(actions.revoke));
    if (!hosting) return api_error(409, "no run is hosted here (/api/" + name + " is served by the process that hosts the run)");
    const MemberChange change = invite ? actions.invite(peer, key, endpoint) : actions.revoke(peer, key);
    ordered_json j{{"ok", true}, {"name", change.name}, {"fingerprint", net::fingerprint(change.public_key)}};
    if (invite) j["invite"] = change.invite_text;
    status.log("control: " + name + "d " + change.name);
    return ok_json(json_text(j));
}

}  // namespace

ApiResponse ControlApi::command(const std::string& name, const std::string& body) const {
    const bool busy = actions_.busy && actions_.busy();
    try {
        if (name == "host") {
            const nlohmann::json parsed = parse_body(body);
            const std::string& config = required_string(parsed, "config");
            if (busy || !actions_.host) return api_error(409, "busy: this daemon already runs a " + status_.snapshot().role);
            actions_.host(config);
            return ok();
        }
        if (name == "join") {
            const nlohmann::json parsed = parse_body(body);
            const std::string& invite = required_string(parsed, "invite");
            const std::string& key = required_string(parsed, "key");
            if (busy || !actions_.join) return api_error(409, "busy: this daemon already runs a " + status_.snapshot().role);
            actions_.join(invite, key);
            return ok();
        }
        if (name == "invite" || name == "revoke") return membership(actions_, status_, name, parse_body(body));
    } catch (const Error& e) {
        return api_error(400, e.what());
    }
    if (!busy) return api_error(409, "no run in progress to " + name);
    if (name == "leave") status_.request_leave();
    else status_.set_paused(name == "pause");
    status_.log(name == "leave" ? "control: leave requested" : "control: " + name + "d");
    return ok();
}

}  // namespace arch
