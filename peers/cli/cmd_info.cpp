// peers/cli/cmd_info.cpp: `archipelago info`: the backends this build has, the devices it sees and the
// CUDA architectures it was compiled for, so a user knows what --device can be before a run.
#include <omp.h>

#include <cstdio>
#include <filesystem>

#include "core/install_paths.h"
#include "peers/cli/commands.h"
#include "peers/diloco/model_factory.h"
#ifdef ARCH_HAVE_CUDA
#include "kernels/cuda/cuda_info.h"
#endif

namespace arch::cli {

namespace {

void run_info() {
    std::printf("%s\n", "archipelago " ARCH_VERSION);
    std::printf("backends:\n");
    std::printf("  cpu    fp32, oneDNN sgemm + OpenMP, %d threads (--device cpu)\n", omp_get_max_threads());
#ifdef ARCH_HAVE_CUDA
    const cuda::Info info = cuda::cuda_info();
    std::printf("  cuda   bf16 weights and activations, fp32 master weights and AdamW state, cuBLASLt (--device cuda:N)\n");
    std::printf("         compiled for CUDA architectures %s; CUDA runtime %s, driver %s\n", info.compiled_architectures.c_str(),
                info.runtime_version.c_str(), info.driver_version.empty() ? "none" : info.driver_version.c_str());
    std::printf("devices:\n");
    std::printf("  cpu\n");
    if (info.devices.empty()) std::printf("  (no CUDA device: %s)\n", info.problem.c_str());
    for (const cuda::DeviceInfo& d : info.devices)
        std::printf("  cuda:%d  %s, sm_%d, %.1f GiB, %d SMs at %.2f GHz, bf16 dense peak %.0f TFLOP/s (%s)\n", d.index,
                    d.name.c_str(), d.sm, d.memory_bytes / 1073741824.0, d.multiprocessors, d.clock_ghz,
                    d.bf16_peak_tflops, d.peak_source.c_str());
#else
    std::printf("  cuda   not built (no CUDA toolkit was found when this archipelago was built)\n");
    std::printf("devices:\n  cpu\n");
#endif
    std::printf("data: shipped files from %s; prepared data and runs in %s\n",
                std::filesystem::path(shipped_file("kjv.txt.zst")).parent_path().c_str(), user_data_dir().c_str());
}

}  // namespace

void add_info(CLI::App& app, int& exit_code) {
    CLI::App* cmd = app.add_subcommand("info", "list the backends, the devices this machine has and the compiled CUDA architectures");
    cmd->callback([&exit_code] {
        run_info();
        exit_code = 0;
    });
}

}  // namespace arch::cli
