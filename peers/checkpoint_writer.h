// peers/checkpoint_writer.h: the host's checkpoints written on a thread of their own, from a snapshot,
// so a round never waits for the disk (docs/protocol.md, "Failures"). The snapshot's θ is the host's
// own, held only while it is written: θ is copied on write (GlobalModel::theta_snapshot), so it takes
// no memory unless the next update comes while the write is under way. The outer state, which the
// next round changes, the host has already written into the file (snapshot.state_file) by then. The
// host fills the snapshot only while no write is under way, and a checkpoint due meanwhile waits for
// the next chance (the host keeps asking), so a slow disk skips checkpoints rather than queueing
// copies of θ. The thread's disk traffic has the lowest I/O priority; its CPU priority is the host's, so
// that a write ends within the round it overlaps.
// Results come back to the host's own thread (take_result), which logs them: the writer never calls
// into the host.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "core/file_io.h"
#include "core/float_store.h"

namespace arch {

struct CheckpointSnapshot {
    uint64_t round = 0;
    std::map<std::string, uint32_t> islands;  // key -> island index
    // θ as it was at `round`, where it lies in the host's model (GlobalModel::theta_snapshot): it
    // stays so while held (θ is copied on write), and the writer lets go of it once it is written.
    std::shared_ptr<const FloatStore> theta;
    // host.state under way: the host wrote its header, the outer state (the host's alone, which the
    // next round changes: written where it lies, never copied) and the checksum; the writer adds θ
    // (its count, then its floats) at theta_offset and commits it.
    std::unique_ptr<AtomicFile> state_file;
    std::size_t theta_offset = 0;
};

class CheckpointWriter {
public:
    struct Result {
        uint64_t round = 0;
        double seconds = 0;
        std::string error;  // empty: written
    };
    // write: puts a snapshot on disk (atomically, or throws); called on the writer's thread, or on the
    // caller's by write_now.
    explicit CheckpointWriter(std::function<void(const CheckpointSnapshot&)> write);
    ~CheckpointWriter();  // lets the write under way finish
    CheckpointWriter(const CheckpointWriter&) = delete;
    CheckpointWriter& operator=(const CheckpointWriter&) = delete;

    bool busy() const;
    CheckpointSnapshot& snapshot();  // to fill; only while !busy()
    void start();                    // writes the snapshot in the background
    void wait();                     // until no write is under way
    Result write_now();              // waits, then writes the snapshot on this thread
    std::optional<Result> take_result();  // a finished background write, once

private:
    Result write_timed();
    void loop();

    std::function<void(const CheckpointSnapshot&)> write_;
    CheckpointSnapshot snapshot_;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    bool requested_ = false, busy_ = false, quit_ = false;
    std::optional<Result> result_;
    std::thread thread_;
};

}  // namespace arch
