// peers/control/control_api.h: the control API's routes as a pure function from a request (method,
// target, Authorization header, body) to a response (status, content type, body). No sockets here:
// control_server.cpp carries it over HTTP; tests may call it directly. docs/control-api.md lists the
// routes and JSON shapes; keep the two in step (the GUI is written against that page).
// Order of checks: token (401; /metrics too unless metrics_public), path (404), method (405), body
// (400), then the daemon's state (409). Handlers never throw: every failure becomes {"error": ...}.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "peers/control/run_status.h"

namespace arch {

struct ApiRequest {
    std::string method;         // "GET", "POST", ...
    std::string target;         // "/api/log?lines=20"
    std::string authorization;  // the Authorization header, "" if none
    std::string body;
};

struct ApiResponse {
    int status = 200;
    std::string content_type = "application/json";
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;  // extra headers (WWW-Authenticate)
};

// One peer put on or taken off the allow-list of the run this process hosts.
struct MemberChange {
    std::string name;
    std::string public_key;   // Z85
    std::string invite_text;  // invite only: what the peer joins with
};

// What the API can ask of the process that serves it. A plain `host` or `peer` process leaves host
// and join empty (it already runs one; they answer 409). invite and revoke exist only while
// hosting() says a run is hosted here (else 409). All throw arch::Error on bad input (400).
struct ControlActions {
    std::function<bool()> busy;  // a run is in progress (host/join refused, leave/pause/resume allowed)
    std::function<void(const std::string& config_toml)> host;
    std::function<void(const std::string& invite_text, const std::string& key_path)> join;
    std::function<bool()> hosting = {};  // (default initializers: callers may list only the first three)
    // endpoint: the address the invite tells the peer to dial ("": the run's bind address).
    std::function<MemberChange(const std::string& name, const std::string& public_key, const std::string& endpoint)> invite = {};
    std::function<MemberChange(const std::string& name, const std::string& public_key)> revoke = {};  // one of the two
};

class ControlApi {
public:
    ControlApi(RunStatus& status, std::string token, ControlActions actions, bool metrics_public = false);
    ApiResponse handle(const ApiRequest& request) const;

private:
    ApiResponse route(const ApiRequest& request) const;
    ApiResponse command(const std::string& name, const std::string& body) const;

    RunStatus& status_;
    std::string token_;
    ControlActions actions_;
    bool metrics_public_;
};

ApiResponse api_error(int status, const std::string& message);  // {"error": message}

// JSON bodies of the GET routes, from a snapshot.
std::string status_json(const StatusSnapshot& s);
std::string peers_json(const StatusSnapshot& s);
std::string rounds_json(const StatusSnapshot& s);
std::string log_json(const std::vector<std::string>& lines);
// Prometheus text exposition format (version 0.0.4).
std::string metrics_text(const StatusSnapshot& s);

}  // namespace arch
