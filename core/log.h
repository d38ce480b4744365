// core/log.h: Archipelago's log lines, through spdlog. Each component (host, peer, net, island, data,
// train) has a named logger; all of them write to the sinks configure() sets up: stderr, and a file
// if asked, as text ("2026-12-01 08:40:00.123 info  [host] ...") or as JSON lines for machines.
// Progress lines that redraw the terminal are not log lines: they never go through here.
// Text lines show a message's control characters as escapes (printable()): a peer's name or a bye's
// reason cannot start a new line, move the cursor or colour the terminal.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <spdlog/spdlog.h>

namespace arch::log {

struct Options {
    std::string level = "info";  // trace | debug | info | warn | error | off
    std::string file;            // "": stderr only
    std::string format = "text"; // text | jsonl
};

// Replaces the sinks and level of every logger, now and later. Throws arch::Error on a bad level,
// format or file. Call it once at start, before threads log.
void configure(const Options& options);

// The logger of one component, created on first use with the configured sinks.
std::shared_ptr<spdlog::logger> get(const std::string& component);

// text as one line a terminal shows as it is: C0 controls, DEL and the C1 controls (U+0080-U+009F)
// written as \n, \r, \t or \xNN / \u00NN; everything else (UTF-8 included) unchanged.
std::string printable(std::string_view text);

}  // namespace arch::log
