// `kernbench-gpu serve` (cmd_serve.cpp).
#pragma once

#include <CLI/CLI.hpp>

#include "cmd_family.h"
#include "host/api/serve.h"
#include "host/api/serve_sweep.h"

namespace kb {

struct ServeArgs {
  CLI::App* cmd = nullptr;
  EvalArgs llm;  // the llm family's model, hardware and mapping flags (its step axes left out)
  api::ServeRequest request;
  bool json = false;
};
CLI::App* add_serve_command(CLI::App& app, ServeArgs& a);
void cmd_serve(ServeArgs& a);

// `kernbench-gpu sweep serve`.
struct SweepServeArgs {
  CLI::App* cmd = nullptr;
  ServeArgs serve;  // serve's flags, lists where a sweep crosses them
  api::ServeSweepRequest request;
  bool json = false;
};
CLI::App* add_sweep_serve_command(CLI::App* sweep, SweepServeArgs& a);
void cmd_sweep_serve(SweepServeArgs& a);

}  // namespace kb
