// peers/cli/cmd_peer.cpp: `archipelago peer --invite FILE --key FILE`: the headless peer daemon. It
// connects out to the host (CURVE, the host key from the invite), runs its island, and keeps going
// through host restarts and network trouble until the host says the run is finished. With
// --control-port it also serves the control API (status, pause/resume/leave; docs/control-api.md).
#include <cstdio>

#include "core/error.h"
#include "peers/cli/args.h"
#include "peers/cli/commands.h"
#include "peers/cli/sessions.h"

namespace arch::cli {

int cmd_peer(const std::vector<std::string>& argv) {
    Args args("peer", argv,
              std::string("usage: archipelago peer --invite FILE --key FILE [--name NAME] [--throttle 0.5]\n"
                          "                        [--devices N --parallel ddp|zero3]   (this island's devices, CPU threads)\n"
                          "                        [--device cpu|cuda|cuda:N]   (train on one GPU; default cpu)\n"
                          "                        [--control-port P [--token-file F] [--metrics-public]]\n"
                          "       --throttle F < 1 makes this island artificially slower (for tests and demos)\n") +
                  kControlUsage);
    if (args.help()) {
        std::fputs(args.usage().c_str(), stdout);
        return 0;
    }
    const std::string invite_path = args.str("invite", "");
    const std::string key_path = args.str("key", "");
    PeerSession session = read_peer_flags(args, "peer");
    const ControlFlags control = read_control_flags(args, -1);
    args.finish();
    if (invite_path.empty() || key_path.empty()) throw Error("peer: give --invite and --key\n" + args.usage());
    session.invite = net::Invite::load(invite_path);
    session.key_path = key_path;
    RunStatus status;
    ControlEndpoint endpoint(control, status, ControlActions{[] { return true; }, {}, {}});
    return run_peer_session(session, status, true) ? 0 : 1;
}

}  // namespace arch::cli
