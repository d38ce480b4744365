// peers/checkpoint_writer.cpp: CheckpointWriter: one thread, one snapshot, one result slot.
#include "peers/checkpoint_writer.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <exception>
#include <utility>

#include "core/clock.h"
#include "core/error.h"

namespace arch {

CheckpointWriter::CheckpointWriter(std::function<void(const CheckpointSnapshot&)> write)
    : write_(std::move(write)), thread_([this] { loop(); }) {}

CheckpointWriter::~CheckpointWriter() {
    {
        std::lock_guard lock(mu_);
        quit_ = true;
    }
    cv_.notify_all();
    thread_.join();
}

bool CheckpointWriter::busy() const {
    std::lock_guard lock(mu_);
    return busy_;
}

CheckpointSnapshot& CheckpointWriter::snapshot() {
    if (busy()) throw Error("the checkpoint snapshot is being written");
    return snapshot_;
}

void CheckpointWriter::start() {
    {
        std::lock_guard lock(mu_);
        if (busy_) throw Error("a checkpoint is already being written");
        busy_ = requested_ = true;
    }
    cv_.notify_all();
}

void CheckpointWriter::wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !busy_; });
}

CheckpointWriter::Result CheckpointWriter::write_now() {
    wait();
    return write_timed();
}

std::optional<CheckpointWriter::Result> CheckpointWriter::take_result() {
    std::lock_guard lock(mu_);
    return std::exchange(result_, std::nullopt);
}

CheckpointWriter::Result CheckpointWriter::write_timed() {
    const auto t0 = Clock::real().now();
    Result r{snapshot_.round, 0, ""};
    try {
        if (!snapshot_.theta) throw Error("the checkpoint snapshot holds no θ");
        write_(snapshot_);
    } catch (const std::exception& e) {  // a full disk or a read-only folder: reported, never fatal
        r.error = e.what();
    }
    snapshot_.theta.reset();  // a copy of θ made meanwhile (copy on write) is freed here
    snapshot_.state_file.reset();  // not committed: removed
    r.seconds = std::chrono::duration<double>(Clock::real().now() - t0).count();
    return r;
}

namespace {
// The writer's disk traffic yields to everything else's: the lowest best-effort I/O priority. Its CPU
// priority stays the host's: on a machine whose cores the rounds keep busy, a writer at the lowest
// took 3-6 s where it needs one, finished after the next update and so had θ copied every round
// (docs/results.md, stop 58). Best effort: a failure changes nothing else.
void lower_this_threads_io_priority() {
    const auto tid = static_cast<int>(::syscall(SYS_gettid));
    constexpr int kWhoProcess = 1, kClassBestEffort = 2, kClassShift = 13, kLowest = 7;  // linux/ioprio.h
    (void)::syscall(SYS_ioprio_set, kWhoProcess, tid, (kClassBestEffort << kClassShift) | kLowest);
}
}  // namespace

void CheckpointWriter::loop() {
    lower_this_threads_io_priority();
    std::unique_lock lock(mu_);
    for (;;) {
        cv_.wait(lock, [&] { return requested_ || quit_; });
        if (!requested_) return;  // quit with nothing asked
        requested_ = false;
        lock.unlock();
        Result r = write_timed();
        lock.lock();
        result_ = std::move(r);
        busy_ = false;
        cv_.notify_all();
    }
}

}  // namespace arch
