// Prometheus metrics over prometheus-cpp (see Metrics.h).
#include "gt/Transport/Metrics.h"

#include <map>
#include <mutex>
#include <stdexcept>

#ifdef GT_HAVE_METRICS
#include <prometheus/collectable.h>
#include <prometheus/exposer.h>
#include <prometheus/metric_family.h>
#endif

namespace gt::metrics {

#ifdef GT_HAVE_METRICS

bool available() { return true; }

namespace {
/// The samples last published, grouped into metric families when scraped.
class Published final : public prometheus::Collectable {
public:
  void set(std::vector<Sample> samples) {
    std::lock_guard lock(mu_);
    samples_ = std::move(samples);
  }
  std::vector<prometheus::MetricFamily> Collect() const override {
    std::lock_guard lock(mu_);
    std::vector<prometheus::MetricFamily> families;
    std::map<std::string, size_t> index;
    for (const Sample &s : samples_) {
      auto [it, fresh] = index.try_emplace(s.name, families.size());
      if (fresh)
        families.push_back({s.name, s.help, s.counter ? prometheus::MetricType::Counter : prometheus::MetricType::Gauge, {}});
      prometheus::ClientMetric m;
      for (auto &[name, value] : s.labels) m.label.push_back({name, value});
      if (s.counter) m.counter.value = s.value;
      else m.gauge.value = s.value;
      families[it->second].metric.push_back(std::move(m));
    }
    return families;
  }

private:
  mutable std::mutex mu_;
  std::vector<Sample> samples_;
};
} // namespace

struct Server::Impl {
  std::shared_ptr<Published> published = std::make_shared<Published>();
  std::unique_ptr<prometheus::Exposer> exposer;
};

Server::Server(const std::string &host, int port) : impl_(std::make_unique<Impl>()) {
  std::string address = host + ":" + std::to_string(port);
  try {
    impl_->exposer = std::make_unique<prometheus::Exposer>(address, 1);
  } catch (const std::exception &e) {
    throw std::runtime_error("cannot serve metrics on " + address + ": " + e.what());
  }
  impl_->exposer->RegisterCollectable(impl_->published);
}

Server::~Server() = default;

void Server::publish(std::vector<Sample> samples) { impl_->published->set(std::move(samples)); }

int Server::port() const {
  std::vector<int> ports = impl_->exposer->GetListeningPorts();
  return ports.empty() ? 0 : ports.front();
}

#else

bool available() { return false; }

struct Server::Impl {};

Server::Server(const std::string &, int) {
  throw std::runtime_error("this build of GT serves no metrics: it was configured with -DGT_METRICS=OFF "
                           "(prometheus-cpp left out, as in the GPU bundle)");
}
Server::~Server() = default;
void Server::publish(std::vector<Sample>) {}
int Server::port() const { return 0; }

#endif

} // namespace gt::metrics
