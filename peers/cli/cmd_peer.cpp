// peers/cli/cmd_peer.cpp: `archipelago peer --invite FILE --key FILE`: the headless peer daemon. It
// connects out to the host (CURVE, the host key from the invite), runs its island, and keeps going
// through host restarts and network trouble until the host says the run is finished.
#include <csignal>
#include <cstdio>

#include "core/error.h"
#include "net/invite.h"
#include "net/peer_socket.h"
#include "peers/cli/args.h"
#include "peers/cli/commands.h"
#include "peers/cli/run_log.h"
#include "peers/net_link.h"
#include "peers/peer.h"

namespace arch::cli {

namespace {
Peer* g_peer = nullptr;
void on_peer_signal(int) {
    if (g_peer) g_peer->stop();
}
}  // namespace

int cmd_peer(const std::vector<std::string>& argv) {
    Args args("peer", argv,
              "usage: archipelago peer --invite FILE --key FILE [--name NAME] [--throttle 0.5]\n"
              "                        [--devices N --parallel ddp|zero3]   (this island's devices, CPU threads)\n"
              "       --throttle F < 1 makes this island artificially slower (for tests and demos)\n");
    if (args.help()) {
        std::fputs(args.usage().c_str(), stdout);
        return 0;
    }
    const std::string invite_path = args.str("invite", "");
    const std::string key_path = args.str("key", "");
    const std::string name = args.str("name", "peer");
    const double throttle = args.real("throttle", 1.0);
    const int devices = args.integer("devices", 1);
    const Parallel parallel = parse_parallel(args.str("parallel", "ddp"));
    args.finish();
    if (invite_path.empty() || key_path.empty()) throw Error("peer: give --invite and --key\n" + args.usage());
    if (devices < 1 || devices > 64) throw Error("peer: --devices must be in [1, 64], got " + std::to_string(devices));
    if (!(throttle > 0.0 && throttle <= 1.0)) throw Error("peer: --throttle must be in (0, 1], got " + std::to_string(throttle));
    const net::Invite invite = net::Invite::load(invite_path);
    RunLog log(name);

    net::PeerOptions so;
    so.host_endpoint = invite.host_endpoint;
    so.host_public_key = invite.host_public_key;
    so.keys = net::load_keypair(key_path);
    so.run_id = invite.run_id;
    so.log = [&](const std::string& line) { log.line("net: " + line); };
    net::PeerSocket socket(std::move(so));
    PeerLink link(socket, [&](const std::string& line) { log.line("transfer: " + line); });

    PeerOptions po;
    po.name = name;
    po.repo_root = repo_root();
    po.throttle = throttle;
    po.devices = devices;
    po.parallel = parallel;
    po.log = [&](const std::string& line) { log.line(line); };
    Peer peer(std::move(po));
    g_peer = &peer;
    std::signal(SIGINT, on_peer_signal);
    std::signal(SIGTERM, on_peer_signal);
    log.line("connecting to " + invite.host_endpoint + " (host " + net::fingerprint(invite.host_public_key) + ")");
    const bool finished = peer.run(link, invite.host_public_key);
    g_peer = nullptr;
    return finished ? 0 : 1;
}

}  // namespace arch::cli
