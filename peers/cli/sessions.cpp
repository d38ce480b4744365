// peers/cli/sessions.cpp: the setup of a host run and of a peer run, shared by the host and peer
// commands and the daemon; and the control API flags and endpoint.
#include "peers/cli/sessions.h"

#include <csignal>
#include <cstdio>

#include "core/error.h"
#include "core/file_io.h"
#include "net/host_socket.h"
#include "net/keys.h"
#include "net/peer_socket.h"
#include "peers/cli/commands.h"
#include "peers/cli/host_files.h"
#include "peers/cli/run_log.h"
#include "peers/diloco/model_factory.h"
#include "peers/control/token.h"
#include "peers/host.h"
#include "peers/net_link.h"
#include "peers/peer.h"

namespace arch::cli {

namespace {
Host* g_host = nullptr;
Peer* g_peer = nullptr;
void on_signal(int) {
    if (g_host) g_host->stop();
    if (g_peer) g_peer->stop();
}
void catch_signals() {
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
}
}  // namespace

const char* kControlUsage =
    "       --control-port P serves the control API on 127.0.0.1:P (0: any free port; docs/control-api.md)\n"
    "       --token-file F   its bearer token (default $ARCH_TOKEN_FILE or ~/.config/archipelago/token, made 0600)\n"
    "       --metrics-public serve /metrics without the token\n";

bool run_host_session(RunConfig config, RunStatus& status, bool stop_on_signal) {
    const HostFiles files = host_files(config);
    if (!file_exists(files.allow_list))
        throw Error("host: no allow-list at '" + files.allow_list + "': invite peers first (archipelago invite)");
    RunLog log("host");
    auto line = [&](const std::string& text) {
        log.line(text);
        status.log(text);
    };
    status.begin("host", config.name, config.rounds, config.mode, config.islands);

    net::HostOptions so;
    so.bind_endpoint = config.bind;
    so.keys = ensure_host_key(files);
    so.allow = net::AllowList::load(files.allow_list);
    so.run_id = ensure_run_id(files);
    so.limits.heartbeat_timeout_ms = static_cast<int>(config.heartbeat_timeout_s * 1000);
    so.limits.heartbeat_ttl_ms = so.limits.heartbeat_timeout_ms * 2;
    so.log = [&](const std::string& text) { line("net: " + text); };

    HostOptions ho;
    ho.config = config;
    ho.repo_root = repo_root();
    ho.log = line;
    ho.status = &status;
    RoundTable table;
    ho.on_round = [&](const RoundRow& row) { table.print(row); };
    Host host(std::move(ho));
    net::HostSocket socket(std::move(so));
    line("listening on " + socket.endpoint() + " for run " + config.name + " (" + std::to_string(config.islands) +
         " islands, " + std::to_string(config.rounds) + " rounds, " + config.mode + ")");
    HostLink link(socket, [&](const std::string& text) { line("transfer: " + text); });
    if (stop_on_signal) {
        g_host = &host;
        catch_signals();
    }
    host.run(link);
    g_host = nullptr;
    table.summary();
    line("θ " + host.theta_hash().substr(0, 16) + "; checkpoint " + config.checkpoint_dir + "/model.bin");
    return host.round() >= static_cast<uint64_t>(config.rounds);
}

PeerSession read_peer_flags(Args& args, const std::string& default_name) {
    PeerSession s;
    s.name = args.str("name", default_name);
    s.throttle = args.real("throttle", 1.0);
    s.devices = args.integer("devices", 1);
    s.parallel = parse_parallel(args.str("parallel", "ddp"));
    s.device = args.str("device", "cpu");
    diloco::parse_device(s.device);  // a clear error now rather than after joining
    if (s.devices < 1 || s.devices > 64) throw Error("peer: --devices must be in [1, 64], got " + std::to_string(s.devices));
    if (!(s.throttle > 0.0 && s.throttle <= 1.0))
        throw Error("peer: --throttle must be in (0, 1], got " + std::to_string(s.throttle));
    return s;
}

bool run_peer_session(const PeerSession& session, RunStatus& status, bool stop_on_signal) {
    const net::Invite& invite = session.invite;
    RunLog log(session.name);
    auto line = [&](const std::string& text) {
        log.line(text);
        status.log(text);
    };
    net::PeerOptions so;
    so.host_endpoint = invite.host_endpoint;
    so.host_public_key = invite.host_public_key;
    so.keys = net::load_keypair(session.key_path);
    so.run_id = invite.run_id;
    so.log = [&](const std::string& text) { line("net: " + text); };
    const std::string fingerprint = net::fingerprint(so.keys.public_key);
    status.begin("peer", "", 0, "", 0);
    status.peer("self", [&](PeerRow& row) { row.fingerprint = fingerprint; });
    net::PeerSocket socket(std::move(so));
    PeerLink link(socket, [&](const std::string& text) { line("transfer: " + text); });

    PeerOptions po;
    po.name = session.name;
    po.repo_root = repo_root();
    po.throttle = session.throttle;
    po.devices = session.devices;
    po.parallel = session.parallel;
    po.device = session.device;
    po.log = line;
    po.status = &status;
    Peer peer(std::move(po));
    if (stop_on_signal) {
        g_peer = &peer;
        catch_signals();
    }
    line("connecting to " + invite.host_endpoint + " (host " + net::fingerprint(invite.host_public_key) + ")");
    const bool finished = peer.run(link, invite.host_public_key);
    g_peer = nullptr;
    return finished;
}

ControlFlags read_control_flags(Args& args, int default_port) {
    ControlFlags f;
    f.port = args.integer("control-port", default_port);
    f.token_file = args.str("token-file", "");
    f.metrics_public = args.flag("metrics-public");
    if (f.port < -1 || f.port > 65535) throw Error("--control-port must be in [0, 65535], got " + std::to_string(f.port));
    if (f.token_file.empty()) f.token_file = default_token_file();
    return f;
}

ControlEndpoint::ControlEndpoint(const ControlFlags& flags, RunStatus& status, ControlActions actions) {
    if (flags.port < 0) return;
    api_ = std::make_unique<ControlApi>(status, load_or_create_token(flags.token_file), std::move(actions),
                                        flags.metrics_public);
    server_ = std::make_unique<ControlServer>(*api_, flags.port);
    std::fprintf(stderr, "control API on 127.0.0.1:%d (token in %s)\n", server_->port(), flags.token_file.c_str());
    std::fflush(stderr);
}

}  // namespace arch::cli
