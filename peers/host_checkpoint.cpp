// peers/host_checkpoint.cpp: the host's checkpoint (docs/protocol.md, "Failures"): host.state holds the
// round, the key -> island map and the global state (θ and the outer optimizer's) with a BLAKE2b
// checksum, written atomically beside model.bin (core/checkpoint.h: llm.c's format for GPT-2,
// safetensors for the Llama family); a restarted host resumes from it.
#include "core/checkpoint.h"
#include "core/error.h"
#include "core/file_io.h"
#include "peers/host.h"

namespace arch {

namespace {
constexpr char kStateMagic[8] = {'A', 'R', 'C', 'H', 'H', 'S', 'T', '1'};
}  // namespace

void Host::save_checkpoint() {
    protocol::Writer w;
    for (char ch : kStateMagic) w.u8(static_cast<uint8_t>(ch));
    w.u64(round_);
    w.u32(static_cast<uint32_t>(island_of_.size()));
    for (const auto& [key, island] : island_of_) {
        w.str(key);
        w.u32(island);
    }
    w.bytes(global_->save_state());
    std::vector<std::byte> bytes = w.take();
    const std::string hash = diloco::hash_bytes(bytes);
    protocol::Writer tail;
    tail.str(hash);
    const std::vector<std::byte> t = tail.take();
    bytes.insert(bytes.end(), t.begin(), t.end());
    const std::string dir = options_.config.checkpoint_dir;
    write_file_atomic(dir + "/host.state", std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
    write_checkpoint(dir + "/model.bin", model_config_, global_->theta());
}

bool Host::try_save_checkpoint() {
    try {
        save_checkpoint();
        return true;
    } catch (const std::exception& e) {  // a full disk or a read-only folder is no reason to stop serving
        log(std::string("could not write the checkpoint (the run goes on; the next round tries again): ") + e.what());
        return false;
    }
}

bool Host::load_checkpoint() {
    const std::string path = options_.config.checkpoint_dir + "/host.state";
    if (!file_exists(path)) return false;
    const std::vector<uint8_t> raw = read_file(path);
    const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(raw.data()), raw.size());
    protocol::Reader r(bytes, path.c_str());
    for (char ch : kStateMagic)
        if (r.u8() != static_cast<uint8_t>(ch)) throw Error("'" + path + "' is not a host checkpoint");
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
    if (diloco::hash_bytes(bytes.first(bytes.size() - (4 + 64))) != hash)
        throw Error("host checkpoint '" + path + "' is corrupt: checksum mismatch");
    global_->load_state(state);
    round_ = round;
    island_of_ = std::move(islands);
    return true;
}

}  // namespace arch
