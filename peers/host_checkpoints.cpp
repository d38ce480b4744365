// peers/host_checkpoints.cpp: HostCheckpoints.
#include "peers/host_checkpoints.h"

#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>

#include "core/checkpoint.h"
#include "core/error.h"
#include "core/file_io.h"
#include "peers/protocol.h"

namespace arch {

namespace {
// Version 2 checks the file with XXH3-128 (what the writer spent most of its time on was BLAKE2b over
// 2 P); a version 1 file, checked with BLAKE2b-256, is still read.
constexpr char kStateMagic[8] = {'A', 'R', 'C', 'H', 'H', 'S', 'T', '3'};
constexpr char kStateMagicV2[8] = {'A', 'R', 'C', 'H', 'H', 'S', 'T', '2'};  // no screen history
constexpr char kStateMagicV1[8] = {'A', 'R', 'C', 'H', 'H', 'S', 'T', '1'};  // and BLAKE2b as the checksum
constexpr uint32_t kMaxScreenHistory = 4096;

std::string checksum(std::span<const std::span<const std::byte>> parts, bool v1) {
    return v1 ? diloco::hash_bytes(parts) : diloco::checksum(parts);
}

// θ's count, as the state (GlobalModel::save_state) has it before θ's floats.
std::array<std::byte, 8> theta_count(const FloatStore& theta) {
    std::array<std::byte, 8> n;
    store_le(n.data(), static_cast<uint64_t>(theta.size()));
    return n;
}

// The writer's part, on its own thread: θ into host.state where the host left room for it, then
// model.bin. Each file is atomic: a kill in the middle of either leaves the previous one whole.
void write_checkpoint_files(const std::string& dir, const ModelConfig& model, const CheckpointSnapshot& s) {
    if (!s.state_file) throw Error("the checkpoint snapshot has no host.state under way");
    const FloatStore& theta = *s.theta;
    s.state_file->write_at(s.theta_offset, theta_count(theta));
    s.state_file->write_at(s.theta_offset + 8, std::as_bytes(theta.values()));
    s.state_file->commit();
    write_checkpoint(dir + "/model.bin", model, theta.values());
}
}  // namespace

HostCheckpoints::HostCheckpoints(const RunConfig& config, const ModelConfig& model, const Clock& clock, SourceFn source,
                                 std::function<void(const std::string&)> log, std::function<void(const RunEvent&)> event)
    : config_(config), clock_(clock), source_(std::move(source)), log_(std::move(log)), event_(std::move(event)) {
    std::filesystem::create_directories(config.checkpoint_dir);
    writer_ = std::make_unique<CheckpointWriter>(
        [dir = config.checkpoint_dir, model](const CheckpointSnapshot& s) { write_checkpoint_files(dir, model, s); });
    last_ = clock_.now();
}

// host.state is the magic, the round, the island map, the screen's norm history (a u32 count, then
// f64s; version 3), the state (GlobalModel::save_state's layout: θ with its count, then the outer
// state) and an XXH3-128 checksum of all that. The host writes all
// but θ: the header now, the outer state staged from where it lies (the next outer step changes it:
// advance_staging), and the checksum after it, θ checksummed from the snapshot of θ, which never
// changes (copy on write); the writer puts θ in later.
void HostCheckpoints::fill_snapshot(CheckpointSnapshot& s, const Source& source) {
    s.round = source.round;
    s.islands = source.islands;
    s.theta = source.theta;
    const std::array<std::byte, 8> count = theta_count(*s.theta);
    const std::span<const std::byte> theta = std::as_bytes(s.theta->values());
    ByteWriter w;
    w.raw(std::as_bytes(std::span(kStateMagic)));
    w.u64(s.round);
    w.u32(static_cast<uint32_t>(s.islands.size()));
    for (const auto& [key, island] : s.islands) {
        w.str(key);
        w.u32(island);
    }
    const std::size_t norms = std::min<std::size_t>(source.screen_history.size(), kMaxScreenHistory);
    w.u32(static_cast<uint32_t>(norms));
    for (std::size_t i = source.screen_history.size() - norms; i < source.screen_history.size(); ++i) w.f64(source.screen_history[i]);
    w.u64(count.size() + theta.size() + source.global->outer_state_bytes());  // what ByteWriter::bytes puts before a blob
    const std::vector<std::byte> head = w.take();
    s.state_file = std::make_unique<AtomicFile>(config_.checkpoint_dir + "/host.state");
    s.state_file->write_at(0, head);
    s.theta_offset = head.size();
    staging_ = std::make_unique<Staging>();
    staging_->sum.add(head);
    staging_->sum.add(count);
    staging_->sum.add(theta);
    staging_->write = std::make_unique<StagedWrite>(*s.state_file, head.size() + count.size() + theta.size(), staging_->sum);
    source.global->write_outer_state([&](std::span<const std::byte> part) { staging_->write->add(part); });
}

bool HostCheckpoints::advance_staging(std::size_t budget) {
    CheckpointSnapshot& s = writer_->snapshot();
    try {
        if (!staging_->write->advance(budget)) return false;
        ByteWriter tail;
        tail.str(staging_->sum.hex());
        s.state_file->write_at(staging_->write->end(), tail.take());
    } catch (const Error& e) {
        drop_snapshot(s.round, e.what());
        return false;
    }
    staging_.reset();
    return true;
}

void HostCheckpoints::drop_snapshot(uint64_t round, const std::string& why) {
    CheckpointSnapshot& s = writer_->snapshot();
    staging_.reset();
    s.state_file.reset();
    s.theta.reset();
    log_result({round, 0, why});
}

void HostCheckpoints::before_step() {
    if (staging_ && advance_staging(SIZE_MAX)) writer_->start();
}

void HostCheckpoints::updated() {
    ++updates_since_;
    const bool minutes = config_.checkpoint_minutes > 0 && clock_.seconds_since(last_) >= 60 * config_.checkpoint_minutes;
    if (minutes || updates_since_ >= static_cast<uint64_t>(config_.checkpoint_every)) wanted_ = true;
}

void HostCheckpoints::pump() {
    if (std::optional<CheckpointWriter::Result> r = writer_->take_result()) log_result(*r);
    if (!staging_) {  // none under way: a new one when it is due and the writer is free
        if (!wanted_ || writer_->busy() || !take_snapshot()) return;
        wanted_ = false;
        updates_since_ = 0;
        last_ = clock_.now();
    }
    if (advance_staging(kStageBytes)) writer_->start();
}

void HostCheckpoints::finish() {
    before_step();
    writer_->wait();
    if (std::optional<CheckpointWriter::Result> r = writer_->take_result()) log_result(*r);
    if (!wanted_ && updates_since_ == 0) return;  // the last one written holds it all
    if (!take_snapshot()) return;
    wanted_ = false;
    updates_since_ = 0;
    if (advance_staging(SIZE_MAX)) log_result(writer_->write_now());
}

bool HostCheckpoints::take_snapshot() {
    const Source from = source_();
    try {
        fill_snapshot(writer_->snapshot(), from);
        return true;
    } catch (const Error& e) {  // a full disk or a read-only folder is no reason to stop serving
        drop_snapshot(from.round, e.what());
        return false;
    }
}

void HostCheckpoints::log_result(const CheckpointWriter::Result& r) const {
    char took[64];
    std::snprintf(took, sizeof(took), "%.2f s", r.seconds);
    if (r.error.empty())
        log_("checkpoint at round " + std::to_string(r.round) + " written in " + took);
    else  // a full disk or a read-only folder is no reason to stop serving
        log_("could not write the checkpoint at round " + std::to_string(r.round) +
             " (the run goes on; the next one tries again): " + r.error);
    event_({.kind = r.error.empty() ? "checkpoint_written" : "checkpoint_failed", .round = static_cast<int64_t>(r.round),
            .detail = r.error});
}

std::optional<HostCheckpoints::Loaded> HostCheckpoints::load(diloco::GlobalModel& global) const {
    const std::string path = config_.checkpoint_dir + "/host.state";
    if (!file_exists(path)) return std::nullopt;
    const std::vector<std::byte> bytes = read_file(path);
    ByteReader r(bytes, path.c_str());
    const std::span<const std::byte> magic = r.raw(8);
    const bool v1 = std::memcmp(magic.data(), kStateMagicV1, 8) == 0;
    const bool v2 = std::memcmp(magic.data(), kStateMagicV2, 8) == 0;
    if (!v1 && !v2 && std::memcmp(magic.data(), kStateMagic, 8) != 0) throw Error("'" + path + "' is not a host checkpoint");
    Loaded loaded;
    loaded.round = r.u64();
    const uint32_t n = r.u32();
    if (n > 1024) throw Error("'" + path + "' is corrupt: " + std::to_string(n) + " islands");
    for (uint32_t i = 0; i < n; ++i) {
        std::string key = r.str(64);
        loaded.islands[key] = r.u32();
    }
    if (!v1 && !v2) {
        const uint32_t norms = r.u32();
        if (norms > kMaxScreenHistory) throw Error("'" + path + "' is corrupt: " + std::to_string(norms) + " screened norms");
        for (uint32_t i = 0; i < norms; ++i) loaded.screen_history.push_back(r.f64());
    }
    const std::span<const std::byte> state = r.view(bytes.size());
    const std::string hash = r.str(64);
    r.finish();
    const std::span<const std::byte> hashed[] = {std::span(bytes).first(bytes.size() - (4 + hash.size()))};
    if (checksum(hashed, v1) != hash) throw Error("host checkpoint '" + path + "' is corrupt: checksum mismatch");
    global.load_state(state);
    return loaded;
}

}  // namespace arch
