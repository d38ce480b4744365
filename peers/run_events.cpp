// peers/run_events.cpp: RunEvent to and from a JSON line, and the events file.
#include "peers/run_events.h"

#include <cerrno>
#include <chrono>
#include <cstring>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace arch {

std::string event_json(const RunEvent& e, double time) {
    nlohmann::json j = {{"kind", e.kind}};
    if (time >= 0) j["time"] = time;
    if (e.round >= 0) j["round"] = e.round;
    if (e.islands >= 0) j["islands"] = e.islands;
    if (e.island >= 0) j["island"] = e.island;
    if (!e.peer.empty()) j["peer"] = e.peer;
    if (!e.type.empty()) j["type"] = e.type;
    if (!e.theta.empty()) j["theta"] = e.theta;
    if (e.val_loss >= 0) j["val_loss"] = e.val_loss;
    if (e.steps >= 0) j["steps"] = e.steps;
    if (e.fragment >= 0) j["fragment"] = e.fragment;
    if (e.bytes >= 0) j["bytes"] = e.bytes;
    if (e.stale >= 0) j["stale"] = e.stale;
    if (e.scale >= 0) j["scale"] = e.scale;
    if (!e.hash.empty()) j["hash"] = e.hash;
    if (!e.detail.empty()) j["detail"] = e.detail;
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

RunEvent parse_event(const std::string& line) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("kind") || !j["kind"].is_string())
        throw Error("not a run event: '" + line.substr(0, 80) + "'");
    RunEvent e;
    e.kind = j["kind"].get<std::string>();
    try {
        e.round = j.value("round", int64_t{-1});
        e.islands = j.value("islands", -1);
        e.island = j.value("island", -1);
        e.peer = j.value("peer", std::string());
        e.type = j.value("type", std::string());
        e.theta = j.value("theta", std::string());
        e.val_loss = j.value("val_loss", -1.0);
        e.steps = j.value("steps", -1);
        e.fragment = j.value("fragment", -1);
        e.bytes = j.value("bytes", int64_t{-1});
        e.stale = j.value("stale", int64_t{-1});
        e.scale = j.value("scale", -1.0);
        e.hash = j.value("hash", std::string());
        e.detail = j.value("detail", std::string());
    } catch (const nlohmann::json::exception& err) {
        throw Error("run event '" + e.kind + "': " + err.what());
    }
    return e;
}

EventFile::EventFile(const std::string& path) : file_(std::fopen(path.c_str(), "a")) {
    if (!file_) throw Error("--events: cannot open '" + path + "': " + std::strerror(errno));
}

EventFile::~EventFile() {
    std::fclose(file_);
}

void EventFile::write(const RunEvent& event) {
    // The time the line is written: for scripts that time what happened.
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    const std::string line = event_json(event, std::chrono::duration_cast<std::chrono::milliseconds>(now).count() / 1e3) + "\n";
    std::lock_guard lock(mu_);
    std::fwrite(line.data(), 1, line.size(), file_);
    std::fflush(file_);
}

}  // namespace arch
