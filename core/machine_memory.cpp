// core/machine_memory.cpp: machine_memory_bytes.
#include "core/machine_memory.h"

#include <fstream>
#include <string>

namespace arch {

std::size_t machine_memory_bytes() {
    std::ifstream in("/proc/meminfo");
    std::string key;
    std::size_t kib = 0;
    while (in >> key >> kib) {
        if (key == "MemTotal:") return kib * 1024;
        in.ignore(256, '\n');
    }
    return 0;
}

}  // namespace arch
