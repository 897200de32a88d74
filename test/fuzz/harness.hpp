// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// What every fuzz target here shares: the input reader, the operation trace and the failure
// report (which reruns the input with the trace on), libFuzzer's entry point and, with
// -DASIO_SYNC_FUZZ_REPLAY, a main that replays files or directories of inputs. Include it from the
// target's one source file after defining ASIO_SYNC_FUZZ_TARGET (the name printed in reports), and
// define asio_sync::fuzz::run_input, which runs one input from a cleared trace.

#ifndef ASIO_SYNC_TEST_FUZZ_HARNESS_HPP
#define ASIO_SYNC_TEST_FUZZ_HARNESS_HPP

#if !defined(ASIO_SYNC_FUZZ_TARGET)
#error "define ASIO_SYNC_FUZZ_TARGET before including harness.hpp"
#endif

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#if defined(ASIO_SYNC_FUZZ_REPLAY)
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>
#endif

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace asio_sync::fuzz {

// ---------------------------------------------------------------------------------------------
// Failure reporting. With tracing on, every operation appends a line to the trace, so a mismatch
// can be read as a story rather than reconstructed from the input bytes. Formatting the trace
// costs a fifth of the fuzzer's speed, so it is off while fuzzing: the harness is deterministic,
// and a mismatch reruns the input with tracing on to produce it.

inline std::string trace;
inline bool tracing = false;
inline bool print_trace_always = false;
inline const std::uint8_t* input_data = nullptr; // the input being run, for the rerun
inline std::size_t input_size = 0;
inline const char* input_name = nullptr; // the file being replayed, if any

// Runs one input; defined by the target.
void run_input(const std::uint8_t* data, std::size_t size);

__attribute__((format(printf, 1, 0))) inline void vappend(const char* format, std::va_list args)
{
    char line[512];
    std::vsnprintf(line, sizeof line, format, args);
    trace += line;
    trace += '\n';
}

__attribute__((format(printf, 1, 2))) inline void note(const char* format, ...)
{
    if (!tracing)
        return;
    std::va_list args;
    va_start(args, format);
    vappend(format, args);
    va_end(args);
}

[[noreturn]] __attribute__((format(printf, 1, 2))) inline void fail(const char* format, ...)
{
    const bool traced = tracing;
    tracing = true;
    std::fflush(stdout);
    std::va_list args;
    va_start(args, format);
    trace += "MISMATCH: ";
    vappend(format, args);
    va_end(args);
    if (!traced)
    {
        // The objects of the failed run are abandoned, not destroyed: the rerun builds its own.
        std::fprintf(stderr,
                     ASIO_SYNC_FUZZ_TARGET ": %s" ASIO_SYNC_FUZZ_TARGET
                                           ": rerunning the input with the trace on\n",
                     trace.c_str());
        run_input(input_data, input_size);
        std::fprintf(stderr,
                     ASIO_SYNC_FUZZ_TARGET ": the rerun did not fail: the harness is not deterministic\n");
        std::abort();
    }
    std::fprintf(stderr,
                 ASIO_SYNC_FUZZ_TARGET ": operation trace:\n%s" ASIO_SYNC_FUZZ_TARGET
                                       ": mismatch with the model%s%s\n",
                 trace.c_str(), input_name ? ", input " : "", input_name ? input_name : "");
    std::fflush(stderr);
    // Abort rather than throw: libFuzzer must see a crash, and the code under test must not get a
    // chance to swallow the failure.
    std::abort();
}

#define FUZZ_CHECK(condition, ...)                                                                           \
    do                                                                                                       \
    {                                                                                                        \
        if (!(condition))                                                                                    \
            fail(__VA_ARGS__);                                                                               \
    } while (false)

struct reader
{
    const std::uint8_t* data;
    std::size_t size;

    bool empty() const noexcept { return size == 0; }

    std::uint8_t byte() noexcept
    {
        if (size == 0)
            return 0;
        --size;
        return *data++;
    }
};

} // namespace asio_sync::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    using namespace asio_sync::fuzz;
    input_data = data;
    input_size = size;
    tracing = print_trace_always;
    run_input(data, size);
    if (print_trace_always)
        std::fputs(trace.c_str(), stdout);
    return 0;
}

#if defined(ASIO_SYNC_FUZZ_REPLAY)

namespace asio_sync::fuzz {

void replay_file(const std::filesystem::path& path)
{
    std::ifstream file(path, std::ios::binary);
    if (!file)
    {
        std::fprintf(stderr, ASIO_SYNC_FUZZ_TARGET ": cannot read %s\n", path.c_str());
        std::exit(2);
    }
    const std::vector<char> bytes{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
    if (print_trace_always)
        std::printf("== %s\n", path.c_str());
    input_name = path.c_str();
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    input_name = nullptr;
}

} // namespace asio_sync::fuzz

// Runs every input named on the command line (files, or directories of them, in name order).
int main(int argc, char** argv)
{
    using namespace asio_sync::fuzz;
    const char* env = std::getenv("ASIO_SYNC_FUZZ_TRACE");
    print_trace_always = env && *env && std::string(env) != "0";
    std::size_t count = 0;
    for (int i = 1; i < argc; ++i)
    {
        const std::filesystem::path arg(argv[i]);
        if (std::filesystem::is_directory(arg))
        {
            std::vector<std::filesystem::path> files;
            for (const auto& entry : std::filesystem::directory_iterator(arg))
                if (entry.is_regular_file())
                    files.push_back(entry.path());
            std::sort(files.begin(), files.end());
            for (const auto& file : files)
                replay_file(file);
            count += files.size();
        }
        else
        {
            replay_file(arg);
            ++count;
        }
    }
    std::printf(ASIO_SYNC_FUZZ_TARGET ": %zu inputs replayed, no mismatch\n", count);
    // An empty corpus would make the test pass without checking anything.
    return count == 0 ? 1 : 0;
}

#endif

#endif // ASIO_SYNC_TEST_FUZZ_HARNESS_HPP
