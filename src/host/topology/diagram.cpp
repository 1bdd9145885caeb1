#include "diagram.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "../../device/common/area.h"
#include "../common/error.h"
#include "../common/output.h"
#include "topology_summary.h"

extern char** environ;

namespace kb {

namespace {

// An area in mm², to three decimals.
std::string mm2_text(std::int64_t um2) {
  char b[48];
  std::snprintf(b, sizeof b, "%.3f mm²", static_cast<double>(um2) / 1e6);
  return b;
}

// A link's figures, and the area of its PHYs per direction.
std::string link_label(const LinkSpec& l, std::int64_t phy_um2) {
  return std::to_string(l.bandwidth_gbps) + " GB/s\\n" + std::to_string(l.latency_ns) + " ns\\nPHY " + mm2_text(phy_um2);
}

std::string cube_node(std::int64_t sip, std::int64_t cube) { return "s" + std::to_string(sip) + "c" + std::to_string(cube); }

// Cubes with at most this many PEs show each PE; larger ones say how many they hold.
constexpr std::int64_t kMaxPeCells = 64;
// Beyond this many SIPs the others are one box, their links one labelled edge.
constexpr std::int64_t kMaxSipBoxes = 16;
// A SIP shows at most this many rows and columns of its cube grid (the corner from cube
// 0); its label says how many it holds. A diagram thus stays a few hundred nodes, whatever
// the topology: dot renders it in seconds and its DOT source is tens of kilobytes.
constexpr std::int64_t kMaxCubeLines = 6;

// Text inside a quoted DOT string: quotes and backslashes escaped (so no \N, \G, ... either).
std::string escaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += ' ';
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace

std::string topology_dot(const TopologySpec& t) {
  const HwArea area = hw_area(t);
  char per_mm2[64];
  const double peak = peak_fp16_tflops(t);
  std::snprintf(per_mm2, sizeof per_mm2, "%.3f", area.machine > 0 ? peak / (static_cast<double>(area.machine) / 1e6) : 0.0);
  std::string d = "graph topology {\n";
  d += "  graph [compound=true, newrank=true, fontname=\"Helvetica\", labelloc=t, fontsize=18, label=\"" + escaped(t.name) + ": " +
       std::to_string(t.sips) + " SIP(s) x " + std::to_string(t.cube_rows) + "x" + std::to_string(t.cube_cols) +
       " cubes x " + std::to_string(t.pe_rows) + "x" + std::to_string(t.pe_cols) + " PEs; " + mm2_text(area.machine) + ", " +
       per_mm2 + " TFLOP/s per mm²\"];\n";
  d += "  node [shape=plaintext, fontname=\"Helvetica\", fontsize=10];\n";
  d += "  edge [fontname=\"Helvetica\", fontsize=9, color=\"#555555\", fontcolor=\"#333333\"];\n";
  const std::string pe_text = std::to_string(t.matrix_rows) + "x" + std::to_string(t.matrix_cols) + " " +
                              to_string(t.dataflow) + ", " + std::to_string(t.sram_kib) + " KiB, " + mm2_text(area.pe);
  // Every SIP in detail up to two; beyond, SIP 0 in detail and the others as one box each
  // (they are alike), so that the figure stays readable.
  const std::int64_t detailed = t.sips <= 2 ? t.sips : 1;
  const bool crowd = t.sips > kMaxSipBoxes;  // the other SIPs as one box
  if (crowd)
    d += "  others [shape=box, style=\"rounded,filled\", fillcolor=\"#e8f1fa\", color=\"#1f77b4\", fontsize=12, "
         "label=\"SIPs 1.." + std::to_string(t.sips - 1) + "\\n" + std::to_string(t.cube_rows) + "x" +
         std::to_string(t.cube_cols) + " cubes each, as SIP 0\"];\n";
  for (std::int64_t s = detailed; s < t.sips && !crowd; ++s)
    d += "  sip" + std::to_string(s) + " [shape=box, style=\"rounded,filled\", fillcolor=\"#e8f1fa\", color=\"#1f77b4\", "
         "fontsize=12, label=\"SIP " + std::to_string(s) + "\\n" + std::to_string(t.cube_rows) + "x" +
         std::to_string(t.cube_cols) + " cubes, as SIP 0\"];\n";
  const std::int64_t rows = std::min(t.cube_rows, kMaxCubeLines), cols = std::min(t.cube_cols, kMaxCubeLines);
  for (std::int64_t s = 0; s < detailed; ++s) {
    d += "  subgraph cluster_sip" + std::to_string(s) + " {\n";
    std::string shown;
    if (rows < t.cube_rows || cols < t.cube_cols)
      shown = ": cubes (0.." + std::to_string(rows - 1) + ", 0.." + std::to_string(cols - 1) + ") of its " +
              std::to_string(t.cube_rows) + "x" + std::to_string(t.cube_cols) + " grid shown; the others are alike";
    d += "    label=\"SIP " + std::to_string(s) + shown + "\"; style=rounded; color=\"#1f77b4\"; fontsize=14;\n";
    for (std::int64_t r = 0; r < rows; ++r) {
      d += "    { rank=same;";
      for (std::int64_t c = 0; c < cols; ++c) d += " " + cube_node(s, r * t.cube_cols + c) + ";";
      d += " }\n";
    }
    for (std::int64_t cube = 0; cube < t.cubes_per_sip(); ++cube) {
      if (cube / t.cube_cols >= rows || cube % t.cube_cols >= cols) continue;
      std::string cells;
      if (t.pes_per_cube() <= kMaxPeCells) {
        for (std::int64_t pr = 0; pr < t.pe_rows; ++pr) {
          cells += "<TR>";
          for (std::int64_t pc = 0; pc < t.pe_cols; ++pc)
            cells += "<TD BGCOLOR=\"#e8f1fa\">pe" + std::to_string(pr * t.pe_cols + pc) + "</TD>";
          cells += "</TR>";
        }
      } else {
        cells = "<TR><TD COLSPAN=\"1\" BGCOLOR=\"#e8f1fa\">" + std::to_string(t.pe_rows) + "x" + std::to_string(t.pe_cols) +
                " PEs</TD></TR>";
      }
      const std::int64_t span = t.pes_per_cube() <= kMaxPeCells ? t.pe_cols : 1;
      d += "    " + cube_node(s, cube) + " [label=<<TABLE BORDER=\"1\" CELLBORDER=\"1\" CELLSPACING=\"0\" CELLPADDING=\"3\">" +
           "<TR><TD COLSPAN=\"" + std::to_string(span) + "\" BGCOLOR=\"#c6dbef\"><B>cube " + std::to_string(cube) +
           "</B> (" + std::to_string(cube / t.cube_cols) + "," + std::to_string(cube % t.cube_cols) + "), " +
           mm2_text(area.cube) + "</TD></TR>" + "<TR><TD COLSPAN=\"" + std::to_string(span) + "\">HBM " +
           std::to_string(t.hbm_bandwidth_gbps) + " GB/s, " + std::to_string(t.hbm_capacity_mib) + " MiB, PHY " +
           mm2_text(area.hbm_phy) + "</TD></TR>" + cells + "<TR><TD COLSPAN=\"" + std::to_string(span) +
           "\">PE: " + pe_text + "</TD></TR><TR><TD COLSPAN=\"" + std::to_string(span) + "\">ipcq " +
           std::to_string(t.ipcq.bandwidth_gbps) + " GB/s, " + std::to_string(t.ipcq.latency_ns) + " ns</TD></TR></TABLE>>];\n";
    }
    // Mesh links, each pair once (both directions have the same figures).
    for (std::int64_t cube = 0; cube < t.cubes_per_sip(); ++cube) {
      const std::int64_t r = cube / t.cube_cols, c = cube % t.cube_cols;
      if (r >= rows || c >= cols) continue;
      if (c + 1 < cols)
        d += "    " + cube_node(s, cube) + " -- " + cube_node(s, cube + 1) + " [label=\"" + link_label(t.cube_link, t.cube_link_phy_area_um2) + "\"];\n";
      if (r + 1 < rows)
        d += "    " + cube_node(s, cube) + " -- " + cube_node(s, cube + t.cube_cols) + " [label=\"" +
             link_label(t.cube_link, t.cube_link_phy_area_um2) + "\"];\n";
    }
    d += "  }\n";
  }
  // SIP links, between clusters (drawn from and to each SIP's cube 0).
  const std::string sip_style = " color=\"#d62728\", fontcolor=\"#d62728\", penwidth=2";
  // An end of a SIP link: a detailed SIP's cube 0 (clipped at its cluster), or a SIP's box.
  auto end = [&](std::int64_t s) { return s < detailed ? cube_node(s, 0) : "sip" + std::to_string(s); };
  auto clip = [&](const char* which, std::int64_t s) {
    return s < detailed ? std::string(which) + "=cluster_sip" + std::to_string(s) + ", " : std::string();
  };
  auto sip_edge = [&](std::int64_t a, std::int64_t b) {
    d += "  " + end(a) + " -- " + end(b) + " [" + clip("ltail", a) + clip("lhead", b) + "label=\"" +
         link_label(t.sip_link, t.sip_link_phy_area_um2) + "\"," + sip_style + "];\n";
  };
  if (crowd) {
    d += "  " + cube_node(0, 0) + " -- others [ltail=cluster_sip0, label=\"" + to_string(t.sip_topology) + " of " +
         std::to_string(t.sips) + " SIPs\\n" + link_label(t.sip_link, t.sip_link_phy_area_um2) + "\"," + sip_style + "];\n";
  } else if (t.sips > 1) {
    if (t.sip_topology == SipTopology::switch_) {
      d += "  switch [shape=box, style=filled, fillcolor=\"#fddbc7\", label=\"SIP switch\"];\n";
      for (std::int64_t s = 0; s < t.sips; ++s)
        d += "  " + end(s) + " -- switch [" + clip("ltail", s) + "label=\"" + link_label(t.sip_link, t.sip_link_phy_area_um2) + "\"," + sip_style +
             "];\n";
    } else if (t.sip_topology == SipTopology::fully_connected) {
      for (std::int64_t a = 0; a < t.sips; ++a)
        for (std::int64_t b = a + 1; b < t.sips; ++b) sip_edge(a, b);
    } else {
      for (std::int64_t s = 0; s + 1 < t.sips; ++s) sip_edge(s, s + 1);
      if (t.sips > 2) sip_edge(t.sips - 1, 0);
    }
  }
  d += "}\n";
  return d;
}

void write_topology_diagram(const TopologySpec& t, const std::string& out) {
  const std::string ext = std::filesystem::path(out).extension().string();
  if (ext != ".dot" && ext != ".svg" && ext != ".png")
    throw InputError("-o " + out + ": the extension must be .dot, .svg or .png");
  check_output_path("-o", out, "topology.png");
  const std::string dot = topology_dot(t);
  if (ext == ".dot") {
    write_file_atomic(out, dot);
    return;
  }
  // Rendered by Graphviz into a temporary file beside the output, then renamed. The DOT
  // source, dot's messages, the temporary output and any folder made for them are scratch:
  // gone when this returns or throws, or when SIGINT or SIGTERM stops it (dot too).
  ScratchScope scratch;
  scratch.folders_for(out);
  const std::string tag = ".tmp" + std::to_string(::getpid());
  const std::string src = out + tag + ".dot", tmp = out + tag, err = src + ".err";
  scratch.add(src);
  scratch.add(err);
  scratch.add(tmp);
  write_file_atomic(src, dot);
  const std::string format = "-T" + ext.substr(1), output = "-o" + tmp;
  char* argv[] = {const_cast<char*>("dot"), const_cast<char*>(format.c_str()), const_cast<char*>(output.c_str()),
                  const_cast<char*>(src.c_str()), nullptr};
  // dot runs without a shell; what it says goes to a file, read only if it fails.
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  long pid = 0;
  int status = 0;
  const int rc = scratch.spawn_child(&pid, &files, argv);
  posix_spawn_file_actions_destroy(&files);
  if (rc == 0) {
    while (::waitpid(static_cast<pid_t>(pid), &status, 0) < 0 && errno == EINTR) {
    }
    scratch.child(0);
  }
  if (rc != 0)
    throw InputError("-o " + out + ": Graphviz's dot is not installed (apt-get install graphviz); a .dot file needs no renderer");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string said = read_file(err);
    throw InternalError("dot could not render the topology diagram: " + said.substr(0, said.find('\n')), __FILE__, __LINE__);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, out, ec);
  if (ec) throw InputError("-o " + out + ": cannot rename into place");
  scratch.keep_folders();
}

}  // namespace kb
