// peers/cli/cmd_peer.cpp: `archipelago peer --invite FILE --key FILE`: the headless peer daemon. It
// connects out to the host (CURVE, the host key from the invite), runs its island, and keeps going
// through host restarts and network trouble until the host says the run is finished. With
// --control-port it also serves the control API (status, pause/resume/leave; docs/control-api.md).
// Everything it writes lives in its working directory (--workdir): fetched data, its shard, its log.
#include <filesystem>

#include "core/error.h"
#include "peers/cli/commands.h"
#include "peers/cli/sessions.h"

namespace arch::cli {

namespace {

struct PeerFlags {
    std::string invite, key;
    PeerSession session;
    ControlFlags control;
    log::Options log;
};

}  // namespace

void add_peer(CLI::App& app, int& exit_code) {
    auto f = std::make_shared<PeerFlags>();
    CLI::App* cmd = app.add_subcommand("peer", "join a run with an invite and train one island (headless daemon)");
    cmd->add_option("--invite", f->invite, "the invite the host made for this node")->required();
    cmd->add_option("--key", f->key, "this node's key file (archipelago keygen)")->required();
    add_peer_flags(*cmd, f->session);
    add_control_flags(*cmd, f->control);
    add_log_flags(*cmd, f->log);
    cmd->callback([f, &exit_code] {
        check_peer_flags(f->session);
        resolve_control_flags(f->control);
        f->session.invite = net::Invite::load(f->invite);
        f->session.key_path = f->key;
        // The peer's log goes to its working directory too, unless --log-file says where.
        if (f->log.file.empty()) {
            const std::string dir = peer_workdir(f->session);
            std::filesystem::create_directories(dir);
            f->log.file = dir + "/peer.log";
        }
        log::configure(f->log);
        RunStatus status;
        ControlEndpoint endpoint(f->control, status, ControlActions{[] { return true; }, {}, {}});
        exit_code = run_peer_session(f->session, status, true) || stopped_by_signal() ? 0 : 1;
    });
}

}  // namespace arch::cli
