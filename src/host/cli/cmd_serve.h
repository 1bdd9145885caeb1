// `kernbench-gpu serve` (cmd_serve.cpp).
#pragma once

#include <CLI/CLI.hpp>

#include "cmd_family.h"
#include "host/api/serve.h"

namespace kb {

struct ServeArgs {
  CLI::App* cmd = nullptr;
  EvalArgs llm;  // the llm family's model, hardware and mapping flags (its step axes left out)
  api::ServeRequest request;
  bool json = false;
};
CLI::App* add_serve_command(CLI::App& app, ServeArgs& a);
void cmd_serve(ServeArgs& a);

}  // namespace kb
