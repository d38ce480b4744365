// peers/cli/cmd_train.cpp: `archipelago train`: single-node training of one island on this machine,
// with live progress, periodic validation, optional JSONL logs, checkpoints in --out and a sample.
// Without --train-data it trains on the bundled corpus (prepared into data/kjv/ on first use).
#include <unistd.h>

#include <filesystem>

#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>

#include "core/checkpoint.h"
#include "core/corpus.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/island.h"
#include "core/sampling.h"
#include "core/tokenizer.h"
#include "core/trainer.h"
#include "peers/cli/args.h"
#include "peers/cli/commands.h"
#include "peers/diloco/model_factory.h"

namespace arch::cli {

namespace {

const char* kTrainUsage =
    "usage: archipelago train [options]\n"
    "model:  --config tiny|small|gpt2-124m (default tiny) | --init FILE (llm.c checkpoint)\n"
    "        --layers L --channels C --heads NH --max-seq-len T --vocab V   (override the preset)\n"
    "data:   --train-data PATTERN --val-data PATTERN   (llm.c shards; default: the bundled corpus)\n"
    "        --tokenizer FILE   --data-order shuffled|sequential (default shuffled)\n"
    "batch:  --batch B (4) --seq-len T (64) --grad-accum N (1) --steps N (200)\n"
    "optim:  --lr 6e-4 --warmup 20 --schedule cosine|constant --final-lr-frac 0.1 --weight-decay 0.1\n"
    "        --beta1 0.9 --beta2 0.95 --eps 1e-8 --grad-clip 1.0 --seed 1337\n"
    "device: --device cpu|cuda|cuda:N (default cpu; cuda: bf16 on one GPU) --attention fused|unfused (GPU)\n"
    "island: --devices N (1: plain training; N CPU threads) --parallel ddp|zero3 (default ddp)\n"
    "run:    --out DIR (runs/train) --resume --save-every N (0: at the end) --stop-after N\n"
    "        --val-every N (50) --val-batches N (8) --log-format text|jsonl --sample-tokens N (0)\n";

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

Data resolve_data(Args& args) {
    Data d;
    d.train = args.str("train-data", "");
    d.val = args.str("val-data", "");
    d.tokenizer = args.str("tokenizer", "");
    if (d.train.empty()) {
        if (!d.val.empty()) throw Error("train: --val-data needs --train-data too");
        const std::string root = repo_root();
        const PreparedCorpus c = ensure_bundled_corpus(root, root + "/data/kjv");
        d.train = c.train_pattern;
        d.val = c.val_pattern;
        if (d.tokenizer.empty()) d.tokenizer = c.tokenizer_path;
    }
    return d;
}

ModelConfig resolve_model(Args& args, const Data& data, std::optional<std::string> init) {
    if (init) {
        ModelConfig c = read_checkpoint_config(*init);
        for (const char* f : {"config", "layers", "channels", "heads", "max-seq-len", "vocab"})
            if (args.maybe(f)) throw Error(std::string("train: --") + f + " cannot be combined with --init (the checkpoint decides)");
        return c;
    }
    int vocab = args.integer("vocab", 0);
    if (vocab == 0 && !data.tokenizer.empty()) vocab = Tokenizer::load(data.tokenizer).vocab_size();
    ModelConfig c = model_preset(args.str("config", "tiny"), vocab);
    c.num_layers = args.integer("layers", c.num_layers);
    c.channels = args.integer("channels", c.channels);
    c.num_heads = args.integer("heads", c.num_heads);
    c.max_seq_len = args.integer("max-seq-len", c.max_seq_len);
    c.padded_vocab_size = pad_vocab(c.vocab_size);
    validate(c);
    return c;
}

TrainConfig resolve_train(Args& args, const Data& data) {
    TrainConfig t;
    t.B = args.integer("batch", 4);
    t.T = args.integer("seq-len", 64);
    t.grad_accum = args.integer("grad-accum", 1);
    t.steps = args.integer("steps", 200);
    t.schedule.max_lr = static_cast<float>(args.real("lr", 6e-4));
    t.schedule.warmup_steps = args.integer("warmup", 20);
    t.schedule.total_steps = t.steps;
    t.schedule.final_fraction = static_cast<float>(args.real("final-lr-frac", 0.1));
    const std::string schedule = args.str("schedule", "cosine");
    if (schedule == "cosine") t.schedule.kind = LrSchedule::Kind::cosine;
    else if (schedule == "constant") t.schedule.kind = LrSchedule::Kind::constant;
    else throw Error("train: --schedule must be cosine or constant, got '" + schedule + "'");
    t.adamw.weight_decay = static_cast<float>(args.real("weight-decay", 0.1));
    t.adamw.beta1 = static_cast<float>(args.real("beta1", 0.9));
    t.adamw.beta2 = static_cast<float>(args.real("beta2", 0.95));
    t.adamw.eps = static_cast<float>(args.real("eps", 1e-8));
    t.adamw.grad_clip = static_cast<float>(args.real("grad-clip", 1.0));
    t.seed = static_cast<uint64_t>(args.integer("seed", 1337));
    const std::string order = args.str("data-order", "shuffled");
    if (order == "shuffled") t.order = DataOrder::shuffled;
    else if (order == "sequential") t.order = DataOrder::sequential;
    else throw Error("train: --data-order must be shuffled or sequential, got '" + order + "'");
    t.val_batches = args.integer("val-batches", 8);
    t.train_pattern = data.train;
    t.val_pattern = data.val;
    if (!(t.schedule.max_lr > 0.0f) || t.schedule.warmup_steps < 0 || t.val_batches <= 0 ||
        !(t.adamw.beta1 >= 0.0f && t.adamw.beta1 < 1.0f) || !(t.adamw.beta2 >= 0.0f && t.adamw.beta2 < 1.0f))
        throw Error("train: impossible optimizer settings (need lr > 0, warmup >= 0, 0 <= beta < 1, val batches > 0)");
    return t;
}

// The run's inner loop: one device (Trainer: CPU or GPU), or an island of --devices CPU threads (Island).
struct Loop {
    Model& model;
    std::unique_ptr<Trainer> one;
    std::unique_ptr<Island> many;
    Loop(Model& m, const TrainConfig& t, int devices, Parallel parallel, const std::string& device,
         const std::string& attention)
        : model(m) {
        if (devices == 1) one = std::make_unique<Trainer>(m, t);
        else many = diloco::make_island(m.config(), t, devices, parallel, device, attention);
    }
    StepStats step() { return one ? one->step() : many->step(); }
    float evaluate() { return one ? one->evaluate() : many->evaluate(); }
    bool has_val() const { return one ? one->has_val() : many->has_val(); }
    int steps_done() const { return one ? one->steps_done() : many->steps_done(); }
    void save(const std::string& path) { one ? one->save(path) : many->save(path); }
    void resume(const std::string& path) { one ? one->resume(path) : many->resume(path); }
    void init_weights(uint64_t seed) { one ? model.init_weights(seed) : many->init_weights(seed); }
    void set_params(std::span<const float> p) { one ? model.set_params(p) : many->set_params(p); }
    void sync_model() {  // the island's parameters into `model` (for sampling)
        if (!many) return;
        std::vector<float> p(model.num_params());
        many->get_params(p);
        model.set_params(p);
    }
};

}  // namespace

int cmd_train(const std::vector<std::string>& argv) {
    Args args("train", argv, kTrainUsage);
    if (args.help()) {
        std::fputs(kTrainUsage, stdout);
        return 0;
    }
    const std::optional<std::string> init = args.maybe("init");
    const Data data = resolve_data(args);
    const ModelConfig model_config = resolve_model(args, data, init);
    const TrainConfig train_config = resolve_train(args, data);
    const std::string out = args.str("out", "runs/train");
    const bool resume = args.flag("resume");
    const int save_every = args.integer("save-every", 0);
    const int stop_after = args.integer("stop-after", 0);
    const int val_every = args.integer("val-every", 50);
    const bool jsonl = args.str("log-format", "text") == "jsonl";
    if (!jsonl && args.str("log-format", "text") != "text") throw Error("train: --log-format must be text or jsonl");
    const int sample_tokens = args.integer("sample-tokens", 0);
    const int devices = args.integer("devices", 1);
    const Parallel parallel = parse_parallel(args.str("parallel", "ddp"));
    if (devices < 1) throw Error("train: --devices must be at least 1, got " + std::to_string(devices));
    const std::string device = args.str("device", "cpu");
    const std::string attention = args.str("attention", "fused");
    args.finish();

    // The model for sampling (and the whole run on one device); an island of several devices has its own.
    const std::unique_ptr<Model> model_ptr =
        diloco::make_model(model_config, devices == 1 ? device : "cpu", attention);
    Model& model = *model_ptr;
    Loop trainer(model, train_config, devices, parallel, device, attention);  // validates data against the model before any file is written
    const std::string ckpt = out + "/model.bin";
    if (resume) {
        trainer.resume(ckpt);
    } else if (init) {
        trainer.set_params(read_checkpoint_params(*init, model_config));
    } else {
        trainer.init_weights(train_config.seed);
    }
    std::FILE* log = jsonl ? stderr : stdout;  // jsonl owns stdout; human progress goes to stderr
    const bool live = ::isatty(::fileno(log));
    std::fprintf(log, "model %s, %.2fM params | B=%d T=%d accum=%d | %d steps from step %d | device %s\n",
                 describe(model_config).c_str(), model.num_params() / 1e6, train_config.B, train_config.T,
                 train_config.grad_accum, train_config.steps, trainer.steps_done(),
                 devices == 1 ? model.device_name().c_str() : device.c_str());
    if (trainer.many) {
        const auto mem = trainer.many->memory();
        std::fprintf(log, "island: %d %s devices, %s, global batch %d rows per step\n", devices,
                     diloco::parse_device(device).cuda ? "GPU" : "cpu", parallel_name(parallel),
                     train_config.B * train_config.grad_accum * devices);
        for (std::size_t r = 0; r < mem.size(); ++r)
            std::fprintf(log, "  device %zu: params %.2f MB, grads %.2f MB, optimizer %.2f MB\n", r,
                         mem[r].params_bytes / 1e6, mem[r].grads_bytes / 1e6, mem[r].optimizer_bytes / 1e6);
    }
    std::error_code ec;
    std::filesystem::create_directories(out, ec);
    if (ec) throw Error("cannot create the output folder '" + out + "': " + ec.message());
    auto save = [&] {
        trainer.save(ckpt);
        if (!data.tokenizer.empty() && data.tokenizer != out + "/tokenizer.bin")
            write_file_atomic(out + "/tokenizer.bin", read_file(data.tokenizer));
    };

    double elapsed = 0.0;
    int steps_this_run = 0;
    while (trainer.steps_done() < train_config.steps) {
        const StepStats s = trainer.step();
        elapsed += s.seconds;
        ++steps_this_run;
        std::optional<float> val;
        if (trainer.has_val() && val_every > 0 && (s.step % val_every == 0 || s.step == train_config.steps))
            val = trainer.evaluate();
        const double eta = elapsed / steps_this_run * (train_config.steps - s.step);
        std::fprintf(log, "%sstep %5d/%d | loss %.4f | lr %.2e | norm %.2f | %.0f tok/s | ETA %s%s", live ? "\r" : "",
                     s.step, train_config.steps, s.loss, s.lr, s.grad_norm, s.tokens_per_s, format_eta(eta).c_str(),
                     live ? "   " : "\n");
        if (val) std::fprintf(log, "%sstep %5d | val loss %.4f\n", live ? "\n" : "", s.step, *val);
        std::fflush(log);
        if (jsonl) {
            std::printf("{\"step\":%d,\"loss\":%.6f,\"lr\":%.6e,\"grad_norm\":%.6f,\"tokens_per_s\":%.1f", s.step, s.loss,
                        s.lr, s.grad_norm, s.tokens_per_s);
            if (val) std::printf(",\"val_loss\":%.6f", *val);
            std::printf("}\n");
            std::fflush(stdout);
        }
        if (save_every > 0 && s.step % save_every == 0) save();
        if (stop_after > 0 && steps_this_run >= stop_after) break;
    }
    if (live) std::fprintf(log, "\n");
    save();
    std::fprintf(log, "saved %s (+ .state) after step %d\n", ckpt.c_str(), trainer.steps_done());

    if (sample_tokens > 0 && !data.tokenizer.empty()) {
        trainer.sync_model();
        const Tokenizer tok = Tokenizer::load(data.tokenizer);
        SamplingConfig sc;
        sc.max_new_tokens = sample_tokens;
        sc.stop_token = tok.eot_token();
        std::fprintf(log, "sample:\n");
        generate(model, {tok.eot_token()}, sc, [&](int t) {
            if (t != tok.eot_token()) std::fputs(tok.decode_token(t).c_str(), log);
            std::fflush(log);
        });
        std::fprintf(log, "\n");
    }
    return 0;
}

}  // namespace arch::cli
