// peers/cli/host_reachable.h: host.reachable, the file in the run folder where a running host writes
// its port mapping's state and the address its router maps for it (TOML: state = "...", endpoint =
// "tcp://ADDRESS:PORT" or ""), and its reader for `archipelago invite` (docs/net.md, "Hosting from home").
#pragma once

#include <string>

namespace arch::cli {

void write_host_reachable(const std::string& path, const std::string& state, const std::string& endpoint);
// The mapped address it names ("" when the file is absent or the host has none); a file that is not
// what write_host_reachable writes is an error naming the file and the line.
std::string read_mapped_endpoint(const std::string& path);

}  // namespace arch::cli
