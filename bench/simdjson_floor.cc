// simdjson_floor.cc -- the floor under toolgate's parse: the same lines
// through simdjson's DOM parser (Debian's libsimdjson-dev), the fastest
// JSON parser this machine has, nothing else done with them.
//
//   simdjson_floor FILE.jsonl [--min-seconds S]
//
// Loads every non-blank line, one untimed pass, then times whole passes of
// parser.parse(line) until S seconds (default 1); prints
//   simdjson-dom-parse lines=<n> bytes=<b> seconds=<s> ns_per_line=<y> MB_per_s=<x> invalid=<k>
// (C++: simdjson has no C interface; make bench builds it, make test does not.)
#include <simdjson.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

int main(int argc, char **argv)
{
    if (argc < 2) {
        std::fprintf(stderr, "usage: simdjson_floor FILE.jsonl [--min-seconds S]\n");
        return 2;
    }
    double min_seconds = argc > 3 && std::string(argv[2]) == "--min-seconds" ? std::atof(argv[3]) : 1;
    std::ifstream in(argv[1]);
    if (!in) {
        std::fprintf(stderr, "simdjson_floor: cannot open %s\n", argv[1]);
        return 2;
    }
    std::vector<simdjson::padded_string> lines;
    size_t bytes = 0;
    for (std::string l; std::getline(in, l);)
        if (l.find_first_not_of(" \t\r") != std::string::npos) {
            bytes += l.size();
            lines.emplace_back(l);
        }
    simdjson::dom::parser parser;
    size_t invalid = 0;
    for (auto &l : lines)
        invalid += parser.parse(l).error() != simdjson::SUCCESS;
    double seconds = 0;
    size_t passes = 0, sink = 0;
    while (seconds < min_seconds) {
        auto t0 = std::chrono::steady_clock::now();
        for (auto &l : lines)
            sink += parser.parse(l).error() == simdjson::SUCCESS;
        seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        passes++;
    }
    std::printf("simdjson-dom-parse lines=%zu bytes=%zu seconds=%.6f ns_per_line=%.1f MB_per_s=%.1f invalid=%zu\n",
                lines.size(), bytes, seconds, seconds * 1e9 / (double)(passes * lines.size()),
                (double)(bytes * passes) / 1e6 / seconds, invalid + 0 * sink);
    return 0;
}
