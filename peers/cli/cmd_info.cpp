// peers/cli/cmd_info.cpp: `archipelago info`: the backends this build has, the devices it sees and the
// CUDA architectures it was compiled for, so a user knows what --device can be before a run; and the
// token shards of the prepared corpora (or of --data): how many, how many tokens, and their width.
#include <omp.h>

#include <cstdio>
#include <filesystem>

#include "core/data_manifest.h"
#include "core/error.h"
#include "core/install_paths.h"
#include "core/token_shard.h"
#include "peers/cli/commands.h"
#include "peers/diloco/model_factory.h"

namespace arch::cli {

namespace {

// "train: 2 shards, 1234567 tokens, uint16" for the shards matching pattern.
std::string describe_shards(const std::string& pattern) {
    try {
        uint64_t tokens = 0;
        int widths = 0;  // bit 2: uint16 seen, bit 4: uint32 seen
        const std::vector<std::string> paths = shard_paths(pattern);
        for (const std::string& p : paths) {
            const TokenShardInfo info = read_token_shard_info(p);
            tokens += info.tokens;
            widths |= info.token_bytes;
        }
        const char* width = widths == 2 ? "uint16" : widths == 4 ? "uint32" : "uint16 and uint32 mixed";
        return std::to_string(paths.size()) + " shard(s), " + std::to_string(tokens) + " tokens, " + width;
    } catch (const Error& e) {
        return e.what();
    }
}

void print_data(const std::vector<std::string>& patterns) {
    if (!patterns.empty()) {
        for (const std::string& p : patterns) {
            const bool folder = std::filesystem::is_directory(p);
            std::printf("  %s: %s\n", p.c_str(), describe_shards(folder ? p + "/*.bin" : p).c_str());
        }
        return;
    }
    const std::filesystem::path corpora = std::filesystem::path(user_data_dir()) / "corpus";
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(corpora, ec))
        if (std::filesystem::exists(e.path() / "DONE"))
            std::printf("  %s: train %s; val %s\n", e.path().c_str(), describe_shards((e.path() / "train_*.bin").string()).c_str(),
                        describe_shards((e.path() / "val_*.bin").string()).c_str());
}

void run_info(const std::vector<std::string>& data) {
    std::printf("%s\n", "archipelago " ARCH_VERSION);
    std::printf("backends:\n");
    std::printf("  cpu    fp32, oneDNN sgemm + OpenMP, %d threads (--device cpu)\n", omp_get_max_threads());
    if (const diloco::GpuBackend* gpu = diloco::gpu_backend()) {
        for (const std::string& line : gpu->describe()) std::printf("%s\n", line.c_str());
    } else {
        std::printf("  cuda   not built into this program (a CPU-only build or package)\n");
        std::printf("devices:\n  cpu\n");
    }
    std::printf("data: shipped files from %s; prepared data and runs in %s\n",
                std::filesystem::path(shipped_file("kjv.txt.zst")).parent_path().c_str(), user_data_dir().c_str());
    print_data(data);
}

}  // namespace

void add_info(CLI::App& app, int& exit_code) {
    CLI::App* cmd = app.add_subcommand("info", "list the backends, the devices this machine has and the compiled CUDA architectures");
    auto data = std::make_shared<std::vector<std::string>>();
    cmd->add_option("--data", *data, "token shards (a folder or a glob) to describe: count, tokens, uint16 or uint32")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    cmd->callback([&exit_code, data] {
        run_info(*data);
        exit_code = 0;
    });
}

}  // namespace arch::cli
