// The explicit op graph the reference engine simulates: resources with in-order queues,
// ops that occupy one resource (or none) and depend on earlier ops.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "../../device/common/units.h"

namespace kb::engine {

// ipcq: a PE's copy-queue in-port; ipcq_out: its out-port (src/device/common/network.h).
enum class ResourceClass : std::int32_t { matrix = 0, vector, dma, ipcq, cube_link, sip_link, ipcq_out, count };
constexpr int kResourceClasses = static_cast<int>(ResourceClass::count);
const char* to_string(ResourceClass c);

// wait: a synchronisation point that completes when its deps do.
// signal: like wait, but created before its deps are known and never complete without one
// (a wait on a signal nobody raises is a deadlock, not a no-op).
enum class OpKind : std::int32_t { dma_load = 0, dma_store, matmul, vector, copy, wait, signal };
const char* to_string(OpKind k);

// Link levels for copy accounting.
enum class LinkLevel : std::int32_t { pe = 0, cube = 1, sip = 2 };
constexpr int kLinkLevels = 3;

using OpId = std::int32_t;
using ResourceId = std::int32_t;
constexpr OpId kNoOp = -1;
constexpr ResourceId kNoResource = -1;

struct Rank {
  std::int32_t sip = 0, cube = 0, pe = 0;
};

// How a resource picks its next op (docs/adr/0007-communication-timing.md).
// in_order: the ops queued on it run in the order they were added (a PE's matrix, vector
//   and DMA engines keep program order).
// arbitrated: among its ops whose dependencies are done, the one ready first goes first;
//   ties go to the lowest (sip, cube, pe) of the issuing rank, then its issue index, never
//   to the order in which ranks were launched (links, ports, copy queues).
enum class Discipline : std::int32_t { in_order = 0, arbitrated = 1 };

struct Resource {
  std::string name;  // e.g. "sip0.cube3.pe5.matrix"
  ResourceClass cls;
  std::int32_t sip;  // for trace grouping
  Discipline discipline = Discipline::in_order;
};

struct Op {
  OpKind kind = OpKind::dma_load;
  ResourceId resource = kNoResource;  // kNoResource: a pure synchronisation point
  ps_t busy_ps = 0;                   // time the resource is held
  ps_t latency_ps = 0;                // after the resource is released, until the result is visible
  std::int64_t bytes = 0;
  std::int64_t macs = 0;
  std::int64_t cycles = 0;  // matrix-engine cycles (matmul) or vector cycles
  // What the op does that costs energy beyond bytes and MACs (docs/model.md section 14): its
  // vector element-ops, and the bytes it reads from and writes to SRAM (on any PE).
  std::int64_t vector_ops = 0, sram_read = 0, sram_write = 0;
  Rank rank;
  std::int32_t issue = 0;  // index of the op among those its rank issued (arbitration ties)
  std::int32_t label = 0;  // index into Graph::labels (the launch name)
  LinkLevel level = LinkLevel::pe;  // copies only
};

// What the simulator's event loop reads of an op, kept packed as ops are added (an Op is
// about 100 bytes; this is 24).
struct OpTimes {
  static constexpr std::int32_t kArbitrated = 1;  // its resource is arbitrated
  static constexpr std::int32_t kSignal = 2;      // a signal
  ps_t busy_ps, latency_ps;
  ResourceId resource;
  std::int32_t flags;
};

// Sums over every op of a graph, kept as ops are added and changed: what a run in which
// every op ran reports, without a pass over the ops. Unsigned, so that a graph whose sums
// pass int64 (it cannot run to the end) wraps instead of overflowing.
struct OpTotals {
  using Sum = std::uint64_t;
  std::array<Sum, kResourceClasses> busy_ps{};  // summed over the resources of a class
  Sum mac_cycles = 0, macs = 0;
  Sum hbm_read_bytes = 0, hbm_write_bytes = 0;
  Sum vector_ops = 0, sram_read_bytes = 0, sram_write_bytes = 0;
  std::array<Sum, kLinkLevels> link_bytes{};
  std::array<Sum, kLinkLevels> link_copies{};
  std::vector<Sum> resource_busy_ps;        // per resource
  std::vector<Sum> resource_bytes;          // per resource
  std::vector<std::int32_t> resource_ops;  // per resource: ops queued on it
};

// Adds an op's figures to `t`: its counters, and its busy time by its resource's class; and
// the time and bytes it holds its resource for, unless `held` is false (an op whose times
// passed the overflow guard never held it).
void tally(OpTotals& t, const Op& op, const std::vector<Resource>& resources, bool held = true);

struct Edge {
  OpId op, dep;  // op waits for dep to complete (head edges: for dep's start plus its latency)
};

class Graph {
 public:
  // A graph builds in the storage the last graph destroyed on its thread left (graph.cpp).
  Graph();
  ~Graph();
  Graph(const Graph&) = default;
  Graph(Graph&&) = default;
  Graph& operator=(const Graph&) = default;
  Graph& operator=(Graph&&) = default;

  ResourceId add_resource(std::string name, ResourceClass cls, std::int32_t sip,
                          Discipline discipline = Discipline::in_order);
  std::int32_t add_label(std::string label);
  // Deps may include kNoOp entries, which are dropped.
  OpId add_op(const Op& op, const OpId* deps, std::size_t ndeps);
  OpId add_op(const Op& op, std::initializer_list<OpId> deps) { return add_op(op, deps.begin(), deps.size()); }
  // A dependency on an op that may be added later (signals, cross-PE waits).
  void add_dep(OpId op, OpId dep);
  // `op` may start once `dep` has started and dep's latency has passed: the head of a
  // message has crossed dep's link (cut-through; docs/adr/0007-communication-timing.md).
  void add_head_dep(OpId op, OpId dep);
  // Sets an op's busy time after it was added (a time known only once its launch is whole).
  void set_busy(OpId op, ps_t busy_ps);
  // set_busy for an op added with no busy time, on `resource`, without reading it back (a
  // launch's end sets one for every HBM access, long out of cache by then).
  void set_first_busy(OpId op, ResourceId resource, ps_t busy_ps);
  // Adds SRAM bytes to an op after it was added (a copy's ends, known once its hops are).
  void add_sram(OpId op, std::int64_t read, std::int64_t write);
  // Optional action run when the op completes, in simulation order (data mode).
  void set_action(OpId op, std::function<void()> fn);

  const std::vector<Resource>& resources() const { return resources_; }
  const std::vector<Op>& ops() const { return ops_; }
  const std::vector<OpTimes>& times() const { return times_; }
  const OpTotals& totals() const { return totals_; }
  const std::vector<Edge>& edges() const { return edges_; }
  const std::vector<Edge>& head_edges() const { return head_edges_; }
  // Per op, kept as edges are added: the edges of both kinds it waits on, and the edges
  // (not head edges) whose dep it is (the simulator's counts, counted while they are hot).
  const std::vector<std::int32_t>& waits() const { return waits_; }
  const std::vector<std::int32_t>& completion_dependents() const { return completion_dependents_; }
  const std::vector<std::string>& labels() const { return labels_; }
  const std::vector<std::function<void()>>& actions() const { return actions_; }
  std::string op_name(OpId id) const;
  void reserve(std::size_t ops, std::size_t deps) {
    ops_.reserve(ops);
    times_.reserve(ops);
    waits_.reserve(ops);
    completion_dependents_.reserve(ops);
    edges_.reserve(deps);
  }
  // At most `n` ops: one more is an InputError (what a program's size estimate promised, so
  // the memory a graph takes is bounded before it is built).
  void limit_ops(std::int64_t n) { op_limit_ = n; }

 private:
  struct Storage;  // the per-op vectors a thread's next graph takes over (graph.cpp)
  void swap_storage(Storage& s);
  // set_busy's and set_first_busy's work: an op's busy time from `old_busy_ps` to `busy_ps`.
  void change_busy(OpId op, ResourceId resource, ps_t old_busy_ps, ps_t busy_ps);
  std::int64_t op_limit_ = INT32_MAX;
  std::vector<Resource> resources_;
  std::vector<Op> ops_;
  std::vector<OpTimes> times_;  // per op, beside ops_
  OpTotals totals_;
  std::vector<Edge> edges_;
  std::vector<Edge> head_edges_;
  std::vector<std::int32_t> waits_, completion_dependents_;  // per op
  std::vector<std::string> labels_;
  std::vector<std::function<void()>> actions_;  // empty unless an action was set
};

}  // namespace kb::engine
