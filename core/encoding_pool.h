// core/encoding_pool.h: tokenization on several threads for `prepare`: batches of text pieces are
// encoded by a pool of threads and handed back in the order they were given, so the token stream is
// the same whatever the thread count. A piece that starts a document gets the tokenizer's document
// separator first.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/text_inputs.h"
#include "core/tokenizer.h"

namespace arch {

// A batch of pieces and, once a thread has encoded it, each piece's tokens (the separator first at
// a document's start).
struct TextBatch {
    std::vector<TextPiece> pieces;
    std::vector<std::vector<uint32_t>> tokens;
    bool ready = false;        // guarded by EncodingPool::mutex_
    std::exception_ptr error;  // guarded by EncodingPool::mutex_
};

class EncodingPool {
public:
    EncodingPool(const Tokenizer& tok, int threads);  // tok must outlive the pool
    ~EncodingPool();                                  // finishes the batches already submitted
    void submit(std::shared_ptr<TextBatch> b);
    // Waits until b is encoded; rethrows what encoding it threw.
    void wait(const TextBatch& b);

private:
    void work();
    void encode(TextBatch& b) const;

    const Tokenizer& tok_;
    std::mutex mutex_;
    std::condition_variable work_cv_, done_cv_;
    std::deque<std::shared_ptr<TextBatch>> queue_;  // guarded by mutex_
    bool closing_ = false;                      // guarded by mutex_
    std::vector<std::thread> threads_;
};

}  // namespace arch
