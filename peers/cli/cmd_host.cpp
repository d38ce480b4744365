// peers/cli/cmd_host.cpp: `archipelago host --config run.toml`: binds the encrypted host socket
// (allow-list from the run folder), runs the rounds, and prints one table row per round. With
// --control-port it also serves the control API (status, pause/resume/leave; docs/control-api.md).
#include <cstdio>

#include "core/error.h"
#include "peers/cli/args.h"
#include "peers/cli/commands.h"
#include "peers/cli/sessions.h"

namespace arch::cli {

int cmd_host(const std::vector<std::string>& argv) {
    Args args("host", argv,
              std::string("usage: archipelago host --config run.toml [--bind tcp://ADDR:PORT] [--control-port P]\n") +
                  kControlUsage);
    if (args.help()) {
        std::fputs(args.usage().c_str(), stdout);
        return 0;
    }
    const std::string config_path = args.str("config", "");
    const std::string bind = args.str("bind", "");
    const ControlFlags control = read_control_flags(args, -1);
    args.finish();
    if (config_path.empty()) throw Error("host: give --config run.toml\n" + args.usage());
    RunConfig config = load_run_config(config_path);
    if (!bind.empty()) config.bind = bind;
    RunStatus status;
    ControlEndpoint endpoint(control, status, ControlActions{[] { return true; }, {}, {}});
    return run_host_session(std::move(config), status, true) ? 0 : 1;
}

}  // namespace arch::cli
