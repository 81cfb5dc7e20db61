// The sharding config: named signals -> how tensors and compute are laid out over workers.
//
//   forward_layer1:
//     shard: {axis: 0, workers: [0, 1, 2, 3]}   # workers omitted = all workers
//     backward: backward_layer1                  # the entry used for this signal's gradients
//   backward_layer1:
//     shard: {axis: 0, workers: [2, 3]}
//   params:
//     replicated: true                           # or: replicated: {workers: [0, 1]}
//   hot_block:
//     compile: true                              # compile its ops as soon as they are seen
//
// Parsed with yaml-cpp. Every error names the file and the line of the offending key.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace gt {

/// A malformed config: "config.yaml:3: unknown key 'shards' in signal 'layer1' (expected ...)".
/// Python: ValueError.
struct ConfigError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

struct SignalConfig {
  std::string name;
  int line = 0;                 ///< 1-based line of the signal's name
  bool shard = false;           ///< `shard:` given
  int64_t axis = 0;             ///< shard axis (negative counts from the end)
  int axisLine = 0;
  bool replicated = false;      ///< `replicated:` given
  std::vector<int64_t> workers; ///< shard/replicated workers; empty = all workers
  int workersLine = 0;
  std::string backward;         ///< name of the entry for gradients ("" = this one)
  bool compile = false;
};

class ShardingConfig {
public:
  /// Parses YAML text; `source` names it in errors (a path). Throws ConfigError.
  static ShardingConfig parse(const std::string &text, const std::string &source);
  /// Reads and parses a file. Throws ConfigError (also when it cannot be read).
  static ShardingConfig load(const std::string &path);

  /// The entry for a signal, or nullptr (an unknown signal is ignored: the op is unsharded).
  const SignalConfig *find(std::string_view name) const;
  /// Throws ConfigError naming the line if an entry names a worker >= numWorkers.
  void checkWorkers(int64_t numWorkers) const;
  /// "config.yaml:7"
  std::string where(int line) const { return source + ":" + std::to_string(line); }

  bool empty() const { return signals.empty() && autoShardBytes == 0; }
  /// Whether the config can put a tensor anywhere but the session's home worker (a `shard:` or
  /// `replicated:` entry, or GT_AUTO_SHARD); a config of `compile:` entries only cannot.
  bool placesTensors() const {
    if (autoShardBytes > 0) return true;
    for (const auto &[name, entry] : signals)
      if (entry.shard || entry.replicated) return true;
    return false;
  }
  std::string source;
  std::map<std::string, SignalConfig, std::less<>> signals;
  /// GT_AUTO_SHARD: tensors made outside any configured signal are split along axis 0 over
  /// all workers when they hold at least this many bytes (and axis 0 has at least one row per
  /// worker), and replicated over all workers otherwise. 0: off (they stay on one worker).
  int64_t autoShardBytes = 0;
};

} // namespace gt
