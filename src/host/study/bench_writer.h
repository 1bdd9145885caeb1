// What every bench writes, written once: its document (the common header, the bench's name,
// the backend and the parity record of its study), its table as CSV, and its figures, under
// the names its KB_BENCH declaration gives.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "host/bench/registry.h"
#include "host/common/table.h"
#include "study.h"

namespace kb {

// The document's start: schema and version (as declared), generator, topology, "bench",
// "backend" and "parity" from the study.
nlohmann::json bench_document(const BenchContext& ctx, const Study& study);
// The document's path: the output folder and the declared JSON name.
std::string bench_json_path(const BenchContext& ctx);
// Writes the document and the table's CSV (each atomically), then draws the declared
// figures from the document.
void write_bench(const BenchContext& ctx, const nlohmann::json& doc, const Table& table);

}  // namespace kb
