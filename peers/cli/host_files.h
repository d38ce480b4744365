// peers/cli/host_files.h: where a host keeps its identity and admission files, inside its run folder.
#pragma once

#include <cstdint>
#include <string>

#include "net/keys.h"
#include "peers/run_config.h"

namespace arch::cli {

struct HostFiles {
    std::string key;         // host.key (+ .pub)
    std::string run_id;      // run_id: a random nonzero number every message of the run carries
    std::string allow_list;  // allow_list.txt: peers that may connect
    // host.reachable: the host's last port mapping (peers/cli/host_reachable.h) that `archipelago
    // invite` reads for the address invites carry.
    std::string reachable;
};

HostFiles host_files(const RunConfig& c);
uint64_t ensure_run_id(const HostFiles& files);        // creates it on first use
net::KeyPair ensure_host_key(const HostFiles& files);  // creates it on first use

}  // namespace arch::cli
