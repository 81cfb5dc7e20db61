// Prometheus metrics: GET /metrics served by prometheus-cpp's Exposer (civetweb) on a thread of
// its own, from the samples its owner last published (gt-dispatcher and gt-worker publish from
// their own threads; the exposer never touches their state).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace gt::metrics {

/// One time series. Names follow Prometheus' conventions: the `gt_` prefix, base units
/// (seconds, bytes), `_total` on counters; labels never name a tensor.
struct Sample {
  std::string name;
  std::string help;
  bool counter = true; ///< else a gauge
  std::vector<std::pair<std::string, std::string>> labels;
  double value = 0;
};

inline Sample counter(std::string name, std::string help, double value,
                      std::vector<std::pair<std::string, std::string>> labels = {}) {
  return {std::move(name), std::move(help), true, std::move(labels), value};
}
inline Sample gauge(std::string name, std::string help, double value) {
  return {std::move(name), std::move(help), false, {}, value};
}

/// Whether this build serves metrics (CMake's GT_METRICS, on unless prometheus-cpp is left out,
/// as the GPU bundle does).
bool available();

/// Serves http://host:port/metrics in Prometheus' text format.
class Server {
public:
  /// Listens on host:port (port 0: a free one, see port()). Throws std::runtime_error naming
  /// the address if it cannot, or if this build has no metrics (available() is false).
  Server(const std::string &host, int port);
  ~Server();
  /// Replaces what /metrics shows; callable from any thread.
  void publish(std::vector<Sample> samples);
  /// The port it listens on.
  int port() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace gt::metrics
