// peers/run_events.h: the run's events as data, beside the log's sentences: what happened (a kind
// from docs/events.md) and its figures. Host and Peer emit them through their options' `event`
// hook; `archipelago host|peer|daemon --events FILE` appends them as JSON lines, for scripts and
// for tests, which wait on an outcome ("round 1 started") rather than on a log line's wording.
#pragma once

#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

namespace arch {

struct RunEvent {
    std::string kind = {};    // docs/events.md lists the kinds and the fields each sets
    int64_t round = -1;       // the round it concerns (-1: none)
    int islands = -1;         // how many islands (-1: none)
    int island = -1;          // the island it concerns (-1: none)
    std::string peer = {};    // a peer's name
    std::string type = {};    // a message type (rejected) or a reason code (dropped, left)
    std::string theta = {};   // a θ hash, its first 12 hex digits
    double val_loss = -1;     // the held-out loss of θ (-1: unknown)
    int steps = -1;           // inner steps (merged: the overlapped ones)
    int fragment = -1;        // streaming: the fragment of θ it concerns
    int64_t bytes = -1;       // a payload's size
    int64_t stale = -1;       // async: how many updates old a pseudo-gradient is
    double scale = -1;        // async: the factor a stale pseudo-gradient was scaled by
    std::string hash = {};    // another hash: DES-LOC's mean of the AdamW moments (16 hex digits)
    std::string detail = {};  // for people: an error's text, a path
};

// One JSON object on one line (no newline); only the fields that are set, and `time` (seconds since
// the Unix epoch) when it is given.
std::string event_json(const RunEvent& event, double time = -1);
// Its inverse; throws arch::Error on a line that is not such an object.
RunEvent parse_event(const std::string& line);

// An append-only events file, one JSON line an event with the time it was written, flushed at once.
// Thread-safe.
class EventFile {
  public:
    explicit EventFile(const std::string& path);  // throws arch::Error if it cannot be opened
    ~EventFile();
    EventFile(const EventFile&) = delete;
    EventFile& operator=(const EventFile&) = delete;
    void write(const RunEvent& event);

  private:
    std::mutex mu_;
    std::FILE* file_ = nullptr;
};

}  // namespace arch
