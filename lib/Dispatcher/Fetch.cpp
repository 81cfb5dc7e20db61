// Fetching a tensor for its client: from its worker in chunks, or from every worker holding a
// piece of it (blocks concatenated, partial sums combined).
#include "Session.h"

#include <kj/debug.h>

namespace gt::dispatcher {

kj::Promise<void> SessionImpl::fetch(FetchContext context) {
  uint64_t id = context.getParams().getId();
  auto it = tensors_.find(id);
  if (it == tensors_.end()) {
    fetchFailed(context.getResults().initResult(), "tensor " + std::to_string(id) + " does not exist in this session" +
                                                    (refusedBatch_.empty() ? "" : " (" + refusedBatch_ + ")"));
    return kj::READY_NOW;
  }
  const Entry &t = it->second;
  if (!t.error.empty()) {
    fetchFailed(context.getResults().initResult(), t.error);
    return kj::READY_NOW;
  }
  if (t.layout.workers.size() > 1) return fetchSharded(context, t);
  int64_t worker = t.worker;
  if (!state_.workers[worker].alive) {
    fetchFailed(context.getResults().initResult(),
             "worker " + std::to_string(worker) + " died: " + state_.workers[worker].deathReason);
    return kj::READY_NOW;
  }
  return fetchFrom(worker, t.globalId, false).then([this, context](Piece &&piece) mutable {
    auto out = context.getResults().initResult();
    if (!piece.error.empty()) return fetchFailed(out, piece.error);
    fetched(piece.bytes.size());
    setPiece(out, piece.type, piece.bytes);
  });
}

kj::Promise<void> SessionImpl::fetchSharded(FetchContext context, const Entry &t) {
  size_t n = t.layout.workers.size();
  auto parts = std::make_shared<std::vector<Piece>>(n);
  auto promises = kj::heapArrayBuilder<kj::Promise<void>>(n);
  for (size_t r = 0; r < n; ++r) {
    int64_t w = t.layout.workers[r];
    WorkerRef &ref = state_.workers[size_t(w)];
    if (!ref.alive) {
      (*parts)[r].error = "worker " + std::to_string(w) + " died: " + ref.deathReason;
      continue;
    }
    bool errorOnly = t.layout.isReplicated() && r > 0;
    promises.add(fetchFrom(w, t.globalId, errorOnly).then([parts, r](Piece &&piece) { (*parts)[r] = std::move(piece); }));
  }
  TensorType type = t.type;
  Sharding layout = t.layout;
  return kj::joinPromises(promises.finish()).then([this, context, parts, type, layout]() mutable {
    auto out = context.getResults().initResult();
    // The first error that is not another worker's echo names the failing op.
    std::string error;
    for (const Piece &p : *parts)
      if (!p.error.empty() && (error.empty() || error.find(kPeerFailed) != std::string::npos)) error = p.error;
    if (!error.empty()) return fetchFailed(out, error);
    std::string bytes;
    try {
      std::vector<std::string> pieces;
      for (Piece &p : *parts) pieces.push_back(std::move(p.bytes));
      bytes = assemble(type, layout, pieces);
    } catch (const std::exception &e) {
      return fetchFailed(out, e.what());
    }
    setPiece(out, type, bytes);
    fetched(bytes.size());
  });
}

void SessionImpl::fetchFailed(wire::Fetched::Builder out, const std::string &message) {
  state_.fetchErrors++;
  if (SessionRecord *r = record()) {
    r->errors++;
    r->lastError = message;
  }
  setError(out, message);
}

void SessionImpl::fetched(size_t bytes) {
  state_.fetchBytes += bytes;
  if (SessionRecord *r = record()) r->fetchBytes += bytes;
}

void SessionImpl::setPiece(wire::Fetched::Builder out, const TensorType &type, const std::string &bytes) {
  out.setDtype(uint8_t(type.dtype));
  auto shape = out.initShape(unsigned(type.shape.size()));
  for (unsigned i = 0; i < type.shape.size(); ++i) shape.set(i, type.shape[i]);
  out.setData(kj::arrayPtr(reinterpret_cast<const kj::byte *>(bytes.data()), bytes.size()));
}

kj::Promise<SessionImpl::Piece> SessionImpl::fetchFrom(int64_t w, uint64_t globalId, bool errorOnly) {
  auto piece = std::make_shared<Piece>();
  return fetchChunk(w, globalId, errorOnly, piece).then([piece]() { return std::move(*piece); },
                                                       [this, w, piece](kj::Exception &&e) {
                                                         markDead(w, e.getDescription().cStr());
                                                         piece->error = "worker " + std::to_string(w) + " died: " +
                                                                        state_.workers[size_t(w)].deathReason;
                                                         return std::move(*piece);
                                                       });
}

kj::Promise<void> SessionImpl::fetchChunk(int64_t w, uint64_t globalId, bool errorOnly, std::shared_ptr<Piece> piece) {
  auto req = state_.workers[size_t(w)].client.fetchRequest();
  req.setSession(id_);
  req.setId(globalId);
  req.setErrorOnly(errorOnly);
  req.setOffset(piece->bytes.size());
  req.setLength(kFetchChunk);
  return req.send().then([this, w, globalId, errorOnly, piece](capnp::Response<wire::Worker::FetchResults> &&r)
                             -> kj::Promise<void> {
    auto result = r.getResult();
    piece->error = result.getError().cStr();
    piece->type.dtype = DType(result.getDtype() < kNumDTypes ? result.getDtype() : 0);
    piece->type.shape.clear();
    for (int64_t d : result.getShape()) piece->type.shape.push_back(d);
    if (!piece->error.empty() || errorOnly) return kj::READY_NOW;
    auto data = result.getData();
    piece->bytes.append(reinterpret_cast<const char *>(data.begin()), data.size());
    uint64_t total = 0;
    try {
      total = uint64_t(numBytes(piece->type));
    } catch (const std::exception &e) {
      piece->error = e.what();
      return kj::READY_NOW;
    }
    if (piece->bytes.size() < total && data.size() > 0) return fetchChunk(w, globalId, false, piece);
    return kj::READY_NOW;
  });
}

std::string SessionImpl::assemble(const TensorType &type, const Sharding &layout, const std::vector<std::string> &pieces) {
  size_t elem = dtypeSize(type.dtype), total = size_t(numElements(type.shape)) * elem;
  if (layout.isReplicated()) {
    if (pieces[0].size() != total) throw std::runtime_error("a fetched copy has the wrong size");
    return pieces[0];
  }
  if (layout.isSplit())
    return concatBlocks(std::vector<std::string_view>(pieces.begin(), pieces.end()), type.shape, elem, layout.axis);
  for (const std::string &p : pieces)
    if (p.size() != total) throw std::runtime_error("a fetched part has the wrong size");
  std::string out = pieces[0];
  for (size_t r = 1; r < pieces.size(); ++r) combineParts(type.dtype, layout.reduce, out.data(), pieces[r].data(), total / elem);
  return out;
}

} // namespace gt::dispatcher
