// peers/cli/commands.h: the archipelago subcommands; each takes its arguments (after the command
// name) and returns the process exit code. Errors are thrown as arch::Error and printed by main.
#pragma once

#include <string>
#include <vector>

namespace arch::cli {

int cmd_train(const std::vector<std::string>& argv);
int cmd_prepare(const std::vector<std::string>& argv);
int cmd_sample(const std::vector<std::string>& argv);
int cmd_export(const std::vector<std::string>& argv);
int cmd_keygen(const std::vector<std::string>& argv);
int cmd_invite(const std::vector<std::string>& argv);
int cmd_host(const std::vector<std::string>& argv);
int cmd_peer(const std::vector<std::string>& argv);
int cmd_daemon(const std::vector<std::string>& argv);  // control API; host or join when told
int cmd_status(const std::vector<std::string>& argv);  // a control API client
int cmd_info(const std::vector<std::string>& argv);    // backends, devices, compiled CUDA architectures

// The folder holding data/kjv.txt.zst: $ARCH_HOME, else found upward from the executable, else ".".
std::string repo_root();

}  // namespace arch::cli
