// peers/cli/sessions.h: one host or one peer run, set up the same way whether `archipelago host`,
// `archipelago peer` or the daemon (on a worker thread, told by the control API) starts it: sockets,
// keys, Link, Host/Peer, log lines to stderr and to the RunStatus the control API reads.
// Also the control API flags that host, peer and daemon share, and the server they start.
#pragma once

#include <memory>
#include <string>

#include "core/island.h"
#include "net/invite.h"
#include <CLI/CLI.hpp>

#include "peers/control/control_server.h"
#include "peers/control/run_status.h"
#include "peers/run_config.h"

namespace arch::cli {

// Returns true when every round finished. stop_on_signal: SIGINT/SIGTERM stop this run (the CLI);
// the daemon handles signals itself and stops a run with status.request_leave().
bool run_host_session(RunConfig config, RunStatus& status, bool stop_on_signal);

// True once SIGINT or SIGTERM stopped a session: a stop the user asked for, so the command exits 0.
bool stopped_by_signal();

struct PeerSession {
    net::Invite invite;
    std::string key_path;
    std::string name = "peer";
    double throttle = 1.0;
    int devices = 1;
    std::string device = "cpu";
    std::string parallel = "ddp";  // ddp | zero3
    std::string recompute = "none";  // none | attention | block
    std::string offload = "none";    // none | optimizer (GPUs)
    std::string workdir;           // --workdir; "": peer_workdir()
    std::vector<std::string> data_dirs;  // --data
    bool state_on_disk = false;          // --state-on-disk
    uint64_t max_params = 0;             // --max-params; 0: what this machine's RAM holds in fp32
    int fault_kill_after_chunks = 0;     // tests only (hidden flag): SIGKILL itself after sending N transfer chunks
};
// Where a peer keeps everything it writes: --workdir, else USER_DATA_DIR/peers/RUN_ID-NAME (never the repo).
std::string peer_workdir(const PeerSession& session);
// --name --throttle --devices --parallel --device --workdir --data --state-on-disk --max-params, bound to `session`; check_peer_flags() after parsing.
void add_peer_flags(CLI::App& command, PeerSession& session);
void check_peer_flags(const PeerSession& session);
bool run_peer_session(const PeerSession& session, RunStatus& status, bool stop_on_signal);

// --control-port P (-1: none), --token-file F, --metrics-public, --events FILE.
struct ControlFlags {
    int port = -1;
    std::string token_file;
    bool metrics_public = false;
    std::string events_file;  // "": none
};
constexpr int kDefaultControlPort = 7480;  // the daemon's and `archipelago status`'s default
void add_control_flags(CLI::App& command, ControlFlags& flags);  // flags.port holds the default
void resolve_control_flags(ControlFlags& flags);                // the default token file

// A ControlApi and its server, started when flags.port >= 0; logs "control API on 127.0.0.1:PORT".
// And the events file, when flags.events_file names one: status's event sink while this lives.
class ControlEndpoint {
public:
    ControlEndpoint(const ControlFlags& flags, RunStatus& status, ControlActions actions);
    int port() const { return server_ ? server_->port() : -1; }

private:
    std::unique_ptr<EventFile> events_;
    std::unique_ptr<ControlApi> api_;
    std::unique_ptr<ControlServer> server_;
};

}  // namespace arch::cli
