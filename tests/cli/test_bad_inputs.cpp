// Hundreds of bad inputs across every command: each is exit 2 with exactly one line on
// stderr that starts "error: ", nothing on stdout, and no file created or changed. The
// table holds every family axis given each kind of malformed value (eval and sweep), and
// the cases of the reliability review: special and unwritable outputs, strict topology
// input, control characters, unused flags, endless inputs, spaces too long to wait for.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "cli_run.h"
#include "host/families/family.h"

namespace {

using namespace kb::clitest;

// Every file under `dir` with its size and modification time.
std::map<std::string, std::pair<std::uintmax_t, std::int64_t>> snapshot(const std::string& dir) {
  std::map<std::string, std::pair<std::uintmax_t, std::int64_t>> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    std::error_code ec;
    const auto size = e.is_regular_file() ? e.file_size(ec) : 0;
    out[e.path().string()] = {size, static_cast<std::int64_t>(e.last_write_time(ec).time_since_epoch().count())};
  }
  return out;
}

TEST(BadInputs, EveryOneIsOneLineExitTwoAndWritesNothing) {
  const std::string d = fresh_dir("kb_bad_inputs");
  fs::create_directories(d);
  const std::string def = kTopo + "/default.yaml";
  copy_edited(def, d + "/dup.yaml", "schema_version: 1\n", "schema_version: 1\nschema_version: 1\n");
  copy_edited(def, d + "/dot.yaml", "schema_version: 1\n", "schema_version: 1\nsystem.sips: 4\n");
  copy_edited(def, d + "/space.yaml", "bandwidth_gbps: 819", "bandwidth_gbps: \" 819\"");
  copy_edited(def, d + "/nul.yaml", "bandwidth_gbps: 819", "bandwidth_gbps: \"15\\0abc\"");
  copy_edited(def, d + "/unknown.yaml", "schema_version: 1\n", "schema_version: 1\nturbo: 1\n");
  copy_edited(def, d + "/zero.yaml", "bandwidth_gbps: 819", "bandwidth_gbps: 0");
  std::ofstream(d + "/bad.yaml") << "system: [\n";
  std::ofstream(d + "/empty.yaml") << "";
  std::ofstream(d + "/space-bad.yaml") << "family: gemm\naxes:\n  m: [1, 0]\n  n: 8\n  k: 8\n";
  std::ofstream(d + "/not-json.json") << "{";
  ASSERT_EQ(::mkfifo((d + "/fifo").c_str(), 0600), 0);
  const std::string q = "'" + d;  // paths in the table are quoted
  std::vector<std::string> cases = {
      // outputs: special files, folders, unwritable places
      "sweep gemm --m 16 --n 16 --k 16 --out " + q + "/fifo'",
      "sweep gemm --m 16 --n 16 --k 16 --csv " + q + "/fifo'",
      "sweep gemm --m 16 --n 16 --k 16 --out /dev/null",
      "sweep gemm --m 16 --n 16 --k 16 --out " + q + "'",
      "sweep gemm --m 16 --n 16 --k 16 --out /proc/kb.json",
      "eval gemm --m 16 --n 16 --k 16 --trace " + q + "/fifo'",
      "eval gemm --m 16 --n 16 --k 16 --trace /proc/kb.json",
      "run --bench milestone-1h-gemm --out /proc/kb",
      "run --bench milestone-1h-ccl --out " + q + "/dup.yaml'",
      "merge " + q + "/not-json.json'",
      "merge " + q + "/nothing.json'",
      "merge " + q + "/dup.yaml' --out /dev/null",
      // strict topology input
      "topo check " + q + "/dup.yaml'",
      "topo check " + q + "/dot.yaml'",
      "topo check " + q + "/space.yaml'",
      "topo check " + q + "/nul.yaml'",
      "topo check " + q + "/unknown.yaml'",
      "topo check " + q + "/zero.yaml'",
      "topo check " + q + "/bad.yaml'",
      "topo check " + q + "/empty.yaml'",
      "topo check " + q + "/none.yaml'",
      "topo check /dev/zero",
      "topo show " + q + "/dup.yaml'",
      "topo diagram " + q + "/dot.yaml' -o " + q + "/x.png'",
      "eval gemm --m 16 --n 16 --k 16 --topology " + q + "/nul.yaml'",
      "sweep gemm --m 16 --n 16 --k 16 --topology " + q + "/space.yaml'",
      "run --bench milestone-1h-gemm --topology " + q + "/dup.yaml' --out " + q + "/o'",
      "topo check '" + kTopo + "/default.yaml' --set cube.hbm.bandwidth_gbps=' 819'",
      "topo check '" + kTopo + "/default.yaml' --set cube.hbm.bandwidth_gbps=+819",
      "topo check '" + kTopo + "/default.yaml' --set cube.hbm.bandwidth_gbps=0x10",
      "topo check '" + kTopo + "/default.yaml' --set cube.hbm.bandwidth_gbps=",
      "topo check '" + kTopo + "/default.yaml' --set \"cube.hbm.bandwidth_gbps=$(printf '8\\n19')\"",
      "topo check '" + kTopo + "/default.yaml' --set nope.field=1",
      "topo check '" + kTopo + "/default.yaml' --set novalue",
      // unused flags, empty paths, unknown names (control characters escaped)
      "eval gemm --m 16 --n 16 --k 16 --engine reference --backend bogus",
      "eval gemm --m 16 --n 16 --k 16 --engine sometimes",
      "eval gemm --m 16 --n 16 --k 16 --topology ''",
      "sweep gemm --m 16 --n 16 --k 16 --topology ''",
      "run --bench \"$(printf 'no\\nsuch')\"",
      "plot --bench nope",
      "plot",
      "plot --sweep " + q + "/not-json.json'",
      "frobnicate",
      "sweep --space " + q + "/space-bad.yaml'",
      "sweep --space " + q + "/none.yaml'",
      "sweep gemm --m 16 --n 16 --k 16 --shard 5/3 --json",
      "sweep gemm --m 16 --n 16 --k 16 --shard 1/3",
      "sweep gemm --m 1:1048576 --n 1:1000 --k 1:100 --group none --max-hours 0.0001",
      "sweep gemm --m 16 --n 16 --k 16 --max-hours -1",
      "sweep gemm --m 16 --n 16 --k 16 --recheck 5000",
      "sweep gemm --m 16 --n 16 --k 16 --top 5000",
      "eval gemm --m 16 --n 16 --k 16 --split diag",
      "sweep gemm --m 16 --n 16 --k 16 --split rows,cols-k,x",
      "eval gemm --m 64 --n 64 --k 256 --tile-m 64 --tile-n 64 --tile-k 64 --pes 2 --split rows-k --set pe.sram_kib=64",
      // values no config could use: ranks beyond every level swept (8 PEs, 8 cubes, 64 in all)
      "sweep allreduce --bytes 4096 --level pe --algo ring --ranks 65 --buffer sram",
      "sweep allreduce --bytes 4096 --level pe,cube --algo ring --ranks 2,9 --buffer sram",
      "sweep allreduce --bytes 4096 --level hier --algo ring --ranks 2:128:*2 --buffer sram",
      "sweep allreduce --bytes 4096 --algo ring --buffer sram --zip level,ranks=pe/8,cube/16",
      // the reference engine's op cap (--max-ops): a run too large, and malformed caps
      "eval gemm --m 256 --n 256 --k 256 --tile-m 1 --tile-n 1 --tile-k 1",
      "eval gemm --m 256 --n 256 --k 256 --tile-m 16 --tile-n 16 --tile-k 16 --max-ops 1000",
      "eval decode --case 1 --s-kv 65536 --batch 64 --kv-chunk 16 --max-ops 100000",
      "eval allreduce --bytes 4096 --level pe --algo ring --ranks 8 --buffer sram --max-ops 10",
      "eval gemm --m 16 --n 16 --k 16 --max-ops ''",
      "eval gemm --m 16 --n 16 --k 16 --max-ops 0",
      "eval gemm --m 16 --n 16 --k 16 --max-ops 0x10",
      "eval gemm --m 16 --n 16 --k 16 --max-ops 2147483648",
      "sweep gemm --m 16 --n 16 --k 16 --max-ops -1",
      "merge " + q + "/not-json.json' --max-ops abc",
      // topo diagram: a renderer that cannot write where it is told
      "topo diagram '" + def + "' -o /proc/kb-topology.png",
  };
  // Every axis of every family (from the registry: a new family is in the table by being
  // registered), with each kind of malformed value, in eval and in sweep.
  for (const kb::Family* f : kb::families())
    for (const std::string& args : bad_axis_values(*f)) cases.push_back(args);
  ASSERT_GE(cases.size(), 200u);
  for (const std::string& args : cases) {
    SCOPED_TRACE(args);
    const auto before = snapshot(d);
    const Result e = run(args);
    EXPECT_EQ(e.code, 2) << e.err;
    EXPECT_EQ(e.err.rfind("error: ", 0), 0u) << e.err;
    EXPECT_EQ(std::count(e.err.begin(), e.err.end(), '\n'), 1) << e.err;
    EXPECT_EQ(e.out, "");
    EXPECT_EQ(snapshot(d), before) << "files created or changed";
  }
  EXPECT_TRUE(fs::is_fifo(d + "/fifo"));
}

}  // namespace
