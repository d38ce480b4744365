// core/comm_thread.h: a device's communication thread: runs queued jobs (collectives) one at a time, in
// the order they were queued, while the compute thread carries on (DDP bucket all-reduces, ZeRO-3
// gathers and reduce-scatters). It knows nothing of models. After a job throws, every later job is
// skipped and every wait() rethrows that first error, so a failed collective is never silently lost.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace arch {

class CommThread {
public:
    CommThread();
    ~CommThread();  // waits for queued jobs, then joins
    CommThread(const CommThread&) = delete;
    CommThread& operator=(const CommThread&) = delete;

    // Queues a job; returns its ticket (1, 2, 3, ...).
    std::uint64_t push(std::function<void()> job);
    // Blocks until job `ticket` (and all before it) has run; rethrows the first job failure.
    void wait(std::uint64_t ticket);
    void drain();  // waits for every job queued so far
    // push + wait.
    void run(std::function<void()> job) { wait(push(std::move(job))); }

private:
    void loop();

    std::mutex mu_;
    std::condition_variable work_cv_, done_cv_;
    std::deque<std::function<void()>> jobs_;
    std::uint64_t pushed_ = 0, done_ = 0;
    std::exception_ptr error_;
    bool stop_ = false;
    std::thread thread_;
};

}  // namespace arch
