// Sweep summaries as data: written into a shard's output, read back, and merged. Every
// reduction of a sweep is exact and associative (counts add, bests and the top k keep the
// lowest (latency, index), Pareto fronts are the front of their union, histograms add,
// checksums add modulo 2^64), so the merge of the shards of a space equals one run over it.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "../../device/backends/backends.h"
#include "../../device/sweep/sweep_summary.h"

namespace kb {

// Shards interleave blocks of the flat index, so that each gets a fair mix of the space (the
// first axes vary slowest: contiguous slices would give one shard all the large problems).
// Block b, [b * block, (b + 1) * block), belongs to shard b mod n; a block holds
// clamp(ceil(size / (8 n)), 1, 2^20) configs.
std::int64_t shard_block(std::int64_t size, std::int64_t n);
// The configs of shard i of n.
std::int64_t shard_configs(std::int64_t size, std::int64_t i, std::int64_t n);
// A summary of no configs of a space of `groups` groups and `statuses` statuses.
batched::SweepSummary empty_summary(std::int64_t groups, int statuses, bool histogram);
// The digest a shard's JSON carries ("fnv1a64:" and 16 hex digits) over what it reports: its
// request, place and summary (latency checksum included). merge recomputes it from what it
// reads and refuses a shard whose file was changed after the sweep wrote it: the checksum,
// unlike the configs a summary names, cannot be derived again without the whole sweep.
std::string shard_digest(const nlohmann::json& request, std::int64_t index, std::int64_t count,
                         const batched::SweepSummary& s);
// Parses "I/N" (0 <= I < N <= 2^20); throws InputError naming `flag`.
void parse_shard(const std::string& flag, const std::string& text, std::int64_t* i, std::int64_t* n);

// `with_best` false leaves "best" (one entry per group) empty, for a writer that streams it
// from summary_best_json.
nlohmann::json summary_json(const batched::SweepSummary& s, bool with_best = true);
nlohmann::json summary_best_json(const batched::GroupBest& b);
// Throws InputError("WHERE: ...") when `j` is not a summary of `groups` groups and `statuses` statuses.
batched::SweepSummary summary_from_json(const nlohmann::json& j, std::int64_t groups, int statuses,
                                        const std::string& where);

// Throws InputError("WHERE: shard.summary...: ...") unless `s` is a summary that shard
// `shard_i` of `shard_n` of `space` could have produced under `red`: the right count, every
// config it names inside the space, in the shard and in its group, with the status,
// latency and cost that config has (re-derived from its index), lists in their order and
// of their length, and a histogram exactly when one is asked for.
void check_shard_summary(const batched::SweepSummary& s, batched::Family family, const batched::Space& space,
                         const batched::Reductions& red, std::int64_t shard_i, std::int64_t shard_n,
                         const std::string& where);

// Folds `s` into `acc` (both of the same space and reductions; top_k: the top list's length).
void merge_summary(batched::SweepSummary& acc, const batched::SweepSummary& s, int top_k);

}  // namespace kb
