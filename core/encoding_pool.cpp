// core/encoding_pool.cpp: EncodingPool (encoding_pool.h): a queue of batches under one mutex, worker
// threads that take the oldest, and a condition the caller waits on for the batch it needs next.
#include "core/encoding_pool.h"

namespace arch {

EncodingPool::EncodingPool(const Tokenizer& tok, int threads) : tok_(tok) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { work(); });
}

EncodingPool::~EncodingPool() {
    {
        std::lock_guard lock(mutex_);
        closing_ = true;
    }
    work_cv_.notify_all();
    for (std::thread& t : threads_) t.join();
}

void EncodingPool::submit(std::shared_ptr<TextBatch> b) {
    {
        std::lock_guard lock(mutex_);
        queue_.push_back(std::move(b));
    }
    work_cv_.notify_one();
}

void EncodingPool::wait(const TextBatch& b) {
    std::unique_lock lock(mutex_);
    done_cv_.wait(lock, [&] { return b.ready; });
    if (b.error) std::rethrow_exception(b.error);
}

void EncodingPool::work() {
    for (;;) {
        std::shared_ptr<TextBatch> b;
        {
            std::unique_lock lock(mutex_);
            work_cv_.wait(lock, [&] { return closing_ || !queue_.empty(); });
            if (queue_.empty()) return;
            b = std::move(queue_.front());
            queue_.pop_front();
        }
        std::exception_ptr error;
        try {
            encode(*b);
        } catch (...) {
            error = std::current_exception();
        }
        {
            std::lock_guard lock(mutex_);
            b->error = error;
            b->ready = true;
        }
        done_cv_.notify_all();
    }
}

void EncodingPool::encode(TextBatch& b) const {
    b.tokens.resize(b.pieces.size());
    for (size_t i = 0; i < b.pieces.size(); ++i) {
        const std::vector<int> ids = tok_.encode(b.pieces[i].text);
        std::vector<uint32_t>& out = b.tokens[i];
        out.reserve(ids.size() + 1);
        if (b.pieces[i].starts_document) out.push_back(static_cast<uint32_t>(tok_.document_separator()));
        out.insert(out.end(), ids.begin(), ids.end());
    }
}

}  // namespace arch
