// The client core: instruction buffer and Cap'n Proto session (see Client.h).
#include "gt/Client/Client.h"

#include "gt/Transport/Wire.h"

#include "gt/Transport/Connection.h"

#include <kj/async-io.h>
#include <kj/time.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <pwd.h>
#include <unistd.h>

namespace gt::client {

struct Client::Rpc {
  transport::Connection connection;
  wire::Dispatcher::Client dispatcher;
  wire::Session::Client session;
  wire::Liveness::Client alive;
  kj::Maybe<kj::Promise<void>> submitted; ///< the last submit: resolves when more may be sent
  Rpc(const std::string &host, int port, double timeoutSeconds, const std::string &caFile)
      : connection(host, port, transport::TlsOptions{"", "", caFile}, timeoutSeconds),
        dispatcher(connection.main<wire::Dispatcher>()),
        session(capnp::Capability::Client(nullptr).castAs<wire::Session>()),
        alive(capnp::Capability::Client(nullptr).castAs<wire::Liveness>()) {}
  kj::WaitScope &ws() { return connection.waitScope(); }
  kj::Timer &timer() { return connection.timer(); }
};

/// The session's direct link to the worker holding its tensors (Session.directReads). The
/// reader is destroyed before its connection.
struct Client::Reader {
  std::unique_ptr<transport::Connection> connection;
  wire::SessionReader::Client reader = capnp::Capability::Client(nullptr).castAs<wire::SessionReader>();
  std::string where; ///< "worker N at ADDRESS"
};

namespace {
Limits limitsOf(wire::Limits::Reader r) {
  return {r.getMaxBatchInstructions(), r.getMaxMessageBytes(), r.getSessionMemoryBytes(), r.getWorkers()};
}

std::string gib(double bytes) {
  char text[32];
  if (bytes >= double(uint64_t(1) << 40)) std::snprintf(text, sizeof text, "%.2f TiB", bytes / double(uint64_t(1) << 40));
  else if (bytes >= double(1 << 30)) std::snprintf(text, sizeof text, "%.2f GiB", bytes / double(1 << 30));
  else std::snprintf(text, sizeof text, "%.1f MiB", bytes / double(1 << 20));
  return text;
}
/// Who this client is, for gt top: "user@host:pid".
std::string selfLabel() {
  const char *user = std::getenv("USER");
  if (!user || !*user)
    if (const passwd *pw = getpwuid(getuid())) user = pw->pw_name;
  char host[256] = "?";
  gethostname(host, sizeof host - 1);
  return std::string(user && *user ? user : "?") + "@" + host + ":" + std::to_string(getpid());
}
} // namespace

Client::Client(const std::string &host, int port, const std::string &token, double timeoutSeconds,
               const std::string &tlsCaFile) {
  where_ = transport::addressString(host, port);
  tlsCa_ = tlsCaFile;
  if (const char *d = std::getenv("GT_DIRECT_READS"); d && std::string(d) == "0") {
    directOff_ = true;
    directWhy_ = "GT_DIRECT_READS=0";
  }
  if (const char *n = std::getenv("GT_WORKER_BATCH_SIZE"); n && *n) {
    long v = std::strtol(n, nullptr, 10);
    if (v < 1) throw std::invalid_argument(std::string("GT_WORKER_BATCH_SIZE must be a positive integer, got '") + n + "'");
    flushInstructions_ = size_t(v);
  }
  if (const char *n = std::getenv("GT_FIRST_BATCH_SIZE"); n && *n) {
    char *end = nullptr;
    long v = std::strtol(n, &end, 10);
    if (*end || v < 0)
      throw std::invalid_argument(std::string("GT_FIRST_BATCH_SIZE must be a non-negative integer, got '") + n + "'");
    firstBatch_ = size_t(v);
  }
  if (const char *t = std::getenv("GT_TIMEOUT"); t && *t) {
    char *end = nullptr;
    timeout_ = std::strtod(t, &end);
    if (*end || timeout_ <= 0)
      throw std::invalid_argument(std::string("GT_TIMEOUT must be a positive number of seconds, got '") + t + "'");
  }
  try {
    rpc_ = std::make_unique<Rpc>(host, port, timeoutSeconds, tlsCaFile);
    auto req = rpc_->dispatcher.openSessionRequest();
    req.setToken(token);
    req.setLabel(selfLabel());
    auto timeout = int64_t(timeoutSeconds * 1000) * kj::MILLISECONDS;
    // The deadline from the real clock: the thread's kj timer only advances while its event
    // loop runs, so after an idle stretch timeoutAfter() would count from a stale "now".
    auto deadline = kj::systemPreciseMonotonicClock().now() + timeout;
    auto response = rpc_->timer().timeoutAt(deadline, req.send()).wait(rpc_->ws());
    rpc_->session = response.getSession();
    rpc_->alive = response.getAlive();
    setLimits(limitsOf(response.getLimits()));
  } catch (const kj::Exception &e) {
    std::string why = e.getDescription().cStr();
    if (tlsCaFile.empty() && why.find("GT_TOKEN") == std::string::npos)
      why += " (if the dispatcher speaks TLS, set GT_TLS_CA to the certificate to trust)";
    throw ConnectionError("cannot connect to the GT dispatcher at " + where_ + ": " + why);
  } catch (const std::runtime_error &e) { // the connection itself (refused, TLS, timed out)
    throw ConnectionError("cannot connect to the GT dispatcher at " + where_ + ": " + e.what());
  }
}

void Client::setLimits(const Limits &limits) { limits_ = limits; }

size_t Client::flushBytes() const {
  return limits_.maxMessageBytes ? std::min<size_t>(kFlushBytes, limits_.maxMessageBytes / 4) : kFlushBytes;
}

size_t Client::uploadChunk() const {
  return limits_.maxMessageBytes ? std::min<size_t>(kUploadChunk, limits_.maxMessageBytes / 4) : kUploadChunk;
}

kj::Promise<void> Client::heartbeat() {
  return rpc_->timer().afterDelay(1 * kj::SECONDS).then([this] {
    auto deadline = kj::systemPreciseMonotonicClock().now() + int64_t(timeout_ * 1000) * kj::MILLISECONDS;
    return rpc_->timer().timeoutAt(deadline, rpc_->alive.pingRequest().send().ignoreResult()).then([this] {
      return heartbeat();
    });
  });
}

kj::Promise<void> Client::readerHeartbeat() {
  return rpc_->timer().afterDelay(1 * kj::SECONDS).then([this] {
    auto deadline = kj::systemPreciseMonotonicClock().now() + int64_t(timeout_ * 1000) * kj::MILLISECONDS;
    return rpc_->timer().timeoutAt(deadline, reader_->reader.pingRequest().send().ignoreResult()).then([this] {
      return readerHeartbeat();
    });
  });
}

template <typename T> std::optional<T> Client::waitDirect(kj::Promise<T> promise, const char *what) {
  std::string lost;
  auto watchdog = readerHeartbeat().then([]() -> kj::Promise<T> { return kj::NEVER_DONE; });
  auto guarded = promise.exclusiveJoin(kj::mv(watchdog))
                     .then([](T &&value) -> std::optional<T> { return std::optional<T>(kj::mv(value)); },
                           [&lost](kj::Exception &&e) -> std::optional<T> {
                             lost = e.getDescription().cStr();
                             return std::nullopt;
                           });
  std::optional<T> out = waitAlive(kj::mv(guarded), what); // the dispatcher's heartbeat: ConnectionError
  if (!out) {
    directWhy_ = "lost the direct link to " + reader_->where + ": " + lost;
    directOff_ = true;
    reader_.reset();
  }
  return out;
}

Client::Reader *Client::reader() {
  if (reader_ || directOff_) return reader_.get();
  directOff_ = true; // unless the link comes up below
  auto r = waitAlive(rpc_->session.directReadsRequest().send(), "asking where to read tensors");
  std::string address = r.getAddress().cStr(), token = r.getToken().cStr();
  if (address.empty()) {
    directWhy_ = "the dispatcher names no worker to read from (no gt-worker --listen, or a sharding config)";
    return nullptr;
  }
  auto link = std::make_unique<Reader>();
  link->where = "worker " + std::to_string(r.getWorker()) + " at " + address;
  std::string host = address;
  int port = 0;
  if (address.rfind("unix:", 0) != 0) {
    auto colon = address.rfind(':');
    host = address.substr(0, colon == std::string::npos ? 0 : colon);
    port = colon == std::string::npos ? 0 : std::atoi(address.c_str() + colon + 1);
  }
  try {
    link->connection = std::make_unique<transport::Connection>(host, port, transport::TlsOptions{"", "", tlsCa_}, 5.0);
    auto req = link->connection->main<wire::WorkerDoor>().openRequest();
    req.setToken(token);
    auto deadline = kj::systemPreciseMonotonicClock().now() + 5 * kj::SECONDS;
    link->reader = rpc_->timer().timeoutAt(deadline, req.send()).wait(rpc_->ws()).getReader();
  } catch (const kj::Exception &e) {
    directWhy_ = "cannot open a direct link to " + link->where + ": " + e.getDescription().cStr();
    return nullptr;
  } catch (const std::runtime_error &e) {
    directWhy_ = "cannot open a direct link to " + link->where + ": " + e.what();
    return nullptr;
  }
  directWhy_ = "direct (" + link->where + ")";
  directOff_ = false;
  reader_ = std::move(link);
  return reader_.get();
}

std::string Client::readPath() const {
  if (reader_ || directWhy_ == "not yet asked") return directWhy_;
  return "through the dispatcher: " + directWhy_;
}

std::optional<FetchedTensor> Client::fetchDirect(Reader &link, uint64_t id) {
  auto it = types_.find(id);
  if (it == types_.end()) return std::nullopt; // the dispatcher says what is wrong
  FetchedTensor out;
  out.type = it->second.type;
  uint64_t total = uint64_t(numBytes(out.type));
  do {
    auto req = link.reader.fetchRequest();
    req.setId(id);
    req.setSequence(submits_);
    auto type = req.initType();
    type.setDtype(uint8_t(out.type.dtype));
    auto shape = type.initShape(unsigned(out.type.shape.size()));
    for (unsigned i = 0; i < out.type.shape.size(); ++i) shape.set(i, out.type.shape[i]);
    req.setOffset(out.bytes.size());
    req.setLength(wire::kReadChunkBytes);
    auto r = waitDirect(req.send(), "fetching a tensor");
    if (!r || !r->getHere()) return std::nullopt;
    auto f = r->getResult();
    if (f.getError().size() > 0) throw RemoteError(f.getError().cStr());
    auto data = f.getData();
    if (data.size() == 0) break;
    out.bytes.append(reinterpret_cast<const char *>(data.begin()), data.size());
  } while (out.bytes.size() < total);
  return out;
}

template <typename T> T Client::waitAlive(kj::Promise<T> promise, const char *what) {
  try {
    auto watchdog = heartbeat().then([]() -> kj::Promise<T> { return kj::NEVER_DONE; });
    return promise.exclusiveJoin(kj::mv(watchdog)).wait(rpc_->ws());
  } catch (const kj::Exception &e) {
    std::string why = e.getDescription().cStr();
    if (why.find("timed out") != std::string::npos)
      throw ConnectionError(std::string(what) + ": the GT dispatcher at " + where_ + " answered no ping for " +
                            std::to_string(int(timeout_)) + " s (stopped or wedged?); GT_TIMEOUT sets how long to wait");
    throw ConnectionError(std::string(what) + ": lost the GT dispatcher at " + where_ + ": " + why +
                          (streamError_.empty() ? "" : " (" + streamError_ + ")"));
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
  return it->second.type;
}

std::pair<uint64_t, TensorType> Client::emit(OpCode op, const std::vector<uint64_t> &operands, OpAttrs attrs,
                                             std::string data, std::string location) {
  // The operands' types into scratch space that keeps its capacity from op to op (this runs
  // once per op a user issues: no allocation when nothing grows).
  std::vector<TensorType> &types = scratchTypes_;
  types.resize(operands.size());
  bool meta = meta_;
  for (size_t i = 0; i < operands.size(); ++i) {
    auto it = types_.find(operands[i]);
    if (it == types_.end()) typeOf(operands[i]); // throws: not held
    const TensorType &t = it->second.type;
    meta = meta || it->second.meta;
    types[i].dtype = t.dtype;
    types[i].shape.assign(t.shape.begin(), t.shape.end());
  }
  TensorType result = inferType(op, types, attrs); // throws before anything is recorded
  if (meta) { // a shape and a dtype only: nothing to record or send
    uint64_t id = nextId_++;
    types_.emplace(id, Held{result, internLocation(location), true});
    return {id, std::move(result)};
  }
  if (limits_.sessionMemoryBytes) {
    double bytes = double(numBytes(result)), most = double(limits_.sessionMemoryBytes) * std::max(1u, limits_.workers);
    if (bytes > most)
      throw OutOfMemoryError(std::string(opInfo(op).mnemonic) + ": a " + dtypeName(result.dtype) + shapeString(result.shape) +
                             " tensor needs " + gib(bytes) + ", more than this session may hold (" +
                             gib(double(limits_.sessionMemoryBytes)) + " on each of " +
                             std::to_string(std::max(1u, limits_.workers)) + " worker(s))");
  }
  if (op == OpCode::Upload && data.size() > uploadChunk()) return emitLargeUpload(std::move(attrs), std::move(data), std::move(location));
  drainReleased();
  if (bufferedOps_ >= batchLimit()) sendBuffered(); // (the frees filled the batch)
  Instruction &inst = nextSlot();
  inst.op = op;
  inst.result = nextId_++;
  inst.operands.assign(operands.begin(), operands.end());
  inst.attrs = std::move(attrs);
  bufferedBytes_ += data.size();
  inst.data = std::move(data);
  inst.location.assign(location);
  inst.signal.assign(signal_);
  inst.backward = backward_ && !signal_.empty();
  // Carried: the dispatcher verifies it, it does not infer it again.
  if (!inst.type) inst.type.emplace();
  inst.type->dtype = result.dtype;
  inst.type->shape.assign(result.shape.begin(), result.shape.end());
  types_.emplace(inst.result, Held{result, internLocation(inst.location)});
  record(inst.op, inst.result, inst.operands, inst.location, result);
  uint64_t id = inst.result;
  if (bufferedOps_ >= batchLimit() || bufferedBytes_ >= flushBytes()) flush();
  return {id, std::move(result)};
}

uint32_t Client::internLocation(const std::string &location) {
  if (location.empty()) return 0;
  if (auto it = locationIds_.find(location); it != locationIds_.end()) return it->second;
  if (locations_.size() >= kMaxLocations) return 0; // a program generating code without end: not known
  locationIds_.emplace(location, uint32_t(locations_.size()));
  locations_.push_back(location);
  return uint32_t(locations_.size() - 1);
}

const std::string &Client::locationOf(uint64_t id) const {
  auto it = types_.find(id);
  return it == types_.end() ? locations_[0] : locations_[it->second.location];
}

Instruction &Client::nextSlot(size_t ops) {
  // Slots past buffered_ are instructions sent by an earlier flush: overwritten field by field,
  // their strings and lists keep their capacity.
  bufferedOps_ += ops;
  if (buffered_ == buffer_.size()) buffer_.emplace_back();
  return buffer_[buffered_++];
}

std::pair<uint64_t, TensorType> Client::emitLargeUpload(OpAttrs attrs, std::string data, std::string location) {
  // x = reshape(concat(piece_0, ..., piece_k)), each piece a 1-D upload of at most uploadChunk()
  // bytes; concat joins kMaxConcatOperands at a time.
  size_t elem = dtypeSize(attrs.dtype), chunk = uploadChunk() / elem * elem;
  std::vector<uint64_t> pieces;
  for (size_t offset = 0; offset < data.size(); offset += chunk) {
    size_t n = std::min(chunk, data.size() - offset);
    OpAttrs piece;
    piece.dtype = attrs.dtype;
    piece.shape = {int64_t(n / elem)};
    pieces.push_back(emit(OpCode::Upload, {}, piece, data.substr(offset, n), location).first);
  }
  data.clear();
  OpAttrs join;
  join.axes = {0};
  while (pieces.size() > 1) {
    std::vector<uint64_t> joined;
    for (size_t i = 0; i < pieces.size(); i += kMaxConcatOperands) {
      std::vector<uint64_t> group(pieces.begin() + long(i), pieces.begin() + long(std::min(pieces.size(), i + kMaxConcatOperands)));
      if (group.size() == 1) {
        joined.push_back(group[0]);
        continue;
      }
      joined.push_back(emit(OpCode::Concat, group, join, {}, location).first);
      for (uint64_t id : group) release(id);
    }
    pieces = std::move(joined);
  }
  OpAttrs reshape;
  reshape.shape = attrs.shape;
  auto result = emit(OpCode::Reshape, {pieces[0]}, reshape, {}, location);
  release(pieces[0]);
  return result;
}

void Client::drainReleased() {
  std::vector<uint64_t> released;
  {
    std::lock_guard lock(releaseMutex_);
    released.swap(released_);
  }
  // Meta tensors were never sent: forgotten here, no free names them.
  std::erase_if(released, [this](uint64_t id) {
    auto it = types_.find(id);
    if (it == types_.end() || !it->second.meta) return false;
    types_.erase(it);
    return true;
  });
  // One free names all of them, up to kMaxFreeOperands (a backward pass drops its graph's
  // saved tensors at once: 10856 frees after a 600-step LSTM); a long burst is cut into frees
  // and batches the dispatcher takes (a batch's limit counts each tensor a free names).
  size_t most = std::min(size_t(kMaxFreeOperands), batchLimit());
  for (size_t begin = 0; begin < released.size(); begin += most) {
    size_t end = std::min(released.size(), begin + most);
    if (bufferedOps_ + (end - begin) > batchLimit()) sendBuffered();
    Instruction &free = nextSlot(end - begin);
    free.op = OpCode::Free;
    free.result = 0;
    free.operands.assign(released.begin() + long(begin), released.begin() + long(end));
    free.attrs = OpAttrs{};
    free.data.clear();
    free.location.clear();
    free.signal.clear();
    free.backward = false;
    free.type.reset(); // a free carries no result type
    for (size_t i = begin; i < end; ++i)
      if (auto it = types_.find(released[i]); it != types_.end()) {
        record(OpCode::Free, 0, {&released[i], 1}, free.location, it->second.type); // the tape: one entry per tensor
        types_.erase(it);
      }
  }
}

void Client::record(OpCode op, uint64_t result, std::span<const uint64_t> operands, const std::string &location,
                    const TensorType &type) {
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - opened_).count();
  if (tape_.size() < kTapeLength) {
    tape_.push_back(TapeEntry{op, result, {operands.begin(), operands.end()}, type, location, seconds});
    return;
  }
  // Full: the oldest entry is overwritten in place (its lists and text keep their capacity).
  TapeEntry &e = tape_[tapeStart_];
  tapeStart_ = (tapeStart_ + 1) % kTapeLength;
  e.op = op;
  e.result = result;
  e.operands.assign(operands.begin(), operands.end());
  e.type.dtype = type.dtype;
  e.type.shape.assign(type.shape.begin(), type.shape.end());
  e.location.assign(location);
  e.seconds = seconds;
}

std::vector<TapeEntry> Client::tape() const {
  std::vector<TapeEntry> out(tape_.begin() + long(tapeStart_), tape_.end()); // oldest first
  out.insert(out.end(), tape_.begin(), tape_.begin() + long(tapeStart_));
  return out;
}

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
  sendBuffered();
}

void Client::sendBuffered() {
  if (buffered_ == 0) return;
  // Flow control: a submit resolves when more may be sent (the dispatcher holds it while this
  // session has too much queued on the workers); wait for the previous one first.
  KJ_IF_MAYBE(previous, rpc_->submitted) {
    kj::Promise<void> p = kj::mv(*previous);
    rpc_->submitted = nullptr;
    try {
      waitAlive(kj::mv(p), "sending instructions");
    } catch (const ConnectionError &e) {
      if (streamError_.empty()) streamError_ = e.what();
    }
  }
  int64_t start = tracing_ ? monotonicNs() : 0;
  size_t instructions = buffered_, bytes = bufferedBytes_;
  uint64_t words = 64 + 1; // as wire::wireSize
  for (size_t i = 0; i < buffered_; ++i) words += wire::wireWords(buffer_[i]);
  auto req = rpc_->session.submitRequest(capnp::MessageSize{words, 0});
  auto list = req.initBatch().initInstructions(unsigned(buffered_));
  for (unsigned i = 0; i < buffered_; ++i) {
    wire::toWire(buffer_[i], list[i]);
    if (!buffer_[i].data.empty()) std::string().swap(buffer_[i].data); // an upload's bytes: not kept
  }
  buffered_ = 0;
  bufferedOps_ = 0;
  bufferedBytes_ = 0;
  afterWait_ = false;
  submits_++;
  rpc_->submitted = req.send().catch_([this](kj::Exception &&e) {
    if (streamError_.empty()) streamError_ = e.getDescription().cStr();
  }).eagerlyEvaluate(nullptr);
  rpc_->ws().poll(); // push the bytes out without waiting for anything
  if (tracing_ && flushes_.size() < kMaxTraceEvents)
    flushes_.push_back({"flush", "flush", start, monotonicNs() - start,
                        "{\"instructions\": " + std::to_string(instructions) + ", \"bytes\": " + std::to_string(bytes) + "}"});
}

FetchedTensor Client::fetch(uint64_t id) {
  if (isMeta(id)) throw std::invalid_argument("Cannot copy out of meta tensor; no data!");
  flush();
  if (Reader *link = reader())
    if (auto got = fetchDirect(*link, id)) {
      afterWait_ = true;
      return std::move(*got);
    }
  auto req = rpc_->session.fetchRequest();
  req.setId(id);
  auto response = waitAlive(req.send(), "fetching a tensor");
  afterWait_ = true;
  auto r = response.getResult();
  if (r.hasError() && r.getError().size() > 0) throw RemoteError(r.getError().cStr());
  FetchedTensor out;
  out.type.dtype = DType(r.getDtype());
  for (int64_t s : r.getShape()) out.type.shape.push_back(s);
  out.bytes.assign(reinterpret_cast<const char *>(r.getData().begin()), r.getData().size());
  return out;
}

void Client::sync() {
  flush();
  waitSent();
  afterWait_ = true;
}

void Client::waitSent() {
  if (Reader *link = reader()) {
    auto req = link->reader.syncRequest();
    req.setSequence(submits_);
    auto r = waitDirect(req.send(), "synchronizing");
    if (r && r->getWhole()) return; // (else work ran on other workers too: the dispatcher waits for all)
  }
  waitAlive(rpc_->session.syncRequest().send().ignoreResult(), "synchronizing");
}

Stats Client::stats() {
  sync(); // counters then include everything this client sent
  auto r = waitAlive(rpc_->session.statsRequest().send(), "reading stats");
  Stats out;
  for (auto s : r.getStats()) out.values[s.getName().cStr()] = s.getValue();
  for (auto n : r.getNotes()) out.notes.push_back(n.cStr());
  for (auto w : r.getByWorker()) {
    auto &values = out.byWorker[w.getIndex()];
    for (auto s : w.getStats()) values[s.getName().cStr()] = s.getValue();
  }
  return out;
}

void Client::flushUnlessOnlyFrees() {
  bool onlyFrees = true;
  for (size_t i = 0; i < buffered_ && onlyFrees; ++i) onlyFrees = buffer_[i].op == OpCode::Free;
  if (!onlyFrees) flush(); // (released tensors not yet queued as frees stay so either way)
}

void Client::startTrace() {
  flushUnlessOnlyFrees(); // what was issued before is not the trace's
  auto req = rpc_->session.traceRequest();
  req.setOn(true);
  waitAlive(req.send(), "starting a trace");
  tracing_ = true;
  flushes_.clear();
}

std::pair<int64_t, int64_t> Client::dispatcherOffsetNs() {
  int64_t offset = 0, rtt = INT64_MAX;
  for (int i = 0; i < 5; ++i) {
    int64_t t0 = monotonicNs();
    auto r = waitAlive(rpc_->session.clockRequest().send(), "reading the dispatcher's clock");
    int64_t t1 = monotonicNs();
    if (t1 - t0 < rtt) offset = r.getNs() - (t0 + t1) / 2, rtt = t1 - t0;
  }
  return {offset, rtt};
}

std::vector<Client::ProcessTrace> Client::stopTrace() {
  flushUnlessOnlyFrees(); // the trace holds everything issued inside it, once it has run
  waitSent();
  tracing_ = false;
  auto req = rpc_->session.traceRequest();
  req.setOn(false);
  auto r = waitAlive(req.send(), "stopping a trace");
  int64_t offset = dispatcherOffsetNs().first;
  std::vector<ProcessTrace> out;
  for (auto p : r.getProcesses()) {
    ProcessTrace t{p.getPid(), p.getLabel().cStr(), p.getOffsetNs(), p.getRttNs(), {}};
    for (auto e : p.getEvents())
      t.events.push_back({e.getName().cStr(), e.getCategory().cStr(), e.getStartNs() - offset, e.getDurationNs(), e.getArgs().cStr()});
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<std::string> Client::loadConfig(const std::string &yaml, const std::string &path, uint64_t autoShardBytes) {
  flush(); // instructions issued before the config keep the old one
  auto req = rpc_->session.loadConfigRequest();
  req.setYaml(yaml);
  req.setPath(path);
  req.setAutoShardBytes(autoShardBytes);
  auto result = waitAlive(req.send(), "loading a config");
  std::string error = result.getError().cStr();
  std::vector<std::string> signals;
  for (auto name : result.getSignals()) signals.emplace_back(name.cStr());
  if (!error.empty()) throw std::invalid_argument(error); // the session keeps its old config
  // A sharded tensor lives in pieces, which only the dispatcher puts together: the next read
  // asks it again where to read (no worker, for a config that places tensors; the same one for
  // a config of `compile:` entries only, as gt.compile loads).
  reader_.reset();
  directOff_ = false;
  directWhy_ = "not yet asked";
  return signals;
}

uint32_t Client::numWorkers() {
  auto r = waitAlive(rpc_->session.infoRequest().send(), "asking for the workers");
  setLimits(limitsOf(r.getLimits()));
  return r.getWorkers();
}

struct Monitor::Rpc {
  transport::Connection connection;
  wire::Dispatcher::Client dispatcher;
  Rpc(const std::string &host, int port, double timeoutSeconds, const std::string &caFile)
      : connection(host, port, transport::TlsOptions{"", "", caFile}, timeoutSeconds),
        dispatcher(connection.main<wire::Dispatcher>()) {}
};

Monitor::Monitor(const std::string &host, int port, const std::string &token, double timeoutSeconds,
                 const std::string &tlsCaFile)
    : where_(transport::addressString(host, port)), token_(token), timeout_(timeoutSeconds) {
  try {
    rpc_ = std::make_unique<Rpc>(host, port, timeoutSeconds, tlsCaFile);
  } catch (const std::runtime_error &e) {
    throw ConnectionError("cannot connect to the GT dispatcher at " + where_ + ": " + e.what());
  }
}

Monitor::~Monitor() = default;

Monitor::Snapshot Monitor::poll() {
  auto req = rpc_->dispatcher.monitorRequest();
  req.setToken(token_);
  auto deadline = kj::systemPreciseMonotonicClock().now() + int64_t(timeout_ * 1000) * kj::MILLISECONDS;
  Snapshot out;
  try {
    auto r = rpc_->connection.timer().timeoutAt(deadline, req.send()).wait(rpc_->connection.waitScope());
    for (auto s : r.getDispatcher()) out.dispatcher[s.getName().cStr()] = s.getValue();
    for (auto w : r.getWorkers()) {
      Worker worker{w.getIndex(), w.getDevice().cStr(), w.getAlive(), w.getAnswered(), {}, {}};
      for (auto s : w.getStats()) worker.stats[s.getName().cStr()] = s.getValue();
      for (auto u : w.getSessions()) worker.sessions[u.getSession()] = {u.getBusyMs(), u.getBytes()};
      out.workers.push_back(std::move(worker));
    }
    for (auto s : r.getSessions())
      out.sessions.push_back(Session{s.getSession(), s.getName().cStr(), s.getLabel().cStr(), s.getWeight(),
                                     s.getOpenSeconds(), s.getInstructions(), s.getUploadBytes(), s.getFetchBytes(),
                                     s.getErrors(), s.getLastError().cStr()});
  } catch (const kj::Exception &e) {
    throw ConnectionError("the GT dispatcher at " + where_ + ": " + e.getDescription().cStr());
  }
  return out;
}

} // namespace gt::client
