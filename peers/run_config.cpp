// peers/run_config.cpp: run.toml parsing (cpptoml) and validation.
#include "peers/run_config.h"

#include <cpptoml.h>

#include <sstream>

#include "core/error.h"
#include "core/file_io.h"

namespace arch {

namespace {

template <class T>
void read(const cpptoml::table& t, const std::string& key, T& out, const std::string& source) {
    if (!t.contains_qualified(key)) return;
    auto v = t.get_qualified_as<T>(key);
    if (!v) throw Error(source + ": key '" + key + "' has the wrong type");
    out = *v;
}

void read_double(const cpptoml::table& t, const std::string& key, double& out, const std::string& source) {
    if (!t.contains_qualified(key)) return;
    if (auto d = t.get_qualified_as<double>(key)) out = *d;
    else if (auto i = t.get_qualified_as<int64_t>(key)) out = static_cast<double>(*i);
    else throw Error(source + ": key '" + key + "' must be a number");
}

void read_float(const cpptoml::table& t, const std::string& key, float& out, const std::string& source) {
    double d = out;
    read_double(t, key, d, source);
    out = static_cast<float>(d);
}

void read_int(const cpptoml::table& t, const std::string& key, int& out, const std::string& source) {
    int64_t v = out;
    read(t, key, v, source);
    out = static_cast<int>(v);
}

void check(bool ok, const std::string& source, const std::string& what) {
    if (!ok) throw Error(source + ": " + what);
}

}  // namespace

RunConfig parse_run_config(const std::string& text, const std::string& source) {
    std::shared_ptr<cpptoml::table> t;
    try {
        std::istringstream in(text);
        cpptoml::parser p(in);
        t = p.parse();
    } catch (const cpptoml::parse_exception& e) {
        throw Error(source + ": not valid TOML: " + e.what());
    }
    static const char* known[] = {"run", "model", "data", "inner", "outer", "wire", "deadlines"};
    for (const auto& [key, value] : *t) {
        bool ok = false;
        for (const char* k : known) ok = ok || key == k;
        if (!ok) throw Error(source + ": unknown section or key '" + key + "'");
    }
    RunConfig c;
    read(*t, "run.name", c.name, source);
    read_int(*t, "run.rounds", c.rounds, source);
    read_int(*t, "run.islands", c.islands, source);
    read(*t, "run.mode", c.mode, source);
    read(*t, "run.bind", c.bind, source);
    read(*t, "run.checkpoint_dir", c.checkpoint_dir, source);
    int64_t seed = static_cast<int64_t>(c.seed);
    read(*t, "run.seed", seed, source);
    c.seed = static_cast<uint64_t>(seed);
    read(*t, "model.config", c.preset, source);
    read_int(*t, "model.layers", c.layers, source);
    read_int(*t, "model.channels", c.channels, source);
    read_int(*t, "model.heads", c.heads, source);
    read_int(*t, "model.max_seq_len", c.max_seq_len, source);
    read_int(*t, "model.vocab", c.vocab, source);
    read(*t, "data.train", c.train_data, source);
    read(*t, "data.val", c.val_data, source);
    read_int(*t, "inner.steps_per_round", c.steps_per_round, source);
    read_int(*t, "inner.batch", c.batch, source);
    read_int(*t, "inner.seq_len", c.seq_len, source);
    read_int(*t, "inner.grad_accum", c.grad_accum, source);
    read_float(*t, "inner.lr", c.lr, source);
    read_float(*t, "inner.weight_decay", c.weight_decay, source);
    read_float(*t, "inner.grad_clip", c.grad_clip, source);
    read_int(*t, "inner.warmup", c.warmup, source);
    read_int(*t, "inner.val_batches", c.val_batches, source);
    read(*t, "outer.optimizer", c.outer.optimizer, source);
    read_float(*t, "outer.lr", c.outer.lr, source);
    read_float(*t, "outer.momentum", c.outer.momentum, source);
    read(*t, "outer.aggregator", c.outer.aggregator, source);
    read(*t, "wire.codec", c.codec, source);
    read(*t, "wire.down_codec", c.outer.down_codec, source);
    read_double(*t, "deadlines.join_timeout_s", c.join_timeout_s, source);
    read_double(*t, "deadlines.round_timeout_s", c.round_timeout_s, source);
    read_double(*t, "deadlines.heartbeat_timeout_s", c.heartbeat_timeout_s, source);
    read(*t, "deadlines.straggler", c.straggler, source);

    check(c.rounds > 0, source, "run.rounds must be positive");
    check(c.islands > 0 && c.islands <= 1024, source, "run.islands must be in [1, 1024]");
    check(c.mode == "sync" || c.mode == "async", source, "run.mode must be sync or async, got '" + c.mode + "'");
    check(c.steps_per_round > 0, source, "inner.steps_per_round (H) must be positive");
    check(c.batch > 0 && c.seq_len > 0 && c.grad_accum > 0, source, "inner.batch, seq_len and grad_accum must be positive");
    check(c.lr > 0, source, "inner.lr must be positive");
    check(c.outer.lr > 0 && c.outer.momentum >= 0 && c.outer.momentum < 1, source,
          "outer.lr must be positive and 0 <= outer.momentum < 1");
    check(c.straggler == "drop" || c.straggler == "fold", source, "deadlines.straggler must be drop or fold");
    check(c.round_timeout_s > 0 && c.heartbeat_timeout_s > 0 && c.join_timeout_s > 0, source,
          "deadlines must be positive");
    if (c.mode == "async") {
        c.outer.optimizer = "delayed-nesterov";
        c.outer.period = static_cast<uint32_t>(c.islands);
    }
    // Codec and aggregator specs are parsed here so a typo fails at start, not at round 1.
    diloco::GlobalModel probe(std::vector<float>(1), c.outer);
    compression::make_codec(c.codec);
    c.toml = text;
    return c;
}

RunConfig load_run_config(const std::string& path) {
    const std::vector<uint8_t> bytes = read_file(path);
    return parse_run_config(std::string(bytes.begin(), bytes.end()), path);
}

ModelConfig run_model_config(const RunConfig& c, int vocab_from_tokenizer) {
    ModelConfig m = model_preset(c.preset, c.vocab > 0 ? c.vocab : vocab_from_tokenizer);
    if (c.layers > 0) m.num_layers = c.layers;
    if (c.channels > 0) m.channels = c.channels;
    if (c.heads > 0) m.num_heads = c.heads;
    if (c.max_seq_len > 0) m.max_seq_len = c.max_seq_len;
    m.padded_vocab_size = pad_vocab(m.vocab_size);
    validate(m);
    return m;
}

TrainConfig run_train_config(const RunConfig& c, const std::string& train_pattern, const std::string& val_pattern,
                             uint64_t island_seed) {
    TrainConfig t;
    t.B = c.batch;
    t.T = c.seq_len;
    t.grad_accum = c.grad_accum;
    t.steps = c.rounds * c.steps_per_round;
    t.schedule.max_lr = c.lr;
    t.schedule.warmup_steps = c.warmup;
    t.schedule.total_steps = t.steps;
    t.adamw.weight_decay = c.weight_decay;
    t.adamw.grad_clip = c.grad_clip;
    t.seed = island_seed;
    t.train_pattern = train_pattern;
    t.val_pattern = val_pattern;
    t.val_batches = c.val_batches;
    return t;
}

}  // namespace arch
