// Trace events of gt.profiler's timeline (docs/observability.md): what the dispatcher and the
// workers did for a traced session, each on its own process's clock until the client aligns them.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace gt {

/// One slice of a Chrome trace-event timeline ("X" event): `name` in `category`, from
/// `startNs` (the recording process's monotonic clock, monotonicNs) for `durationNs`, with
/// `args` a JSON object's text ("" for none).
struct TraceEvent {
  std::string name, category;
  int64_t startNs = 0, durationNs = 0;
  std::string args;
};

/// The most events one process keeps for one traced session; later ones are dropped (counted
/// in a last "dropped events" slice), so a trace cannot grow a daemon without bound.
constexpr size_t kMaxTraceEvents = 200000;

/// This process's monotonic clock in nanoseconds (CLOCK_MONOTONIC on Linux, as Python's
/// time.perf_counter_ns()): the clock every trace event is recorded on.
inline int64_t monotonicNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// `text` as a JSON string literal, quotes included.
inline std::string jsonString(const std::string &text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else out += c;
  }
  return out + "\"";
}

} // namespace gt
