// core/comm_thread.cpp: CommThread: one worker thread draining a FIFO of jobs.
#include "core/comm_thread.h"

namespace arch {

CommThread::CommThread() : thread_([this] { loop(); }) {}

CommThread::~CommThread() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_ = true;
    }
    work_cv_.notify_one();
    thread_.join();
}

std::uint64_t CommThread::push(std::function<void()> job) {
    std::uint64_t ticket;
    {
        std::lock_guard<std::mutex> lock(mu_);
        jobs_.push_back(std::move(job));
        ticket = ++pushed_;
    }
    work_cv_.notify_one();
    return ticket;
}

void CommThread::wait(std::uint64_t ticket) {
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, [&] { return done_ >= ticket; });
    if (error_) std::rethrow_exception(error_);
}

void CommThread::drain() {
    std::uint64_t last;
    {
        std::lock_guard<std::mutex> lock(mu_);
        last = pushed_;
    }
    wait(last);
}

void CommThread::loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
        work_cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
        if (jobs_.empty()) return;  // stop_ with nothing left
        std::function<void()> job = std::move(jobs_.front());
        jobs_.pop_front();
        const bool failed = error_ != nullptr;
        lock.unlock();
        std::exception_ptr error;
        if (!failed) {
            try {
                job();
            } catch (...) {
                error = std::current_exception();
            }
        }
        job = nullptr;  // destroy captures outside the lock
        lock.lock();
        if (error && !error_) error_ = error;
        ++done_;
        done_cv_.notify_all();
    }
}

}  // namespace arch
