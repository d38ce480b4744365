// tests/island/run_ranks.h: runs fn(rank) on one thread per rank and rethrows the first failure;
// the shape every island test has (one process, one thread per device).
#pragma once

#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

inline void run_ranks(int n, const std::function<void(int)>& fn) {
    std::mutex mu;
    std::exception_ptr first;
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r)
        threads.emplace_back([&, r] {
            try {
                fn(r);
            } catch (...) {
                std::lock_guard<std::mutex> lock(mu);
                if (!first) first = std::current_exception();
            }
        });
    for (auto& t : threads) t.join();
    if (first) std::rethrow_exception(first);
}
