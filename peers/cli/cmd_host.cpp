// peers/cli/cmd_host.cpp: `archipelago host --config run.toml`: binds the encrypted host socket
// (allow-list from the run folder), runs the rounds, and prints one table row per round.
#include <csignal>
#include <cstdio>

#include "core/error.h"
#include "core/file_io.h"
#include "net/host_socket.h"
#include "peers/cli/args.h"
#include "peers/cli/commands.h"
#include "peers/cli/host_files.h"
#include "peers/cli/run_log.h"
#include "peers/host.h"
#include "peers/net_link.h"

namespace arch::cli {

namespace {
Host* g_host = nullptr;
void on_signal(int) {
    if (g_host) g_host->stop();
}
}  // namespace

int cmd_host(const std::vector<std::string>& argv) {
    Args args("host", argv, "usage: archipelago host --config run.toml [--bind tcp://ADDR:PORT]\n");
    if (args.help()) {
        std::fputs(args.usage().c_str(), stdout);
        return 0;
    }
    const std::string config_path = args.str("config", "");
    const std::string bind = args.str("bind", "");
    args.finish();
    if (config_path.empty()) throw Error("host: give --config run.toml\n" + args.usage());
    RunConfig config = load_run_config(config_path);
    if (!bind.empty()) config.bind = bind;
    const HostFiles files = host_files(config);
    if (!file_exists(files.allow_list))
        throw Error("host: no allow-list at '" + files.allow_list + "': invite peers first (archipelago invite)");
    RunLog log("host");

    net::HostOptions so;
    so.bind_endpoint = config.bind;
    so.keys = ensure_host_key(files);
    so.allow = net::AllowList::load(files.allow_list);
    so.run_id = ensure_run_id(files);
    so.limits.heartbeat_timeout_ms = static_cast<int>(config.heartbeat_timeout_s * 1000);
    so.limits.heartbeat_ttl_ms = so.limits.heartbeat_timeout_ms * 2;
    so.log = [&](const std::string& line) { log.line("net: " + line); };

    HostOptions ho;
    ho.config = config;
    ho.repo_root = repo_root();
    ho.log = [&](const std::string& line) { log.line(line); };
    RoundTable table;
    ho.on_round = [&](const RoundRow& row) { table.print(row); };
    Host host(std::move(ho));
    net::HostSocket socket(std::move(so));
    log.line("listening on " + socket.endpoint() + " for run " + config.name + " (" + std::to_string(config.islands) +
             " islands, " + std::to_string(config.rounds) + " rounds, " + config.mode + ")");
    HostLink link(socket, [&](const std::string& line) { log.line("transfer: " + line); });
    g_host = &host;
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    host.run(link);
    g_host = nullptr;
    table.summary();
    log.line("θ " + host.theta_hash().substr(0, 16) + "; checkpoint " + config.checkpoint_dir + "/model.bin");
    return host.round() >= static_cast<uint64_t>(config.rounds) ? 0 : 1;
}

}  // namespace arch::cli
