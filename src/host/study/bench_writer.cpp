#include "bench_writer.h"

#include "document.h"
#include "host/common/error.h"
#include "host/common/output.h"

namespace kb {

nlohmann::json bench_document(const BenchContext& ctx, const Study& study) {
  KB_INTERNAL_CHECK(ctx.bench && !ctx.bench->schema.empty(), "a bench document needs its bench's declared schema");
  nlohmann::json doc = document(ctx.bench->schema, ctx.bench->schema_version, ctx.topology);
  doc["bench"] = ctx.bench->name;
  doc["backend"] = to_string(study.backend());
  doc["parity"] = study.parity_json();
  return doc;
}

std::string bench_json_path(const BenchContext& ctx) { return ctx.out_dir + "/" + ctx.bench->json; }

void write_bench(const BenchContext& ctx, const nlohmann::json& doc, const Table& table) {
  const std::string json_path = bench_json_path(ctx);
  write_file_atomic(json_path, doc.dump(2) + "\n");
  write_file_atomic(ctx.out_dir + "/" + ctx.bench->csv(), table.csv());
  if (!ctx.bench->plot.empty()) render_figures(ctx.bench->plot, json_path, ctx.out_dir);
}

}  // namespace kb
