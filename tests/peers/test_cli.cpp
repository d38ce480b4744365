// tests/peers/test_cli.cpp: the archipelago CLI as a user runs it (the real binary in a subprocess):
// bad input gives "error: ..." and a non-zero exit without touching existing files; --log-format jsonl
// writes one JSON object per step; train -> sample -> export works end to end on tiny shards.
#include <catch2/catch.hpp>

#include <filesystem>

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "core/rng.h"
#include "core/token_shard.h"
#include "tests/core/temp_dir.h"

using namespace arch;

namespace {

struct Result {
    int exit_code;
    std::string out;  // stdout and stderr together
};

Result run(const std::string& args) {
    const char* bin = std::getenv("ARCH_BIN_DIR");
    const std::string command = std::string(bin ? bin : "build/bin") + "/archipelago " + args + " 2>&1";
    std::FILE* pipe = ::popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    std::string out;
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
    const int status = ::pclose(pipe);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

struct Shards {
    TempDir dir;
    Shards() {
        Rng rng(1);
        std::vector<uint16_t> tokens(4000);
        for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<uint16_t>((i * 5 + rng.below(3)) % 64);
        write_token_shard(dir.file("train.bin"), tokens);
        write_token_shard(dir.file("val.bin"), std::vector<uint16_t>(tokens.begin(), tokens.begin() + 600));
        write_token_shard(dir.file("tiny.bin"), std::vector<uint16_t>(tokens.begin(), tokens.begin() + 20));
    }
    std::string model_flags() const {
        return "--vocab 64 --layers 1 --channels 32 --heads 2 --max-seq-len 32 --batch 2 --seq-len 16 --train-data " +
               dir.file("train.bin") + " --val-data " + dir.file("val.bin");
    }
};

void expect_error(const Result& r, const std::string& fragment) {
    INFO(r.out);
    CHECK(r.exit_code != 0);
    CHECK(r.out.find("error: ") != std::string::npos);
    CHECK(r.out.find(fragment) != std::string::npos);
}

}  // namespace

TEST_CASE("train writes a checkpoint, JSONL progress, and resumes; sample and export use the result") {
    Shards s;
    const std::string out = s.dir.file("run");
    Result r = run("train " + s.model_flags() + " --steps 6 --val-every 3 --log-format jsonl --out " + out);
    INFO(r.out);
    REQUIRE(r.exit_code == 0);
    std::istringstream lines(r.out);
    std::string line;
    int json_lines = 0, val_lines = 0;
    while (std::getline(lines, line)) {
        if (line.rfind("{\"step\":", 0) != 0) continue;
        ++json_lines;
        CHECK(line.find("\"loss\":") != std::string::npos);
        CHECK(line.find("\"lr\":") != std::string::npos);
        CHECK(line.find("\"tokens_per_s\":") != std::string::npos);
        if (line.find("\"val_loss\":") != std::string::npos) ++val_lines;
    }
    CHECK(json_lines == 6);
    CHECK(val_lines == 2);

    r = run("train " + s.model_flags() + " --steps 8 --resume --out " + out);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("from step 6") != std::string::npos);
    CHECK(r.out.find("step     8/8") != std::string::npos);

    r = run("export --safetensors --checkpoint " + out + "/model.bin --out " + s.dir.file("hf"));
    CHECK(r.exit_code == 0);
    CHECK(read_file_bytes(s.dir.file("hf/config.json")).find("\"n_layer\": 1") != std::string::npos);
}

TEST_CASE("bad input: a clear error, a non-zero exit, nothing overwritten") {
    Shards s;
    const std::string out = s.dir.file("run");
    REQUIRE(run("train " + s.model_flags() + " --steps 2 --out " + out).exit_code == 0);
    const std::string ckpt = read_file_bytes(out + "/model.bin");
    const std::string state = read_file_bytes(out + "/model.bin.state");
    const std::string flags = s.model_flags() + " --steps 4 --out " + out;

    SECTION("truncated checkpoint as --init") {
        write_file(s.dir.file("trunc.bin"), ckpt.substr(0, ckpt.size() / 2));
        expect_error(run("train --init " + s.dir.file("trunc.bin") + " --batch 2 --seq-len 16 --train-data " +
                         s.dir.file("train.bin") + " --out " + out),
                     "is truncated");
    }
    SECTION("corrupt run state on --resume") {
        std::string bad = state;
        bad[bad.size() / 3] ^= 0x10;
        write_file(out + "/model.bin.state", bad);
        expect_error(run("train " + flags + " --resume"), "checksum mismatch");
        CHECK(read_file_bytes(out + "/model.bin.state") == bad);  // left as it was, for the user to inspect
    }
    SECTION("shard with a wrong magic") {
        std::string shard = read_file_bytes(s.dir.file("train.bin"));
        shard[0] ^= 0x7f;
        write_file(s.dir.file("bad.bin"), shard);
        expect_error(run("train " + s.model_flags() + " --train-data " + s.dir.file("bad.bin") + " --out " + out),
                     "magic");
    }
    SECTION("shard with a wrong size") {
        const std::string shard = read_file_bytes(s.dir.file("train.bin"));
        write_file(s.dir.file("cut.bin"), shard.substr(0, shard.size() - 7));
        expect_error(run("train " + s.model_flags() + " --train-data " + s.dir.file("cut.bin") + " --out " + out),
                     s.dir.file("cut.bin"));
    }
    SECTION("C not divisible by NH") {
        expect_error(run("train " + flags + " --heads 3"), "not divisible by heads");
    }
    SECTION("T above max T") {
        expect_error(run("train " + flags + " --seq-len 64"), "exceeds the model's max T");
    }
    SECTION("B*T larger than the shard") {
        expect_error(run("train " + s.model_flags() + " --train-data " + s.dir.file("tiny.bin") + " --out " + out),
                     "tiny.bin");
    }
    SECTION("missing files") {
        expect_error(run("train " + s.model_flags() + " --train-data " + s.dir.file("nope_*.bin") + " --out " + out),
                     "nope_");
        expect_error(run("sample --checkpoint " + s.dir.file("nope.bin")), "nope.bin");
        expect_error(run("prepare --input " + s.dir.file("nope.txt") + " --out " + s.dir.file("p")), "nope.txt");
    }
    SECTION("unknown options and bad values") {
        expect_error(run("train " + flags + " --learning-rate 3"), "unknown option --learning-rate");
        expect_error(run("train " + flags + " --lr abc"), "--lr: Value abc not in range");
        expect_error(run("train " + flags + " --schedule linear"), "--schedule: linear not in {cosine,constant}");
        expect_error(run("export --checkpoint " + out + "/model.bin --out " + s.dir.file("x")), "--safetensors");
    }
    CHECK(read_file_bytes(out + "/model.bin") == ckpt);
}

TEST_CASE("info lists the backends, devices and shards' widths; a device that cannot be used is refused clearly") {
    const Result info = run("info");
    INFO(info.out);
    CHECK(info.exit_code == 0);
    CHECK(info.out.find("backends:") != std::string::npos);
    CHECK(info.out.find("cpu    fp32") != std::string::npos);
    CHECK(info.out.find("cuda") != std::string::npos);  // built, or said to be not built

    Shards s;
    // --data: shards with their count, tokens and width.
    std::filesystem::create_directories(s.dir.file("wide"));
    arch::write_token_shard(s.dir.file("wide/train_000000.bin"), std::vector<uint32_t>{70000, 1, 2}, 4);
    arch::write_token_shard(s.dir.file("wide/train_000001.bin"), std::vector<uint32_t>{3, 4}, 4);
    const Result data = run("info --data " + s.dir.file("wide") + " --data '" + s.dir.file("tiny.bin") + "'");
    INFO(data.out);
    CHECK(data.out.find(s.dir.file("wide") + ": 2 shard(s), 5 tokens, uint32") != std::string::npos);
    CHECK(data.out.find("tiny.bin: 1 shard(s)") != std::string::npos);
    CHECK(data.out.find("tokens, uint16") != std::string::npos);

    const std::string flags = s.model_flags() + " --steps 1 --out " + s.dir.file("run");
    expect_error(run("train " + flags + " --device gpu"), "is not one of cpu, cuda, cuda:N");
    expect_error(run("train " + flags + " --device cuda:x"), "the GPU index must be a number");
    const bool cuda_built = info.out.find("not built") == std::string::npos;
    expect_error(run("train " + flags + " --device cuda:1000 --devices 2 --parallel zero3"),
                 cuda_built ? "does not exist" : "built without the CUDA backend");
    // Offload moves GPU state to the host; a CPU device refuses it before any file is written.
    expect_error(run("train " + flags + " --offload optimizer"), "built for --device cuda");
    expect_error(run("train " + flags + " --devices 2 --offload optimizer"), "built for --device cuda");
    expect_error(run("train " + flags + " --recompute most"), "--recompute");
    // Without a usable GPU (or without the backend), cuda is refused with the reason, before any file is written.
    if (info.out.find("no CUDA device") != std::string::npos || info.out.find("not built") != std::string::npos) {
        expect_error(run("train " + flags + " --device cuda"), "cuda");
        CHECK_FALSE(std::filesystem::exists(s.dir.file("run") + "/model.bin"));
    }
}

TEST_CASE("the command line: --version, generated --help with defaults, a mistyped flag or command") {
    const Result version = run("--version");
    CHECK(version.exit_code == 0);
    CHECK(version.out.rfind("archipelago ", 0) == 0);
    CHECK(version.out.find('.') != std::string::npos);

    const Result help = run("train --help");
    INFO(help.out);
    CHECK(help.exit_code == 0);
    for (const char* line : {"--steps", "200", "--lr", "0.0006", "--log-level", "--log-file", "--schedule", "cosine"})
        CHECK(help.out.find(line) != std::string::npos);

    const Result typo = run("train --stpes 3");
    INFO(typo.out);
    CHECK(typo.exit_code != 0);
    CHECK(typo.out.find("error: archipelago train: unknown option --stpes (did you mean '--steps'?)") != std::string::npos);
    const Result command = run("trian --steps 3");
    CHECK(command.exit_code != 0);
    CHECK(command.out.find("error: unknown command 'trian' (did you mean 'train'?)") != std::string::npos);
    const Result bash = run("completion");
    CHECK(bash.exit_code == 0);
    CHECK(bash.out.find("complete -o filenames -F _archipelago archipelago") != std::string::npos);
    CHECK(bash.out.find("--log-format") != std::string::npos);
}

TEST_CASE("host --config refuses a misspelled key, an unknown section and a wrong type with FILE:LINE") {
    TempDir dir;
    const std::string path = dir.file("run.toml");
    auto host = [&](const std::string& toml) {
        write_file(path, toml);
        return run("host --config " + path);
    };
    expect_error(host("[run]\nrounds = 2\n\n[inner]\nstep_per_round = 5\n"),
                 path + ":5: unknown key 'step_per_round' in [inner] (did you mean 'steps_per_round'?)");
    expect_error(host("[run]\nrounds = 2\n[inerr]\nbatch = 2\n"), path + ":3: unknown section [inerr] (did you mean [inner]?)");
    expect_error(host("[inner]\nbatch = \"eight\"\n"), path + ":2: inner.batch must be an integer, found a string");
    expect_error(host("[inner]\nbatch = -8\n"), path + ":2: inner.batch must be in [1, 65536], found -8");
    // Refused before anything was made: the folder holds only the config.
    CHECK(std::distance(std::filesystem::directory_iterator(dir.path), std::filesystem::directory_iterator()) == 1);
}

TEST_CASE("log flags: levels, a log file without the progress line, JSON lines for machines") {
    Shards s;
    const std::string log = s.dir.file("train.log");
    Result r = run("train " + s.model_flags() + " --steps 4 --val-every 2 --log-file " + log + " --out " + s.dir.file("run"));
    INFO(r.out);
    REQUIRE(r.exit_code == 0);
    const std::string text = read_file_bytes(log);
    INFO(text);
    CHECK(text.find("info  [train] model ") != std::string::npos);   // level and component in each line
    CHECK(text.find("[train] step     4 | val loss") != std::string::npos);
    CHECK(text.find("step     1/4") == std::string::npos);            // the progress line stays on the terminal
    CHECK(r.out.find("step     1/4") != std::string::npos);

    r = run("train " + s.model_flags() + " --steps 2 --log-level warn --out " + s.dir.file("run2"));
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("[train] model") == std::string::npos);  // info is below warn

    const std::string json_log = s.dir.file("train.jsonl");
    r = run("train " + s.model_flags() + " --steps 2 --val-every 1 --log-format jsonl --log-file " + json_log + " --out " +
            s.dir.file("run3"));
    REQUIRE(r.exit_code == 0);
    write_file(s.dir.file("check.py"),
               "import json, sys\n"
               "rows = [json.loads(l) for l in open(sys.argv[1])]\n"
               "assert rows, 'no log lines'\n"
               "for r in rows: assert list(r) == ['time', 'level', 'component', 'message'], r\n"
               "assert any(r['component'] == 'train' and 'val loss' in r['message'] for r in rows)\n");
    CHECK(std::system(("python3 " + s.dir.file("check.py") + " " + json_log).c_str()) == 0);
}

TEST_CASE("plan prints every mode with its categories, as a table or JSON, and refuses a bad model clearly") {
    const Result table = run("plan --layers 32 --channels 4096 --heads 32 --ffn 11008 --vocab 32000 --seq-len 2048 "
                             "--devices 4 --device-memory 24GiB");
    INFO(table.out);
    CHECK(table.exit_code == 0);
    for (const char* s : {"ddp ", "zero3 + recompute block + offload optimizer", "activations", "6738.42M params", "diloco"})
        CHECK(table.out.find(s) != std::string::npos);
    const Result home = run("plan --layers 32 --channels 4096 --heads 32 --kv-heads 8 --ffn 14336 --vocab 128256 "
                            "--seq-len 2048 --devices 4 --down-codec int8 --host-memory 256GiB");
    INFO(home.out);
    CHECK(home.exit_code == 0);
    for (const char* s : {"state on disk", "--state-on-disk", "this machine's RAM (--host-memory): 256.00 GiB", "fits",
                          "DES-LOC's moments in the rounds that carry them"})  // --desloc 4, run.toml's default
        CHECK(home.out.find(s) != std::string::npos);
    CHECK(run("plan --config tiny --desloc 0").out.find("DES-LOC") == std::string::npos);
    expect_error(run("plan --config tiny --down-codec int9"), "int9");
    const Result json = run("plan --config tiny --device cpu --devices 2 --batch 4 --json");
    INFO(json.out);
    CHECK(json.exit_code == 0);
    CHECK(json.out.find("\"max_micro_batch\"") != std::string::npos);
    CHECK(json.out.find("offload optimizer") == std::string::npos);  // no offload row for CPU devices
    expect_error(run("plan --config tiny --device-memory 24parsecs"), "24parsecs");
    expect_error(run("plan --channels 100 --layers 2 --heads 3"), "");
    expect_error(run("plan --config tiny --seq-len 4096"), "4096");
    expect_error(run("plan"), "--config");
}
