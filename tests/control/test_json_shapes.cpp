// tests/control/test_json_shapes.cpp: every JSON body the control API answers (the GET routes, each
// POST's ok and error, the 400/401/404/405/409/500 error body) has the fields, order and types that
// docs/control-api.md promises, checked by Python's json module with NaN and Infinity refused.
// The shapes in kCheck were recorded from the hand-written writer that nlohmann-json replaced; one
// change: a float field is always written with a fraction or exponent ("0.0"), so Python reads a float
// where the old writer's "0" read as an int. Non-finite numbers are null, invalid UTF-8 is U+FFFD.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "peers/control/control_api.h"
#include "tests/core/temp_dir.h"

using namespace arch;
using nlohmann::json;

namespace {

const std::string kToken = "shape-token";
const std::string kPeerName = "\xc3\xaesland \"q\" back\\slash\t\x01\x1f\n\xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80 \x7f";
const std::string kRunName = "run \"q\" \xc3\xbc/\\";
const std::string kLogLine = "log \xc3\xbcn\xc3\xaf" "code \"quoted\" \\ \b\f\r\n end";
const std::string kBadBytes = "bad bytes \xff\xfe end";  // not UTF-8

// A host mid-run: two peers (one with every awkward character), four rounds whose val losses are
// NaN, +Inf, 3.25 and -1 (unknown), integral doubles (seconds 2.0, steps_per_s 0), a two-line log.
void fill(RunStatus& s) {
    s.begin("host", kRunName, 5, "sync", 2);
    s.set_state("training");
    s.set_round(2, std::string(64, 'a'));
    s.set_tokens_per_s(1234.5);
    s.set_steps(117, "auto: a sync 11.40 s, a step 0.093 s; 95% busy overlapped");
    s.peer("k0", [](PeerRow& p) {
        p.name = kPeerName;
        p.fingerprint = "ab:cd";
        p.devices = 2;
        p.steps_per_s = 3.5;
        p.last_round = 1;
        p.bytes_up = 1000;
        p.bytes_down = 2000;
        p.connected = true;
        p.in_sync = true;
    });
    s.peer("k1", [](PeerRow& p) {
        p.name = "plain";
        p.fingerprint = "ef";
        p.island = 1;
        p.steps_per_s = 0;
    });
    const float val_losses[] = {std::nanf(""), std::numeric_limits<float>::infinity(), 3.25f, -1.0f};
    for (uint64_t r = 0; r < 4; ++r) {
        RoundRow row;
        row.round = r;
        row.islands = 2;
        row.mean_inner_loss = 4.5f;
        row.val_loss = val_losses[r];
        row.bytes_up = 100;
        row.bytes_down = 200;
        row.compression_ratio = 3.9;
        row.seconds = 2.0;
        row.epsilon = r < 2 ? -1 : 0.5 * static_cast<double>(r);  // none, then spent
        row.steps = 40 + static_cast<uint32_t>(r);
        row.steps_why = "auto: a sync \"2.5\" s";
        s.add_round(row);
    }
    PrivacyFigures privacy;
    privacy.mode = "central";
    privacy.clip = 1;  // integral doubles
    privacy.noise_multiplier = 1.25;
    privacy.delta = 1e-5;
    privacy.epsilon_budget = 8;
    privacy.epsilon_spent = 1.5;
    privacy.updates_affordable = 40;
    s.set_privacy(privacy);
    s.log(kLogLine);
    s.log(kBadBytes);
}

struct Answer {
    std::string name;   // also the file name, <name>.json
    std::string shape;  // a key of SHAPES in kCheck
    int status;
    ApiResponse response;
};

// Reads DIR/manifest.txt ("name shape" lines), parses DIR/<name>.json strictly and checks its shape;
// DIR/<name>.txt, where present, holds the raw bytes a string field must read back as.
const char* kCheck = R"PY(
import json, sys
S, I, F, B, N = str, int, float, bool, type(None)
def obj(*fields): return {"object": list(fields)}
def lst(item): return {"list": item}
def nullable(schema): return {"nullable": schema}
PEER = obj(("name", S), ("fingerprint", S), ("island", I), ("devices", I), ("steps_per_s", F), ("last_round", I),
           ("bytes_up", I), ("bytes_down", I), ("connected", B), ("in_sync", B), ("seconds_per_step", F),
           ("up_bytes_per_s", F), ("down_bytes_per_s", F), ("wire_bytes_sent", I), ("wire_bytes_received", I),
           ("compute_s_per_round", F), ("communication_s_per_round", F), ("utilisation", F), ("came_from", S),
           ("came_in_on", S))
ROUND = obj(("round", I), ("islands", I), ("inner_loss", F), ("val_loss", (F, N)), ("bytes_up", I), ("bytes_down", I),
            ("compression_ratio", F), ("seconds", F), ("epsilon", (F, N)), ("steps", I), ("steps_why", S))
PRIVACY = obj(("mode", S), ("clip", F), ("noise_multiplier", F), ("delta", F), ("epsilon_budget", F), ("epsilon_spent", F),
              ("honest", I), ("updates_affordable", I))
SHAPES = {
    "status": obj(("role", S), ("run", S), ("state", S), ("round", I), ("rounds", I), ("mode", S), ("islands", I),
                  ("theta_hash", S), ("paused", B), ("tokens_per_s", F), ("uptime_s", F), ("rounds_finished", I),
                  ("steps_per_round", I), ("steps_why", S), ("reachability", S), ("external_endpoint", S),
                  ("reachability_detail", S), ("privacy", nullable(PRIVACY))),
    "peers": obj(("peers", lst(PEER))),
    "rounds": obj(("rounds", lst(ROUND))),
    "log": obj(("lines", lst(S))),
    "ok": obj(("ok", B)),
    "error": obj(("error", S)),
}
def refuse(constant): raise ValueError("not JSON: " + constant)
def check(v, schema, where, errors):
    if isinstance(schema, dict) and "nullable" in schema:
        if v is None: return
        schema = schema["nullable"]
    if isinstance(schema, dict) and "object" in schema:
        want = [k for k, _ in schema["object"]]
        if type(v) is not dict or list(v) != want:
            errors.append("%s: %r, expected an object with keys %s" % (where, v, want))
            return
        for k, s in schema["object"]: check(v[k], s, where + "." + k, errors)
    elif isinstance(schema, dict):
        if type(v) is not list: errors.append("%s: %r, expected a list" % (where, v)); return
        for i, x in enumerate(v): check(x, schema["list"], "%s[%d]" % (where, i), errors)
    elif type(v) not in (schema if isinstance(schema, tuple) else (schema,)):
        errors.append("%s: %r is a %s, expected %s" % (where, v, type(v).__name__, schema))
    elif type(v) is str:
        v.encode("utf-8")  # a lone surrogate escape would fail here
errors, values = [], {}
folder = sys.argv[1]
for line in open(folder + "/manifest.txt", encoding="ascii"):
    name, shape = line.split()
    try:
        values[name] = json.loads(open(folder + "/" + name + ".json", "rb").read().decode("utf-8"), parse_constant=refuse)
        check(values[name], SHAPES[shape], name, errors)
    except Exception as e:
        errors.append("%s: %s: %s" % (name, type(e).__name__, e))
def same(where, got, file):
    want = open(folder + "/" + file, "rb").read()
    if got.encode("utf-8") != want: errors.append("%s: %r, expected %r" % (where, got, want))
if not errors:
    same("status.run", values["status"]["run"], "run.txt")
    same("peers[0].name", values["peers"]["peers"][0]["name"], "peer.txt")
    same("log.lines[0]", values["log"]["lines"][0], "log.txt")
    got = [r["val_loss"] for r in values["rounds"]["rounds"]]
    if got != [None, None, 3.25, -1.0]: errors.append("rounds val_loss: %r" % got)
    if values["idle_status"]["privacy"] is not None: errors.append("idle_status.privacy: not null")
    if values["status"]["privacy"]["epsilon_spent"] != 1.5: errors.append("status.privacy.epsilon_spent")
    got = [r["epsilon"] for r in values["rounds"]["rounds"]]
    if got != [None, None, 1.0, 1.5]: errors.append("rounds epsilon: %r" % got)
for e in errors: print(e)
print("%d bodies, %d problems" % (len(values), len(errors)))
sys.exit(1 if errors else 0)
)PY";

std::vector<Answer> every_answer() {
    RunStatus status;
    fill(status);
    bool busy = false;
    const ControlApi api(status, kToken,
                         ControlActions{[&] { return busy; },
                                        [](const std::string& config) {
                                            if (config == "bad") throw Error("the posted run config is not TOML");
                                            if (config == "crash") throw std::runtime_error("an unexpected failure");
                                        },
                                        [](const std::string&, const std::string&) {}});
    RunStatus idle_status;
    const ControlApi idle(idle_status, kToken, ControlActions{});
    std::vector<Answer> out;
    auto ask = [&](const ControlApi& to, const std::string& name, const std::string& shape, int expected,
                   const std::string& method, const std::string& target, const std::string& body = "",
                   const std::string& auth = "Bearer " + kToken) {
        out.push_back({name, shape, expected, to.handle({method, target, auth, body})});
    };
    ask(api, "status", "status", 200, "GET", "/api/status");
    ask(api, "peers", "peers", 200, "GET", "/api/peers");
    ask(api, "rounds", "rounds", 200, "GET", "/api/rounds");
    ask(api, "log", "log", 200, "GET", "/api/log?lines=5");
    ask(api, "host_ok", "ok", 200, "POST", "/api/host", R"({"config":"[run]"})");
    ask(api, "join_ok", "ok", 200, "POST", "/api/join", R"({"invite":"i","key":"k"})");
    ask(api, "pause_idle", "error", 409, "POST", "/api/pause");
    busy = true;
    ask(api, "pause_ok", "ok", 200, "POST", "/api/pause");
    ask(api, "resume_ok", "ok", 200, "POST", "/api/resume");
    ask(api, "leave_ok", "ok", 200, "POST", "/api/leave");
    ask(api, "host_busy", "error", 409, "POST", "/api/host", R"({"config":"[run]"})");
    ask(api, "join_busy", "error", 409, "POST", "/api/join", R"({"invite":"i","key":"k"})");
    busy = false;
    ask(api, "malformed", "error", 400, "POST", "/api/host", R"({"config": })");
    ask(api, "not_object", "error", 400, "POST", "/api/join", "[1]");
    ask(api, "missing_field", "error", 400, "POST", "/api/host", "{}");
    ask(api, "mistyped_field", "error", 400, "POST", "/api/join", R"({"invite":5,"key":"k"})");
    ask(api, "too_deep", "error", 400, "POST", "/api/host", std::string(200, '['));
    ask(api, "action_error", "error", 400, "POST", "/api/host", R"({"config":"bad"})");
    ask(api, "internal_error", "error", 500, "POST", "/api/host", R"({"config":"crash"})");
    ask(api, "bad_lines", "error", 400, "GET", "/api/log?lines=0");
    ask(api, "no_token", "error", 401, "GET", "/api/status", "", "");
    ask(api, "wrong_token", "error", 401, "GET", "/api/status", "", "Bearer nope");
    ask(api, "not_found", "error", 404, "GET", "/api/nothing");
    ask(api, "not_found_bytes", "error", 404, "GET", "/api/\xff\"");
    ask(api, "wrong_method", "error", 405, "POST", "/api/status");
    ask(idle, "idle_status", "status", 200, "GET", "/api/status");
    ask(idle, "idle_peers", "peers", 200, "GET", "/api/peers");
    ask(idle, "idle_rounds", "rounds", 200, "GET", "/api/rounds");
    ask(idle, "idle_log", "log", 200, "GET", "/api/log");
    return out;
}

}  // namespace

TEST_CASE("every JSON body of the control API parses in Python's json module with its documented shape") {
    const std::vector<Answer> answers = every_answer();
    TempDir dir;
    std::string manifest;
    for (const Answer& a : answers) {
        INFO(a.name << ": " << a.response.body);
        CHECK(a.response.status == a.status);
        CHECK(a.response.content_type == "application/json");
        write_file(dir.file(a.name + ".json"), a.response.body);
        manifest += a.name + " " + a.shape + "\n";
    }
    write_file(dir.file("manifest.txt"), manifest);
    write_file(dir.file("run.txt"), kRunName);
    write_file(dir.file("peer.txt"), kPeerName);
    write_file(dir.file("log.txt"), kLogLine);

    const std::string script = kCheck;
    REQUIRE(script.find('\'') == std::string::npos);  // it travels in single quotes
    const std::string command = "python3 -c '" + script + "' " + dir.path.string() + " > " + dir.file("python.out") + " 2>&1";
    const int rc = std::system(command.c_str());
    INFO("python3 said:\n" << read_file_bytes(dir.file("python.out")));
    CHECK(rc == 0);
}

TEST_CASE("the bodies carry the run's values: escapes read back, non-finite is null, bad UTF-8 is U+FFFD") {
    const std::vector<Answer> answers = every_answer();
    auto text = [&](const std::string& name) {
        for (const Answer& a : answers)
            if (a.name == name) return a.response.body;
        FAIL("no answer named " << name);
        return std::string();
    };
    auto body = [&](const std::string& name) { return json::parse(text(name)); };
    CHECK(body("peers").at("peers")[0].at("name") == kPeerName);
    CHECK(body("status").at("run") == kRunName);
    const json rounds = body("rounds").at("rounds");
    REQUIRE(rounds.size() == 4);
    CHECK(rounds[0].at("val_loss").is_null());
    CHECK(rounds[1].at("val_loss").is_null());
    CHECK(rounds[2].at("val_loss") == 3.25);
    CHECK(rounds[3].at("val_loss") == -1.0);
    CHECK(rounds[3].at("seconds").is_number_float());
    const json lines = body("log").at("lines");
    REQUIRE(lines.size() == 2);
    CHECK(lines[0] == kLogLine);
    CHECK(lines[1].get<std::string>().find("\xef\xbf\xbd") != std::string::npos);
    CHECK(body("not_found_bytes").at("error").get<std::string>().find("\xef\xbf\xbd") != std::string::npos);

    // Texts a client may compare whole.
    for (const Answer& a : answers)
        if (a.shape == "ok") CHECK(a.response.body == R"({"ok":true})");
    CHECK(text("idle_peers") == R"({"peers":[]})");
    CHECK(text("idle_rounds") == R"({"rounds":[]})");
    CHECK(text("idle_log") == R"({"lines":[]})");
    CHECK(text("no_token") == R"({"error":"missing bearer token"})");
}
