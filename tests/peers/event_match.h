// tests/peers/event_match.h: what a test looks for among a node's run events (peers/run_events.h):
// a kind and, where set, its figures. Tests wait on these, not on a log line's wording.
#pragma once

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "peers/run_events.h"

namespace arch::test {

struct EventMatch {
    std::string kind = {};
    int64_t round = -1;  // -1: any
    int islands = -1;
    int island = -1;
    std::string peer = {};  // "": any
    std::string type = {};
    std::string detail = {};  // "": any; else a part of the event's detail

    bool operator()(const RunEvent& e) const {
        return e.kind == kind && (round < 0 || e.round == round) &&
               (islands < 0 || e.islands == islands) && (island < 0 || e.island == island) &&
               (peer.empty() || e.peer == peer) && (type.empty() || e.type == type) &&
               (detail.empty() || e.detail.find(detail) != std::string::npos);
    }
};

// A file's whole text; empty when it does not exist (yet).
inline std::string slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// The events of an events file from byte `from` on, each whole line parsed (a torn last line, still
// being written, waits for its newline).
inline std::vector<RunEvent> read_events(const std::string& path, std::size_t from = 0) {
    const std::string text = slurp(path);
    std::vector<RunEvent> out;
    std::istringstream lines(from < text.size() ? text.substr(from) : std::string());
    std::string line;
    while (std::getline(lines, line))
        if (!lines.eof()) out.push_back(parse_event(line));
    return out;
}

inline int count_events(const std::vector<RunEvent>& events, const EventMatch& m) {
    return static_cast<int>(std::count_if(events.begin(), events.end(), m));
}

// The events after the first one `m` matches (none if none does).
inline std::vector<RunEvent> events_after(const std::vector<RunEvent>& events, const EventMatch& m) {
    const auto it = std::find_if(events.begin(), events.end(), m);
    return it == events.end() ? std::vector<RunEvent>{} : std::vector<RunEvent>(it + 1, events.end());
}

// The first event `m` matches; a default RunEvent (kind "") if none does.
inline RunEvent first_event(const std::vector<RunEvent>& events, const EventMatch& m) {
    const auto it = std::find_if(events.begin(), events.end(), m);
    return it == events.end() ? RunEvent{} : *it;
}

}  // namespace arch::test
