#include "graph.h"

#include "../common/error.h"
#include "../common/thread_spare.h"

namespace kb::engine {

namespace {
OpTotals::Sum as_sum(std::int64_t v) { return static_cast<OpTotals::Sum>(v); }
[[noreturn]] __attribute__((noinline, cold)) void too_many_ops(std::int64_t limit) {
  throw InputError("the op graph would hold more than the " + std::to_string(limit) + " ops its estimate allows");
}
}  // namespace

// The per-op storage of the last graph destroyed on this thread, emptied, for the next graph
// to build in (ThreadSpare). A graph of 10^5 ops takes about 15 MB; taken fresh at each run
// (with the allocator free to hand it back at each free) its pages fault in again every
// time. Larger graphs' storage is not kept.
struct Graph::Storage {
  std::vector<Op> ops;
  std::vector<OpTimes> times;
  std::vector<Edge> edges;
  std::vector<std::int32_t> waits, completion_dependents;
};

namespace {
constexpr std::size_t kSpareOps = std::size_t{1} << 18;
}  // namespace

void Graph::swap_storage(Storage& s) {
  ops_.swap(s.ops);
  times_.swap(s.times);
  edges_.swap(s.edges);
  waits_.swap(s.waits);
  completion_dependents_.swap(s.completion_dependents);
}

Graph::Graph() {
  if (Storage* s = ThreadSpare<Storage>::get()) swap_storage(*s);
}

Graph::~Graph() {
  Storage* s = ThreadSpare<Storage>::get();
  if (!s || ops_.capacity() > kSpareOps || ops_.capacity() <= s->ops.capacity()) return;
  ops_.clear(), times_.clear(), edges_.clear(), waits_.clear(), completion_dependents_.clear();
  swap_storage(*s);  // the spare's old storage goes with this graph's members
}

const char* to_string(ResourceClass c) {
  static const char* names[] = {"matrix", "vector", "dma", "ipcq", "cube_link", "sip_link", "ipcq_out"};
  return names[static_cast<int>(c)];
}

const char* to_string(OpKind k) {
  static const char* names[] = {"dma_load", "dma_store", "matmul", "vector", "copy", "wait", "signal"};
  return names[static_cast<int>(k)];
}

ResourceId Graph::add_resource(std::string name, ResourceClass cls, std::int32_t sip, Discipline discipline) {
  resources_.push_back({std::move(name), cls, sip, discipline});
  totals_.resource_busy_ps.push_back(0);
  totals_.resource_bytes.push_back(0);
  totals_.resource_ops.push_back(0);
  return static_cast<ResourceId>(resources_.size() - 1);
}

std::int32_t Graph::add_label(std::string label) {
  labels_.push_back(std::move(label));
  return static_cast<std::int32_t>(labels_.size() - 1);
}

void tally(OpTotals& t, const Op& op, const std::vector<Resource>& resources, bool held) {
  if (op.resource != kNoResource) {
    const auto r = static_cast<std::size_t>(op.resource);
    t.busy_ps[static_cast<std::size_t>(resources[r].cls)] += as_sum(op.busy_ps);
    if (held) {
      t.resource_busy_ps[r] += as_sum(op.busy_ps);
      t.resource_bytes[r] += as_sum(op.bytes);
    }
  }
  t.vector_ops += as_sum(op.vector_ops);
  t.sram_read_bytes += as_sum(op.sram_read);
  t.sram_write_bytes += as_sum(op.sram_write);
  switch (op.kind) {
    case OpKind::matmul:
      t.mac_cycles += as_sum(op.cycles);
      t.macs += as_sum(op.macs);
      break;
    case OpKind::dma_load: t.hbm_read_bytes += as_sum(op.bytes); break;
    case OpKind::dma_store: t.hbm_write_bytes += as_sum(op.bytes); break;
    case OpKind::copy:
      // Per level, every hop except a sender's out-port (a PE-level copy is counted once, at
      // the receiver's in-port).
      if (op.resource == kNoResource || resources[static_cast<std::size_t>(op.resource)].cls == ResourceClass::ipcq_out) break;
      t.link_bytes[static_cast<std::size_t>(op.level)] += as_sum(op.bytes);
      ++t.link_copies[static_cast<std::size_t>(op.level)];
      break;
    default: break;
  }
}

OpId Graph::add_op(const Op& op, const OpId* deps, std::size_t ndeps) {
  KB_INTERNAL_CHECK(op.resource == kNoResource ||
                        (op.resource >= 0 && op.resource < static_cast<ResourceId>(resources_.size())),
                    "op on an unknown resource");
  KB_INTERNAL_CHECK(op.busy_ps >= 0 && op.latency_ps >= 0, "negative op duration");
  KB_INTERNAL_CHECK(ops_.size() < static_cast<std::size_t>(INT32_MAX), "too many ops");
  if (static_cast<std::int64_t>(ops_.size()) >= op_limit_) too_many_ops(op_limit_);
  const OpId id = static_cast<OpId>(ops_.size());
  std::int32_t flags = op.kind == OpKind::signal ? OpTimes::kSignal : 0;
  if (op.resource != kNoResource) {
    if (resources_[static_cast<std::size_t>(op.resource)].discipline == Discipline::arbitrated)
      flags |= OpTimes::kArbitrated;
    ++totals_.resource_ops[static_cast<std::size_t>(op.resource)];
  }
  // Field by field into its slot: an OpTimes built on the stack and copied was read back
  // as one 8-byte word over its two 4-byte fields just stored (store forwarding fails).
  OpTimes& t = times_.emplace_back();
  t.busy_ps = op.busy_ps, t.latency_ps = op.latency_ps, t.resource = op.resource, t.flags = flags;
  tally(totals_, op, resources_);
  completion_dependents_.push_back(0);
  std::int32_t waits = 0;
  for (std::size_t i = 0; i < ndeps; ++i) {
    if (deps[i] == kNoOp) continue;
    KB_INTERNAL_CHECK(deps[i] >= 0 && deps[i] <= id, "dependency on an unknown op");
    edges_.push_back({id, deps[i]});
    ++completion_dependents_[static_cast<std::size_t>(deps[i])];
    ++waits;
  }
  waits_.push_back(waits);
  // The whole op is copied last: the caller has just written it field by field, and reading
  // it back in wider words at once would wait on those stores (store forwarding fails).
  ops_.push_back(op);
  return id;
}

void Graph::add_dep(OpId op, OpId dep) {
  KB_INTERNAL_CHECK(op >= 0 && op < static_cast<OpId>(ops_.size()), "dependency of an unknown op");
  KB_INTERNAL_CHECK(dep >= 0 && dep < static_cast<OpId>(ops_.size()), "dependency on an unknown op");
  edges_.push_back({op, dep});
  ++waits_[static_cast<std::size_t>(op)];
  ++completion_dependents_[static_cast<std::size_t>(dep)];
}

void Graph::add_head_dep(OpId op, OpId dep) {
  KB_INTERNAL_CHECK(op >= 0 && op < static_cast<OpId>(ops_.size()), "dependency of an unknown op");
  KB_INTERNAL_CHECK(dep >= 0 && dep < static_cast<OpId>(ops_.size()), "dependency on an unknown op");
  head_edges_.push_back({op, dep});
  ++waits_[static_cast<std::size_t>(op)];
}

void Graph::set_busy(OpId op, ps_t busy_ps) {
  KB_INTERNAL_CHECK(op >= 0 && op < static_cast<OpId>(ops_.size()) && busy_ps >= 0, "set_busy on an unknown op");
  // Read from the packed times (an Op is likelier out of cache); the Op is only written.
  const OpTimes& t = times_[static_cast<std::size_t>(op)];
  change_busy(op, t.resource, t.busy_ps, busy_ps);
}

void Graph::set_first_busy(OpId op, ResourceId resource, ps_t busy_ps) {
  KB_INTERNAL_CHECK(op >= 0 && op < static_cast<OpId>(ops_.size()) && busy_ps >= 0 && resource >= 0 &&
                        resource < static_cast<ResourceId>(resources_.size()),
                    "set_first_busy on an unknown op");
  change_busy(op, resource, 0, busy_ps);
}

void Graph::change_busy(OpId op, ResourceId resource, ps_t old_busy_ps, ps_t busy_ps) {
  if (resource != kNoResource) {
    const auto r = static_cast<std::size_t>(resource);
    totals_.busy_ps[static_cast<std::size_t>(resources_[r].cls)] += as_sum(busy_ps) - as_sum(old_busy_ps);
    totals_.resource_busy_ps[r] += as_sum(busy_ps) - as_sum(old_busy_ps);
  }
  times_[static_cast<std::size_t>(op)].busy_ps = busy_ps;
  ops_[static_cast<std::size_t>(op)].busy_ps = busy_ps;
}

void Graph::add_sram(OpId op, std::int64_t read, std::int64_t write) {
  KB_INTERNAL_CHECK(op >= 0 && op < static_cast<OpId>(ops_.size()) && read >= 0 && write >= 0, "add_sram on an unknown op");
  ops_[static_cast<std::size_t>(op)].sram_read += read;
  ops_[static_cast<std::size_t>(op)].sram_write += write;
  totals_.sram_read_bytes += as_sum(read);
  totals_.sram_write_bytes += as_sum(write);
}

void Graph::set_action(OpId op, std::function<void()> fn) {
  if (actions_.size() < ops_.size()) actions_.resize(ops_.size());
  actions_[static_cast<std::size_t>(op)] = std::move(fn);
}

std::string Graph::op_name(OpId id) const {
  const Op& op = ops_[static_cast<std::size_t>(id)];
  std::string s = "op " + std::to_string(id) + " (" + labels_[static_cast<std::size_t>(op.label)] + ": " +
                  to_string(op.kind);
  if (op.resource != kNoResource) s += " on " + resources_[static_cast<std::size_t>(op.resource)].name;
  else s += " at sip" + std::to_string(op.rank.sip) + ".cube" + std::to_string(op.rank.cube) + ".pe" + std::to_string(op.rank.pe);
  return s + ")";
}

}  // namespace kb::engine
