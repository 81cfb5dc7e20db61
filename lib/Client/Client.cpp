// The client core: instruction buffer and Cap'n Proto session (see Client.h).
#include "gt/Client/Client.h"

#include "gt/Transport/Wire.h"

#include <capnp/ez-rpc.h>
#include <kj/async-io.h>
#include <kj/time.h>

namespace gt::client {

struct Client::Rpc {
  capnp::EzRpcClient ez;
  wire::Dispatcher::Client dispatcher;
  wire::Session::Client session;
  Rpc(const std::string &host, int port)
      : ez(host.c_str(), port), dispatcher(ez.getMain<wire::Dispatcher>()),
        session(capnp::Capability::Client(nullptr).castAs<wire::Session>()) {}
  kj::WaitScope &ws() { return ez.getWaitScope(); }
  kj::Timer &timer() { return ez.getIoProvider().getTimer(); }
};

Client::Client(const std::string &host, int port, const std::string &token, double timeoutSeconds) {
  std::string where = host + ":" + std::to_string(port);
  if (const char *n = std::getenv("GT_WORKER_BATCH_SIZE"); n && *n) {
    long v = std::strtol(n, nullptr, 10);
    if (v < 1) throw std::invalid_argument(std::string("GT_WORKER_BATCH_SIZE must be a positive integer, got '") + n + "'");
    flushInstructions_ = size_t(v);
  }
  try {
    rpc_ = std::make_unique<Rpc>(host, port);
    auto req = rpc_->dispatcher.openSessionRequest();
    req.setToken(token);
    auto timeout = int64_t(timeoutSeconds * 1000) * kj::MILLISECONDS;
    // The deadline from the real clock: the thread's kj timer only advances while its event
    // loop runs, so after an idle stretch timeoutAfter() would count from a stale "now".
    auto deadline = kj::systemPreciseMonotonicClock().now() + timeout;
    auto response = rpc_->timer().timeoutAt(deadline, req.send()).wait(rpc_->ws());
    rpc_->session = response.getSession();
  } catch (const kj::Exception &e) {
    throw ConnectionError("cannot connect to the GT dispatcher at " + where + ": " + e.getDescription().cStr());
  }
}

Client::~Client() {
  try {
    if (rpc_) flush();
  } catch (...) {
  }
}

const TensorType &Client::typeOf(uint64_t id) const {
  auto it = types_.find(id);
  if (it == types_.end()) throw std::invalid_argument("tensor " + std::to_string(id) + " is not held by this client");
  return it->second;
}

std::pair<uint64_t, TensorType> Client::emit(OpCode op, const std::vector<uint64_t> &operands, OpAttrs attrs,
                                             std::string data, std::string location) {
  std::vector<TensorType> types;
  types.reserve(operands.size());
  for (uint64_t id : operands) types.push_back(typeOf(id));
  TensorType result = inferType(op, types, attrs); // throws before anything is recorded
  drainReleased();
  Instruction inst;
  inst.op = op;
  inst.result = nextId_++;
  inst.operands = operands;
  inst.attrs = std::move(attrs);
  bufferedBytes_ += data.size();
  inst.data = std::move(data);
  inst.location = std::move(location);
  inst.signal = signal_;
  inst.backward = backward_ && !signal_.empty();
  types_.emplace(inst.result, result);
  record(inst, result);
  uint64_t id = inst.result;
  buffer_.push_back(std::move(inst));
  if (buffer_.size() >= flushInstructions_ || bufferedBytes_ >= kFlushBytes) flush();
  return {id, result};
}

void Client::drainReleased() {
  std::lock_guard lock(releaseMutex_);
  for (uint64_t id : released_) {
    Instruction free;
    free.op = OpCode::Free;
    free.operands = {id};
    if (auto it = types_.find(id); it != types_.end()) record(free, it->second);
    buffer_.push_back(std::move(free));
    types_.erase(id);
  }
  released_.clear();
}

void Client::record(const Instruction &inst, const TensorType &type) {
  TapeEntry e{inst.op, inst.result, inst.operands, type, inst.location,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - opened_).count()};
  if (tape_.size() == kTapeLength) tape_.pop_front();
  tape_.push_back(std::move(e));
}

std::vector<TapeEntry> Client::tape() const { return {tape_.begin(), tape_.end()}; }

std::string Client::describe(const TapeEntry &e) {
  std::string s;
  if (e.op != OpCode::Free) s = "TENSOR[" + std::to_string(e.result) + "] := ";
  s += opInfo(e.op).mnemonic;
  for (uint64_t id : e.operands) s += " TENSOR[" + std::to_string(id) + "]";
  s += std::string(" : ") + dtypeName(e.type.dtype) + shapeString(e.type.shape);
  if (!e.location.empty()) s += "  # " + e.location;
  return s;
}

void Client::release(uint64_t id) {
  std::lock_guard lock(releaseMutex_);
  released_.push_back(id);
}

void Client::flush() {
  drainReleased();
  if (buffer_.empty()) return;
  auto req = rpc_->session.submitRequest();
  auto list = req.initBatch().initInstructions(unsigned(buffer_.size()));
  for (unsigned i = 0; i < buffer_.size(); ++i) wire::toWire(buffer_[i], list[i]);
  buffer_.clear();
  bufferedBytes_ = 0;
  req.send().detach([this](kj::Exception &&e) {
    if (streamError_.empty()) streamError_ = e.getDescription().cStr();
  });
  rpc_->ws().poll(); // push the bytes out without waiting for anything
}

FetchedTensor Client::fetch(uint64_t id) {
  flush();
  try {
    auto req = rpc_->session.fetchRequest();
    req.setId(id);
    auto response = req.send().wait(rpc_->ws());
    auto r = response.getResult();
    if (r.hasError() && r.getError().size() > 0) throw RemoteError(r.getError().cStr());
    FetchedTensor out;
    out.type.dtype = DType(r.getDtype());
    for (int64_t s : r.getShape()) out.type.shape.push_back(s);
    out.bytes.assign(reinterpret_cast<const char *>(r.getData().begin()), r.getData().size());
    return out;
  } catch (const kj::Exception &e) {
    throw ConnectionError(std::string("lost the GT dispatcher: ") + e.getDescription().cStr() +
                          (streamError_.empty() ? "" : " (" + streamError_ + ")"));
  }
}

void Client::sync() {
  flush();
  try {
    rpc_->session.syncRequest().send().wait(rpc_->ws());
  } catch (const kj::Exception &e) {
    throw ConnectionError(std::string("lost the GT dispatcher: ") + e.getDescription().cStr());
  }
}

Stats Client::stats() {
  sync(); // counters then include everything this client sent
  try {
    auto r = rpc_->session.statsRequest().send().wait(rpc_->ws());
    Stats out;
    for (auto s : r.getStats()) out.values[s.getName().cStr()] = s.getValue();
    for (auto n : r.getNotes()) out.notes.push_back(n.cStr());
    for (auto w : r.getByWorker()) {
      auto &values = out.byWorker[w.getIndex()];
      for (auto s : w.getStats()) values[s.getName().cStr()] = s.getValue();
    }
    return out;
  } catch (const kj::Exception &e) {
    throw ConnectionError(std::string("lost the GT dispatcher: ") + e.getDescription().cStr());
  }
}

std::vector<std::string> Client::loadConfig(const std::string &yaml, const std::string &path, uint64_t autoShardBytes) {
  flush(); // instructions issued before the config keep the old one
  std::string error;
  std::vector<std::string> signals;
  try {
    auto req = rpc_->session.loadConfigRequest();
    req.setYaml(yaml);
    req.setPath(path);
    req.setAutoShardBytes(autoShardBytes);
    auto result = req.send().wait(rpc_->ws());
    error = result.getError().cStr();
    for (auto name : result.getSignals()) signals.emplace_back(name.cStr());
  } catch (const kj::Exception &e) {
    throw ConnectionError(std::string("lost the GT dispatcher: ") + e.getDescription().cStr());
  }
  if (!error.empty()) throw std::invalid_argument(error);
  return signals;
}

uint32_t Client::numWorkers() {
  try {
    return rpc_->dispatcher.infoRequest().send().wait(rpc_->ws()).getWorkers();
  } catch (const kj::Exception &e) {
    throw ConnectionError(std::string("lost the GT dispatcher: ") + e.getDescription().cStr());
  }
}

} // namespace gt::client
