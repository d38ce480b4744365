// peers/cli/main.cpp: `archipelago COMMAND ...`: dispatches to a subcommand and is the one place
// where errors are caught, printed as "error: ..." and turned into a non-zero exit code.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "core/error.h"
#include "peers/cli/commands.h"

namespace {
const char* kUsage =
    "usage: archipelago COMMAND [options]   (archipelago COMMAND --help for its options)\n"
    "commands:\n"
    "  train     train a GPT-2 on one island (this machine), from scratch or from a checkpoint\n"
    "  prepare   turn text files into a tokenizer and llm.c token shards\n"
    "  sample    generate text from a checkpoint\n"
    "  export    export a checkpoint for Hugging Face transformers (--safetensors)\n"
    "  keygen    make a node's CURVE key pair\n"
    "  invite    allow a peer's key and write the invite it joins with\n"
    "  host      host a DiLoCo run (run.toml)\n"
    "  peer      join a run with an invite and train one island (headless daemon)\n"
    "  daemon    serve the control API; host or join a run when told (the desktop app's backend)\n"
    "  status    print the status, peers and rounds of a local daemon, host or peer\n"
    "  info      list the backends, the devices this machine has and the compiled CUDA architectures\n";
}

int main(int argc, char** argv) {
    if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "help")) {
        std::fputs(kUsage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const std::string command = argv[1];
    const std::vector<std::string> rest(argv + 2, argv + argc);
    try {
        if (command == "train") return arch::cli::cmd_train(rest);
        if (command == "prepare") return arch::cli::cmd_prepare(rest);
        if (command == "sample") return arch::cli::cmd_sample(rest);
        if (command == "export") return arch::cli::cmd_export(rest);
        if (command == "keygen") return arch::cli::cmd_keygen(rest);
        if (command == "invite") return arch::cli::cmd_invite(rest);
        if (command == "host") return arch::cli::cmd_host(rest);
        if (command == "peer") return arch::cli::cmd_peer(rest);
        if (command == "daemon") return arch::cli::cmd_daemon(rest);
        if (command == "status") return arch::cli::cmd_status(rest);
        if (command == "info") return arch::cli::cmd_info(rest);
        std::fprintf(stderr, "error: unknown command '%s'\n%s", command.c_str(), kUsage);
        return 2;
    } catch (const arch::Error& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    } catch (const std::bad_alloc&) {
        std::fprintf(stderr, "error: out of memory (try a smaller model, batch or sequence length)\n");
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}
