// core/machine_memory.h: this machine's RAM (MemTotal in /proc/meminfo), for what a plan may assume
// and what a peer agrees to hold. Reads the file on each call; 0 when it cannot be read.
#pragma once

#include <cstddef>

namespace arch {

std::size_t machine_memory_bytes();

}  // namespace arch
