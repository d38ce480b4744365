// peers/cli/cmd_train.cpp: `archipelago train`: single-node training of one island on this machine,
// with live progress, periodic validation, optional JSONL logs, checkpoints in --out and a sample.
// Without --train-data it trains on the bundled corpus (prepared into the user's data directory on
// first use). The live progress line goes to the terminal only, never to a log file.
#include <unistd.h>

#include <filesystem>

#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/checkpoint.h"
#include "core/hf_import.h"
#include "core/corpus.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/inner_loop.h"
#include "core/island.h"
#include "core/sampling.h"
#include "core/tokenizer.h"
#include "core/install_paths.h"
#include "core/log.h"
#include "peers/cli/commands.h"
#include "peers/diloco/model_factory.h"

namespace arch::cli {

namespace {

// Everything `archipelago train` is told on its command line, bound to CLI11 in add_train.
struct TrainFlags {
    std::string config = "tiny", init, init_hf;
    int layers = 0, channels = 0, heads = 0, max_seq_len = 0, vocab = 0;  // 0: the preset's / the tokenizer's
    std::string train_data, val_data, tokenizer, data_order = "shuffled";
    int batch = 4, seq_len = 64, grad_accum = 1, steps = 200;
    double lr = 6e-4, final_lr_frac = 0.1, weight_decay = 0.1, beta1 = 0.9, beta2 = 0.95, eps = 1e-8, grad_clip = 1.0;
    int warmup = 20;
    std::string schedule = "cosine";
    uint64_t seed = 1337;
    std::string device = "cpu", attention = "fused", parallel = "ddp", recompute = "none", offload = "none";
    int devices = 1;
    std::string out;  // "": DATA/runs/train
    bool resume = false;
    int save_every = 0, stop_after = 0, val_every = 50, val_batches = 8, sample_tokens = 0;
    log::Options log;
};

std::string format_eta(double seconds) {
    const long s = std::lround(seconds);
    char buf[32];
    if (s >= 3600) std::snprintf(buf, sizeof(buf), "%ldh%02ldm", s / 3600, (s / 60) % 60);
    else std::snprintf(buf, sizeof(buf), "%ldm%02lds", s / 60, s % 60);
    return buf;
}

struct Data {
    std::string train, val, tokenizer;
};

Data resolve_data(const TrainFlags& f) {
    Data d{f.train_data, f.val_data, f.tokenizer};
    if (d.train.empty()) {
        if (!d.val.empty()) throw Error("train: --val-data needs --train-data too");
        const PreparedCorpus c = ensure_bundled_corpus();
        d.train = c.train_pattern;
        d.val = c.val_pattern;
        if (d.tokenizer.empty()) d.tokenizer = c.tokenizer_path;
    }
    return d;
}

ModelConfig resolve_model(const TrainFlags& f, const CLI::App& cmd, const Data& data, const HfModel* hf) {
    if (!f.init.empty() || hf) {
        if (!f.init.empty() && hf) throw Error("train: --init and --init-hf cannot be combined");
        for (const char* flag : {"--config", "--layers", "--channels", "--heads", "--max-seq-len", "--vocab"})
            if (cmd.count(flag)) throw Error(std::string("train: ") + flag + " cannot be combined with --init or --init-hf (the checkpoint decides)");
        return hf ? hf->config : read_checkpoint_config(f.init);
    }
    int vocab = f.vocab;
    if (vocab == 0 && !data.tokenizer.empty()) vocab = Tokenizer::load(data.tokenizer).vocab_size();
    ModelConfig c = model_preset(f.config, vocab);
    if (f.layers) c.num_layers = f.layers;
    if (f.channels) c.channels = f.channels;
    if (f.heads) c.num_heads = f.heads;
    if (f.max_seq_len) c.max_seq_len = f.max_seq_len;
    c.padded_vocab_size = pad_vocab(c.vocab_size);
    validate(c);
    return c;
}

TrainConfig resolve_train(const TrainFlags& f, const Data& data) {
    TrainConfig t;
    t.B = f.batch;
    t.T = f.seq_len;
    t.grad_accum = f.grad_accum;
    t.steps = f.steps;
    t.schedule.max_lr = static_cast<float>(f.lr);
    t.schedule.warmup_steps = f.warmup;
    t.schedule.total_steps = t.steps;
    t.schedule.final_fraction = static_cast<float>(f.final_lr_frac);
    t.schedule.kind = f.schedule == "cosine" ? LrSchedule::Kind::cosine : LrSchedule::Kind::constant;
    t.adamw.weight_decay = static_cast<float>(f.weight_decay);
    t.adamw.beta1 = static_cast<float>(f.beta1);
    t.adamw.beta2 = static_cast<float>(f.beta2);
    t.adamw.eps = static_cast<float>(f.eps);
    t.adamw.grad_clip = static_cast<float>(f.grad_clip);
    t.seed = f.seed;
    t.order = f.data_order == "shuffled" ? DataOrder::shuffled : DataOrder::sequential;
    t.val_batches = f.val_batches;
    t.train_pattern = data.train;
    t.val_pattern = data.val;
    return t;
}

void log_island(const Island& island, const std::string& device, Parallel parallel, int global_rows) {
    const auto mem = island.memory();
    log::get("island")->info("{} {} devices, {}, global batch {} rows per step", mem.size(),
                             diloco::parse_device(device).cuda ? "GPU" : "cpu", parallel_name(parallel), global_rows);
    for (std::size_t r = 0; r < mem.size(); ++r)
        log::get("island")->info("device {}: params {:.2f} MB, grads {:.2f} MB, optimizer {:.2f} MB", r,
                                 mem[r].params_bytes / 1e6, mem[r].grads_bytes / 1e6, mem[r].optimizer_bytes / 1e6);
}

// Where a step's progress goes: a line (rewritten in place on a terminal) and, with --log-format
// jsonl, one JSON object a step on stdout.
struct Progress {
    std::FILE* out;
    bool live, jsonl;
};

void report_step(const Progress& p, const StepStats& s, int steps, double eta, std::optional<float> val) {
    std::fprintf(p.out, "%sstep %5d/%d | loss %.4f | lr %.2e | norm %.2f | %.0f tok/s | ETA %s%s", p.live ? "\r" : "",
                 s.step, steps, s.loss, s.lr, s.grad_norm, s.tokens_per_s, format_eta(eta).c_str(), p.live ? "   " : "\n");
    std::fflush(p.out);
    if (val) {
        if (p.live) std::fputs("\n", p.out);
        log::get("train")->info("step {:5d} | val loss {:.4f}", s.step, *val);
    }
    if (p.jsonl) {
        nlohmann::ordered_json row{{"step", s.step}, {"loss", s.loss}, {"lr", s.lr}, {"grad_norm", s.grad_norm},
                                   {"tokens_per_s", s.tokens_per_s}};
        if (val) row["val_loss"] = *val;
        std::printf("%s\n", row.dump().c_str());
        std::fflush(stdout);
    }
}

// The model to sample from: the one the run trained on one device, or a CPU model given an island's θ
// (kept alive in `copy`).
Model& sampling_model(InnerLoop& loop, const ModelConfig& config, std::unique_ptr<Model>& copy) {
    if (Model* one = loop.single_model()) return *one;
    copy = diloco::make_model(config, "cpu");
    std::vector<float> params(copy->num_params());
    loop.get_params(params);
    copy->set_params(params);
    return *copy;
}

void print_sample(Model& model, const Tokenizer& tok, int tokens, std::FILE* out) {
    SamplingConfig sc;
    sc.max_new_tokens = tokens;
    sc.stop_token = tok.eot_token();
    std::fprintf(out, "sample:\n");
    generate(model, {tok.eot_token()}, sc, [&](int t) {
        if (t != tok.eot_token()) std::fputs(tok.decode_token(t).c_str(), out);
        std::fflush(out);
    });
    std::fprintf(out, "\n");
}

void run_train(const TrainFlags& f, const CLI::App& cmd) {
    log::configure(f.log);
    const Data data = resolve_data(f);
    const std::optional<HfModel> hf = f.init_hf.empty() ? std::nullopt : std::optional<HfModel>(import_hf(f.init_hf));
    const ModelConfig model_config = resolve_model(f, cmd, data, hf ? &*hf : nullptr);
    const TrainConfig train_config = resolve_train(f, data);
    const std::string out = f.out.empty() ? user_data_dir() + "/runs/train" : f.out;
    const bool jsonl = f.log.format == "jsonl";
    const Parallel parallel = parse_parallel(f.parallel);
    const std::optional<std::string> init = f.init.empty() ? std::nullopt : std::optional<std::string>(f.init);
    const bool resume = f.resume;
    const int save_every = f.save_every, stop_after = f.stop_after, val_every = f.val_every;
    const int sample_tokens = f.sample_tokens, devices = f.devices;
    const std::string& device = f.device;
    diloco::DeviceOptions device_options;
    device_options.attention = f.attention;
    device_options.recompute = parse_recompute(f.recompute);
    device_options.offload = parse_offload(f.offload);

    // Validates data against the model before any file is written.
    const std::unique_ptr<InnerLoop> loop =
        diloco::make_inner_loop(model_config, train_config, devices, parallel, device, device_options);
    const std::string ckpt = out + "/model.bin";
    if (resume) {
        loop->resume(ckpt);
    } else if (init) {
        loop->set_params(read_checkpoint_params(*init, model_config));
    } else if (hf) {
        loop->set_params(hf->params);
    } else {
        loop->init_weights(train_config.seed);
    }
    std::FILE* progress = jsonl ? stderr : stdout;  // jsonl owns stdout; the progress line goes to stderr
    const bool live = ::isatty(::fileno(progress));
    const auto lg = log::get("train");
    const Model* one_device = loop->single_model();
    lg->info("model {}, {:.2f}M params | B={} T={} accum={} | {} steps from step {} | device {}", describe(model_config),
             loop->num_params() / 1e6, train_config.B, train_config.T, train_config.grad_accum, train_config.steps,
             loop->steps_done(), one_device ? one_device->device_name() : device);
    if (const Island* island = loop->island())
        log_island(*island, device, parallel, train_config.B * train_config.grad_accum * devices);
    std::error_code ec;
    std::filesystem::create_directories(out, ec);
    if (ec) throw Error("cannot create the output folder '" + out + "': " + ec.message());
    auto save = [&] {
        loop->save(ckpt);
        if (!data.tokenizer.empty() && data.tokenizer != out + "/tokenizer.bin")
            write_file_atomic(out + "/tokenizer.bin", read_file(data.tokenizer));
    };

    double elapsed = 0.0;
    int steps_this_run = 0;
    while (loop->steps_done() < train_config.steps) {
        const StepStats s = loop->step();
        elapsed += s.seconds;
        ++steps_this_run;
        std::optional<float> val;
        if (loop->has_val() && val_every > 0 && (s.step % val_every == 0 || s.step == train_config.steps))
            val = loop->evaluate();
        report_step(Progress{progress, live, jsonl}, s, train_config.steps, elapsed / steps_this_run * (train_config.steps - s.step), val);
        if (save_every > 0 && s.step % save_every == 0) save();
        if (stop_after > 0 && steps_this_run >= stop_after) break;
    }
    if (live) std::fputs("\n", progress);
    save();
    lg->info("saved {} (+ .state) after step {}", ckpt, loop->steps_done());

    if (sample_tokens > 0 && !data.tokenizer.empty()) {
        std::unique_ptr<Model> island_copy;
        print_sample(sampling_model(*loop, model_config, island_copy), Tokenizer::load(data.tokenizer),
                     sample_tokens, progress);
    }
}

}  // namespace

void add_train(CLI::App& app, int& exit_code) {
    auto f = std::make_shared<TrainFlags>();
    CLI::App* cmd = app.add_subcommand("train", "train a model (GPT-2 or Llama) on one island (this machine), from scratch or from a checkpoint");
    cmd->add_option("--config", f->config, "model preset: " + model_preset_names())->group("Model");
    cmd->add_option("--init", f->init, "start from this checkpoint, llm.c GPT-2 or native Llama (it decides the model)")->group("Model");
    cmd->add_option("--init-hf", f->init_hf, "start from this Hugging Face model folder (config.json + safetensors; it decides the model)")
        ->group("Model");
    cmd->add_option("--layers", f->layers, "override the preset's layers (0: the preset's)")->check(CLI::Range(0, 1024))->group("Model");
    cmd->add_option("--channels", f->channels, "override the preset's channels")->check(CLI::Range(0, 65536))->group("Model");
    cmd->add_option("--heads", f->heads, "override the preset's heads")->check(CLI::Range(0, 1024))->group("Model");
    cmd->add_option("--max-seq-len", f->max_seq_len, "override the preset's max T")->check(CLI::Range(0, 1 << 20))->group("Model");
    cmd->add_option("--vocab", f->vocab, "vocabulary size (0: the tokenizer's)")->check(CLI::Range(0, 1 << 24))->group("Model");
    cmd->add_option("--train-data", f->train_data, "llm.c train shards (pattern); default: the bundled corpus")->group("Data");
    cmd->add_option("--val-data", f->val_data, "llm.c val shards (pattern)")->group("Data");
    cmd->add_option("--tokenizer", f->tokenizer, "tokenizer file (for the vocab size and samples)")->group("Data");
    cmd->add_option("--data-order", f->data_order, "shuffled or sequential")->check(CLI::IsMember({"shuffled", "sequential"}))->group("Data");
    cmd->add_option("--batch", f->batch, "B: rows per micro-batch")->check(CLI::Range(1, 1 << 16))->group("Batch");
    cmd->add_option("--seq-len", f->seq_len, "T: tokens per row")->check(CLI::Range(1, 1 << 20))->group("Batch");
    cmd->add_option("--grad-accum", f->grad_accum, "micro-batches per step")->check(CLI::Range(1, 1 << 16))->group("Batch");
    cmd->add_option("--steps", f->steps, "optimizer steps in all")->check(CLI::Range(1, 1 << 30))->group("Batch");
    cmd->add_option("--lr", f->lr, "peak learning rate")->check(CLI::Range(1e-12, 10.0))->group("Optimizer");
    cmd->add_option("--warmup", f->warmup, "warmup steps")->check(CLI::Range(0, 1 << 30))->group("Optimizer");
    cmd->add_option("--schedule", f->schedule, "cosine or constant")->check(CLI::IsMember({"cosine", "constant"}))->group("Optimizer");
    cmd->add_option("--final-lr-frac", f->final_lr_frac, "cosine ends at this fraction of --lr")->check(CLI::Range(0.0, 1.0))->group("Optimizer");
    cmd->add_option("--weight-decay", f->weight_decay, "AdamW weight decay")->check(CLI::Range(0.0, 10.0))->group("Optimizer");
    cmd->add_option("--beta1", f->beta1, "AdamW beta1, in [0, 1)")->check(CLI::Range(0.0, 0.999999))->group("Optimizer");
    cmd->add_option("--beta2", f->beta2, "AdamW beta2, in [0, 1)")->check(CLI::Range(0.0, 0.999999))->group("Optimizer");
    cmd->add_option("--eps", f->eps, "AdamW epsilon")->check(CLI::Range(1e-30, 1.0))->group("Optimizer");
    cmd->add_option("--grad-clip", f->grad_clip, "global gradient norm clip (0: none)")->check(CLI::Range(0.0, 1e9))->group("Optimizer");
    cmd->add_option("--seed", f->seed, "weight init and data order")->group("Optimizer");
    cmd->add_option("--device", f->device, "cpu, cuda or cuda:N (bf16 on one GPU)")->group("Device");
    cmd->add_option("--attention", f->attention, "fused or unfused (GPU)")->check(CLI::IsMember({"fused", "unfused"}))->group("Device");
    cmd->add_option("--devices", f->devices, "devices in the island (CPU threads, or GPUs)")->check(CLI::Range(1, 64))->group("Device");
    cmd->add_option("--parallel", f->parallel, "ddp or zero3")->check(CLI::IsMember({"ddp", "zero3"}))->group("Device");
    cmd->add_option("--recompute", f->recompute, "none, attention or block: recompute activations in backward")
        ->check(CLI::IsMember({"none", "attention", "block"}))
        ->group("Device");
    cmd->add_option("--offload", f->offload, "none or optimizer: master weights and AdamW state in host memory (GPU)")
        ->check(CLI::IsMember({"none", "optimizer"}))
        ->group("Device");
    cmd->add_option("--out", f->out, "run folder (default: DATA/runs/train, DATA the user's data directory)")->group("Run");
    cmd->add_flag("--resume", f->resume, "continue from --out's checkpoint")->group("Run");
    cmd->add_option("--save-every", f->save_every, "checkpoint every N steps (0: at the end)")->check(CLI::Range(0, 1 << 30))->group("Run");
    cmd->add_option("--stop-after", f->stop_after, "stop after N steps of this run (0: run to --steps)")->check(CLI::Range(0, 1 << 30))->group("Run");
    cmd->add_option("--val-every", f->val_every, "val loss every N steps (0: never)")->check(CLI::Range(0, 1 << 30))->group("Run");
    cmd->add_option("--val-batches", f->val_batches, "batches per val loss")->check(CLI::Range(1, 1 << 20))->group("Run");
    cmd->add_option("--sample-tokens", f->sample_tokens, "print a sample of N tokens at the end")->check(CLI::Range(0, 1 << 30))->group("Run");
    add_log_flags(*cmd, f->log);
    cmd->callback([f, cmd, &exit_code] {
        run_train(*f, *cmd);
        exit_code = 0;
    });
}

}  // namespace arch::cli
