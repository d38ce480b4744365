// peers/cli/cmd_plan.cpp: `archipelago plan`: what fits on a rig. Prints core/memory_plan.h's bytes
// per device by category for DDP, ZeRO-3, ZeRO-3 + recompute and (GPUs) + offload, whether each
// fits, the largest micro-batch that does, and the host memory the island and its DiLoCo peer need.
// Allocates nothing.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "compression/codec.h"
#include "core/error.h"
#include "core/hf_import.h"
#include "core/machine_memory.h"
#include "core/memory_plan.h"
#include "core/model_config.h"
#include "core/model_family.h"
#include "peers/cli/commands.h"

namespace arch::cli {

namespace {

struct PlanFlags {
    std::string config, hf_config, family, device = "cuda", device_memory, parallel = "ddp",
                                           recompute = "none", offload = "none",
                                           attention = "fused";
    int layers = 0, channels = 0, heads = 0, kv_heads = 0, ffn = 0, vocab = 0, max_seq_len = 0;
    int devices = 1, batch = 1, seq_len = 0, desloc = 4;
    bool no_error_feedback = false, overlap = false, json = false;
    std::string down_codec = "fp32", host_memory;
};

// Bare sizes without --family: the first family that takes every family setting given (--kv-heads,
// --ffn), else the first family registered.
const ModelFamilySpec& family_of_flags(const PlanFlags& f) {
    std::vector<std::string> given;
    if (f.kv_heads) given.push_back("kv_heads");
    if (f.ffn) given.push_back("ffn_hidden");
    for (const ModelFamilySpec* family : model_families()) {
        const std::vector<std::string>& own = family->settings;
        if (std::all_of(given.begin(), given.end(), [&](const std::string& k) { return std::find(own.begin(), own.end(), k) != own.end(); }))
            return *family;
    }
    return *model_families().front();
}

// The model: a preset, an HF config.json, or explicit sizes; explicit sizes override the first two.
ModelConfig plan_model(const PlanFlags& f) {
    if (!f.config.empty() && !f.hf_config.empty())
        throw Error("plan: give --config or --hf-config, not both");
    ModelConfig c;
    const bool explicit_model = f.config.empty() && f.hf_config.empty();
    if (!f.hf_config.empty()) {
        c = hf_model_config(f.hf_config);
    } else if (!f.config.empty()) {
        c = model_preset(f.config, f.vocab);
    } else {
        if (f.layers == 0 || f.channels == 0 || f.heads == 0)
            throw Error(
                "plan: name a model with --config PRESET, --hf-config FILE, or --layers, "
                "--channels and --heads");
        const ModelFamilySpec& family = f.family.empty() ? family_of_flags(f) : family_spec(f.family);
        c.family = family.id;
        c.max_seq_len = 1024;
        if (family.plan_defaults) family.plan_defaults(c);
    }
    if (!f.family.empty() && !explicit_model && parse_family(f.family) != c.family)
        throw Error("plan: --family " + f.family + " contradicts the model's family " +
                    family_name(c.family));
    if (f.layers) c.num_layers = f.layers;
    if (f.channels) c.channels = f.channels;
    if (f.heads) c.num_heads = f.heads;
    if (f.kv_heads) c.num_kv_heads = f.kv_heads;
    if (f.ffn) c.ffn_hidden = f.ffn;
    if (f.vocab) c.vocab_size = f.vocab;
    c.padded_vocab_size = pad_vocab(c.vocab_size);
    if (f.max_seq_len)
        c.max_seq_len = f.max_seq_len;
    else if (explicit_model && f.seq_len > c.max_seq_len)
        c.max_seq_len = f.seq_len;
    if (const auto complete = family_spec(c.family).plan_complete) complete(c);
    validate(c);
    return c;
}

nlohmann::json device_json(const DeviceBytes& d) {
    return {{"params", d.params},           {"grads", d.grads},         {"optimizer", d.optimizer},
            {"activations", d.activations}, {"workspace", d.workspace}, {"comm", d.comm},
            {"reserve", d.reserve},         {"total", d.total()}};
}

nlohmann::json host_json(const HostBytes& h) {
    return {{"offloaded_optimizer", h.offloaded_optimizer},
            {"offload_staging", h.offload_staging},
            {"theta_replica", h.theta_replica},
            {"pseudo_gradient", h.pseudo_gradient},
            {"ef_residual", h.ef_residual},
            {"update", h.update},
            {"overlap_carry", h.overlap_carry},
            {"moments", h.moments},
            {"offload", h.offload()},
            {"diloco", h.diloco()},
            {"total", h.total()},
            {"total_state_on_disk", h.total_state_on_disk()},
            {"on_disk", h.diloco_on_disk()}};
}

void print_table(const std::vector<MemoryPlan>& plans, std::size_t ram, const char* host_memory_source) {
    const MemoryPlan& first = plans.front();
    const PlanRequest& q = first.request;
    std::printf("model %s, %.2fM params\n", describe(q.model).c_str(), first.num_params / 1e6);
    std::printf("island: %d x %s with %s each; micro-batch B=%d, T=%d%s\n\n", q.devices,
                q.device == PlanDevice::cuda ? "GPU (bf16, fp32 master)" : "CPU (fp32)",
                q.device_memory_bytes ? format_bytes(q.device_memory_bytes).c_str() : "no limit",
                q.B, q.T,
                q.device == PlanDevice::cuda
                    ? (q.fused_attention ? ", fused attention" : ", unfused attention")
                    : "");
    std::printf("per device:\n%-44s %11s %11s %11s %11s %11s %11s %11s %11s  %-4s %6s\n", "mode",
                "params", "grads", "optimizer", "activations", "workspace", "comm", "reserve",
                "total", "fits", "max B");
    for (const MemoryPlan& p : plans) {
        const DeviceBytes& d = p.device;
        std::printf("%-44s %11s %11s %11s %11s %11s %11s %11s %11s  %-4s %6d\n",
                    plan_mode_name(p.request).c_str(), format_bytes(d.params).c_str(),
                    format_bytes(d.grads).c_str(), format_bytes(d.optimizer).c_str(),
                    format_bytes(d.activations).c_str(), format_bytes(d.workspace).c_str(),
                    format_bytes(d.comm).c_str(), format_bytes(d.reserve).c_str(),
                    format_bytes(d.total()).c_str(), p.fits ? "yes" : "no", p.max_micro_batch);
    }
    std::printf("\nhost (the island's machine, all its devices, and its DiLoCo peer):\n%-44s %11s %11s %11s %11s %17s\n",
                "mode", "offloaded", "staging", "diloco", "total", "state on disk");
    for (const MemoryPlan& p : plans) {
        const HostBytes& h = p.host;
        std::printf("%-44s %11s %11s %11s %11s %17s\n", plan_mode_name(p.request).c_str(),
                    format_bytes(h.offloaded_optimizer).c_str(), format_bytes(h.offload_staging).c_str(),
                    format_bytes(h.diloco()).c_str(), format_bytes(h.total()).c_str(),
                    format_bytes(h.total_state_on_disk()).c_str());
    }
    const HostBytes& h = first.host;
    std::printf("  diloco = theta replica %s + pseudo-gradient %s + error-feedback residual %s + update as it arrives %s%s%s\n"
                "  state on disk (archipelago peer --state-on-disk): the theta replica and the residual are memory-mapped "
                "files, %s of disk\n",
                format_bytes(h.theta_replica).c_str(), format_bytes(h.pseudo_gradient).c_str(),
                format_bytes(h.ef_residual).c_str(), format_bytes(h.update).c_str(),
                h.overlap_carry ? (" + overlap mode's carry " + format_bytes(h.overlap_carry)).c_str() : "",
                h.moments ? (" + DES-LOC's moments in the rounds that carry them " + format_bytes(h.moments) +
                             " (--desloc 0: a run without them)").c_str()
                          : "",
                format_bytes(h.diloco_on_disk()).c_str());
    std::printf("  offload is a GPU mode (--device cuda): a CPU device's optimizer state is in RAM already\n");
    if (ram == 0) return;
    std::printf("\nthis machine's RAM (%s): %s\n", host_memory_source, format_bytes(ram).c_str());
    for (const MemoryPlan& p : plans)
        std::printf("%-44s %s\n", plan_mode_name(p.request).c_str(),
                    p.host.total() <= ram                ? "fits"
                    : p.host.total_state_on_disk() <= ram ? "fits with --state-on-disk"
                                                          : "does not fit, even with --state-on-disk");
}

void run_plan(const PlanFlags& f) {
    PlanRequest q;
    q.model = plan_model(f);
    q.device = parse_plan_device(f.device);
    q.devices = f.devices;
    q.B = f.batch;
    q.T = f.seq_len;
    q.parallel = parse_parallel(f.parallel);
    q.recompute = parse_recompute(f.recompute);
    q.offload = parse_offload(f.offload);
    q.fused_attention = f.attention == "fused";
    q.error_feedback = !f.no_error_feedback;
    q.overlap = f.overlap;
    q.desloc = f.desloc > 0;
    // The update as it arrives: the codec's bytes per parameter (over a million), twice with a zstd
    // stage (the message, at worst as large, and its payload out of it).
    constexpr std::uint64_t kSample = 1 << 20;
    const int copies = compression::parse_codec_spec(f.down_codec).zstd ? 2 : 1;
    q.update_bytes_per_param = copies * static_cast<double>(compression::payload_bytes_limit(f.down_codec, kSample)) / kSample;
    const std::size_t ram = f.host_memory.empty() ? machine_memory_bytes() : parse_bytes(f.host_memory);
    if (!f.device_memory.empty())
        q.device_memory_bytes = parse_bytes(f.device_memory);
    else if (q.device == PlanDevice::cuda)
        q.device_memory_bytes = parse_bytes("24GiB");
    else
        q.device_memory_bytes = machine_memory_bytes() / static_cast<std::size_t>(q.devices);
    std::vector<MemoryPlan> plans;
    for (const PlanRequest& mode : plan_modes(q)) plans.push_back(plan_memory(mode));
    if (!f.json) {
        print_table(plans, ram, f.host_memory.empty() ? "MemTotal" : "--host-memory");
        return;
    }
    nlohmann::json out = nlohmann::json::array();
    for (const MemoryPlan& p : plans)
        out.push_back({{"mode", plan_mode_name(p.request)},
                       {"parallel", parallel_name(p.request.parallel)},
                       {"recompute", recompute_name(p.request.recompute)},
                       {"offload", offload_name(p.request.offload)},
                       {"model", describe(p.request.model)},
                       {"num_params", p.num_params},
                       {"devices", p.request.devices},
                       {"device", p.request.device == PlanDevice::cuda ? "cuda" : "cpu"},
                       {"device_memory", p.request.device_memory_bytes},
                       {"B", p.request.B},
                       {"T", p.request.T},
                       {"per_device", device_json(p.device)},
                       {"host", host_json(p.host)},
                       {"host_memory", ram},
                       {"fits", p.fits},
                       {"max_micro_batch", p.max_micro_batch}});
    std::printf("%s\n", out.dump(2).c_str());
}

}  // namespace

void add_plan(CLI::App& app, int& exit_code) {
    auto f = std::make_shared<PlanFlags>();
    CLI::App* cmd = app.add_subcommand("plan",
                                       "what fits on a rig: memory per device by category for DDP, "
                                       "ZeRO-3, recompute and offload, and the host memory");
    cmd->add_option("--config", f->config,
                    "model preset: " + model_preset_names())
        ->group("Model");
    cmd->add_option("--hf-config", f->hf_config,
                    "a Hugging Face config.json (or its folder); no weights needed")
        ->group("Model");
    cmd->add_option(
           "--family", f->family,
           "gpt2 or llama, for explicit sizes (default: llama when --ffn or --kv-heads is given)")
        ->check(CLI::IsMember({"gpt2", "llama"}))
        ->group("Model");
    cmd->add_option("--layers", f->layers, "L (overrides the preset's)")
        ->check(CLI::Range(0, 1024))
        ->group("Model");
    cmd->add_option("--channels", f->channels, "C")->check(CLI::Range(0, 65536))->group("Model");
    cmd->add_option("--heads", f->heads, "NH")->check(CLI::Range(0, 1024))->group("Model");
    cmd->add_option("--kv-heads", f->kv_heads, "KV heads (Llama; default NH)")
        ->check(CLI::Range(0, 1024))
        ->group("Model");
    cmd->add_option("--ffn", f->ffn,
                    "F, the SwiGLU width (Llama; default 8C/3 to a multiple of 256)")
        ->check(CLI::Range(0, 1 << 20))
        ->group("Model");
    cmd->add_option("--vocab", f->vocab, "V (default: the preset's; 50257 GPT-2, 32000 Llama)")
        ->check(CLI::Range(0, 1 << 24))
        ->group("Model");
    cmd->add_option("--max-seq-len", f->max_seq_len,
                    "the model's max T (default: the preset's, or --seq-len)")
        ->check(CLI::Range(0, 1 << 20))
        ->group("Model");
    cmd->add_option("--devices", f->devices, "N devices in the island")
        ->check(CLI::Range(1, 4096))
        ->group("Rig");
    cmd->add_option("--device-memory", f->device_memory,
                    "memory per device, e.g. 24GiB (default: 24GiB on cuda, RAM / N on cpu)")
        ->group("Rig");
    cmd->add_option("--device", f->device, "cpu (fp32) or cuda (bf16)")
        ->check(CLI::IsMember({"cpu", "cuda"}))
        ->group("Rig");
    cmd->add_option("--attention", f->attention, "fused or unfused (cuda)")
        ->check(CLI::IsMember({"fused", "unfused"}))
        ->group("Rig");
    cmd->add_option("--batch", f->batch, "B: rows per micro-batch")
        ->check(CLI::Range(1, 1 << 20))
        ->group("Batch");
    cmd->add_option("--seq-len", f->seq_len, "T: tokens per row (default: the model's max)")
        ->check(CLI::Range(0, 1 << 20))
        ->group("Batch");
    cmd->add_option("--parallel", f->parallel,
                    "ddp or zero3: the mode printed beside the standard ones")
        ->check(CLI::IsMember({"ddp", "zero3"}))
        ->group("Mode");
    cmd->add_option("--recompute", f->recompute, "none, attention or block")
        ->check(CLI::IsMember({"none", "attention", "block"}))
        ->group("Mode");
    cmd->add_option("--offload", f->offload, "none or optimizer (cuda)")
        ->check(CLI::IsMember({"none", "optimizer"}))
        ->group("Mode");
    cmd->add_flag("--no-error-feedback", f->no_error_feedback,
                  "the peer's uplink codec keeps no error-feedback residual")
        ->group("Mode");
    cmd->add_flag("--overlap", f->overlap, "the run is in overlap mode: the peer also keeps θ_i at its send and a scratch (2 P)")
        ->group("Mode");
    cmd->add_option("--desloc", f->desloc,
                    "the run's outer.sync_moments_every (DES-LOC, 4 by default in sync mode): in those rounds the peer "
                    "also holds the AdamW moments in bf16 (P), its own as it sends them and the islands' mean as it takes "
                    "it; 0: none")
        ->check(CLI::NonNegativeNumber)
        ->group("Mode");
    cmd->add_option("--down-codec", f->down_codec, "the run's wire.down_codec: the size of an update as it arrives")
        ->group("Mode");
    cmd->add_option("--host-memory", f->host_memory, "the RAM of the island's machine, e.g. 64GiB (default: this machine's)")
        ->group("Rig");
    cmd->add_flag("--json", f->json, "print the plans as JSON (bytes) instead of a table");
    cmd->callback([f, &exit_code] {
        run_plan(*f);
        exit_code = 0;
    });
}

}  // namespace arch::cli
