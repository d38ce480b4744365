// peers/host_checkpoint.cpp: the host's checkpoint (docs/protocol.md, "Failures"): host.state holds the
// round, the key -> island map and the global state (θ and the outer optimizer's) with an XXH3-128
// checksum, written atomically beside model.bin (core/checkpoint.h: llm.c's format for GPT-2,
// safetensors for the Llama family); a restarted host resumes from it. Written in the background from a
// snapshot (peers/checkpoint_writer.h) at run.checkpoint_every / checkpoint_minutes, after every change
// of the island map, and at the run's end or stop.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>

#include "core/checkpoint.h"
#include "core/error.h"
#include "core/file_io.h"
#include "peers/host.h"

namespace arch {

namespace {
// Version 2 checks the file with XXH3-128 (what the writer spent most of its time on was BLAKE2b over
// 2 P); a version 1 file, checked with BLAKE2b-256, is still read.
constexpr char kStateMagic[8] = {'A', 'R', 'C', 'H', 'H', 'S', 'T', '2'};
constexpr char kStateMagicV1[8] = {'A', 'R', 'C', 'H', 'H', 'S', 'T', '1'};

std::string checksum(std::span<const std::span<const std::byte>> parts, bool v1) {
    return v1 ? diloco::hash_bytes(parts) : diloco::checksum(parts);
}

// host.state (magic, round, the island map, the state, its checksum) and model.bin, each atomically: a
// kill in the middle of either leaves the previous file whole.
void write_checkpoint_files(const std::string& dir, const ModelConfig& model, const CheckpointSnapshot& s) {
    // The header, the state straight from the snapshot and the checksum of both: no copy of the state.
    protocol::Writer w;
    for (char ch : kStateMagic) w.u8(static_cast<uint8_t>(ch));
    w.u64(s.round);
    w.u32(static_cast<uint32_t>(s.islands.size()));
    for (const auto& [key, island] : s.islands) {
        w.str(key);
        w.u32(island);
    }
    // The state is GlobalModel::save_state's: θ with its count, the start of the replica state, then
    // the outer state.
    uint64_t n = 0;
    std::memcpy(&n, s.replica_state().data(), 8);
    const std::span<const std::byte> theta = s.replica_state().first(8 + n * sizeof(float));
    w.u64(theta.size() + s.outer.size());  // what protocol::Writer::bytes puts before a blob
    const std::vector<std::byte> head = w.take();
    const std::span<const std::byte> hashed[] = {head, theta, s.outer};
    protocol::Writer tail;
    tail.str(checksum(hashed, false));
    const std::vector<std::byte> t = tail.take();
    auto bytes = [](std::span<const std::byte> b) { return std::span(reinterpret_cast<const uint8_t*>(b.data()), b.size()); };
    const std::span<const uint8_t> parts[] = {bytes(head), bytes(theta), bytes(s.outer), bytes(t)};
    write_file_atomic(dir + "/host.state", parts);
    write_checkpoint(dir + "/model.bin", model,
                     std::span(reinterpret_cast<const float*>(theta.data() + 8), static_cast<std::size_t>(n)));
}
}  // namespace

void Host::open_checkpoints() {
    const RunConfig& c = options_.config;
    std::filesystem::create_directories(c.checkpoint_dir);
    checkpoints_ = std::make_unique<CheckpointWriter>(
        [dir = c.checkpoint_dir, model = model_config_](const CheckpointSnapshot& s) { write_checkpoint_files(dir, model, s); });
    last_checkpoint_ = clock_.now();
}

void Host::fill_snapshot(CheckpointSnapshot& s) {
    s.round = round_;
    s.islands = island_of_;
    s.blob = state_of_theta();
    s.state_offset = state_offset_;
    s.outer.resize(global_->outer_state_bytes());
    global_->save_outer_state(s.outer);
}

void Host::want_checkpoint(bool always) {
    const RunConfig& c = options_.config;
    const bool minutes = c.checkpoint_minutes > 0 &&
                         clock_.seconds_since(last_checkpoint_) >= 60 * c.checkpoint_minutes;
    if (always || minutes || updates_since_checkpoint_ >= static_cast<uint64_t>(c.checkpoint_every)) checkpoint_wanted_ = true;
}

void Host::pump_checkpoint() {
    if (std::optional<CheckpointWriter::Result> r = checkpoints_->take_result()) log_checkpoint(*r);
    if (!checkpoint_wanted_ || checkpoints_->busy()) return;
    fill_snapshot(checkpoints_->snapshot());
    checkpoints_->start();
    checkpoint_wanted_ = false;
    updates_since_checkpoint_ = 0;
    last_checkpoint_ = clock_.now();
}

void Host::final_checkpoint() {
    checkpoints_->wait();
    if (std::optional<CheckpointWriter::Result> r = checkpoints_->take_result()) log_checkpoint(*r);
    if (!checkpoint_wanted_ && updates_since_checkpoint_ == 0) return;  // the last one written holds it all
    fill_snapshot(checkpoints_->snapshot());
    checkpoint_wanted_ = false;
    updates_since_checkpoint_ = 0;
    log_checkpoint(checkpoints_->write_now());
}

void Host::log_checkpoint(const CheckpointWriter::Result& r) const {
    char took[64];
    std::snprintf(took, sizeof(took), "%.2f s", r.seconds);
    if (r.error.empty())
        log("checkpoint at round " + std::to_string(r.round) + " written in " + took);
    else  // a full disk or a read-only folder is no reason to stop serving
        log("could not write the checkpoint at round " + std::to_string(r.round) +
            " (the run goes on; the next one tries again): " + r.error);
}

bool Host::load_checkpoint() {
    const std::string path = options_.config.checkpoint_dir + "/host.state";
    if (!file_exists(path)) return false;
    const std::vector<uint8_t> raw = read_file(path);
    const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(raw.data()), raw.size());
    protocol::Reader r(bytes, path.c_str());
    char magic[8];
    for (char& ch : magic) ch = static_cast<char>(r.u8());
    const bool v1 = std::memcmp(magic, kStateMagicV1, 8) == 0;
    if (!v1 && std::memcmp(magic, kStateMagic, 8) != 0) throw Error("'" + path + "' is not a host checkpoint");
    const uint64_t round = r.u64();
    const uint32_t n = r.u32();
    if (n > 1024) throw Error("'" + path + "' is corrupt: " + std::to_string(n) + " islands");
    std::map<std::string, uint32_t> islands;
    for (uint32_t i = 0; i < n; ++i) {
        std::string key = r.str(64);
        islands[key] = r.u32();
    }
    const std::vector<std::byte> state = r.bytes(bytes.size());
    const std::string hash = r.str(64);
    r.finish();
    const std::span<const std::byte> hashed[] = {bytes.first(bytes.size() - (4 + hash.size()))};
    if (checksum(hashed, v1) != hash) throw Error("host checkpoint '" + path + "' is corrupt: checksum mismatch");
    global_->load_state(state);
    round_ = round;
    island_of_ = std::move(islands);
    return true;
}

}  // namespace arch
