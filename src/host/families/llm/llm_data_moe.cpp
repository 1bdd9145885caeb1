#include "llm_data_moe.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "../../../device/models/llm/llm_moe.h"
#include "../../common/error.h"
#include "../gemm/gemm_program.h"
#include "llm_program.h"

namespace kb {
namespace llm_data {

namespace {

// A row's scores (softmax or sigmoid of its logits) and the values it chooses by.
void scores_of(const Dims& a, const double* logits, const Values& bias, std::vector<double>& p, std::vector<double>& choice) {
  const std::size_t E = static_cast<std::size_t>(a.E);
  p.assign(E, 0.0), choice.assign(E, 0.0);
  if (a.sigmoid) {
    for (std::size_t e = 0; e < E; ++e) p[e] = 1.0 / (1.0 + std::exp(-logits[e])), choice[e] = p[e] + static_cast<double>(bias[e]);
    return;
  }
  const double top = *std::max_element(logits, logits + E);
  double sum = 0;
  for (std::size_t e = 0; e < E; ++e) sum += (p[e] = std::exp(logits[e] - top));
  for (std::size_t e = 0; e < E; ++e) choice[e] = p[e] /= sum;
}

// The K experts a row chooses (best first, the lower expert on a tie).
std::vector<std::int64_t> choose(const Dims& a, const std::vector<double>& choice) {
  const std::int64_t E = a.E, size = E / a.groups;
  std::vector<char> allowed(static_cast<std::size_t>(E), 1);
  if (a.groups > 1) {
    std::vector<double> value(static_cast<std::size_t>(a.groups));
    for (std::int64_t g = 0; g < a.groups; ++g) {
      std::vector<double> in(choice.begin() + g * size, choice.begin() + (g + 1) * size);
      std::sort(in.rbegin(), in.rend());
      value[static_cast<std::size_t>(g)] = a.sigmoid && size > 1 ? in[0] + in[1] : in[0];
    }
    std::vector<std::int64_t> order(static_cast<std::size_t>(a.groups));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::int64_t x, std::int64_t y) {
      return value[static_cast<std::size_t>(x)] > value[static_cast<std::size_t>(y)];
    });
    std::fill(allowed.begin(), allowed.end(), 0);
    for (std::int64_t i = 0; i < a.topk_groups; ++i)
      std::fill_n(allowed.begin() + order[static_cast<std::size_t>(i)] * size, size, 1);
  }
  std::vector<std::int64_t> order;
  for (std::int64_t e = 0; e < E; ++e)
    if (allowed[static_cast<std::size_t>(e)]) order.push_back(e);
  std::stable_sort(order.begin(), order.end(), [&](std::int64_t x, std::int64_t y) {
    return choice[static_cast<std::size_t>(x)] > choice[static_cast<std::size_t>(y)];
  });
  order.resize(static_cast<std::size_t>(a.K));
  return order;
}

// SiLU(gate) x up, then down, of one expert (or the shared one) on one row, in float64.
void expert_f64(const Dims& a, const Values& gate_up, const Values& down, std::int64_t inter, const double* h, double scale,
                double* out) {
  std::vector<double> gu(static_cast<std::size_t>(2 * inter), 0.0);
  for (std::int64_t i = 0; i < a.H; ++i)
    for (std::int64_t j = 0; j < 2 * inter; ++j) gu[static_cast<std::size_t>(j)] += h[i] * gate_up[static_cast<std::size_t>(i * 2 * inter + j)];
  for (std::int64_t j = 0; j < inter; ++j) {
    const double g = gu[static_cast<std::size_t>(j)], act = g / (1.0 + std::exp(-g)) * gu[static_cast<std::size_t>(inter + j)];
    for (std::int64_t c = 0; c < a.H; ++c) out[c] += scale * act * down[static_cast<std::size_t>(j * a.H + c)];
  }
}

}  // namespace

MoeWeights draw_moe_weights(const Dims& a, std::uint64_t seed, std::uint64_t* id) {
  auto matrix = [&](std::int64_t in, std::int64_t out) {
    return draw(in * out, seed, ++*id, 0.0, 1.0 / std::sqrt(static_cast<double>(in)), a.wtype);
  };
  MoeWeights w;
  w.router = matrix(a.H, a.E);
  w.bias = draw(a.E, seed, ++*id, 0.0, a.sigmoid ? 0.05 : 0.0, DType::f32);
  for (std::int64_t e = 0; e < a.E; ++e) {
    w.gate_up.push_back(matrix(a.H, 2 * a.Im));
    w.down.push_back(matrix(a.Im, a.H));
  }
  if (a.Sh > 0) {
    w.shared_gate_up = matrix(a.H, 2 * a.Sh);
    w.shared_down = matrix(a.Sh, a.H);
  }
  return w;
}

Routing route_rows(const Dims& a, const std::vector<double>& logits, std::int64_t rows, const Values& bias) {
  Routing r;
  r.tokens.assign(static_cast<std::size_t>(a.E), 0);
  std::vector<double> p, choice;
  for (std::int64_t row = 0; row < rows; ++row) {
    scores_of(a, logits.data() + row * a.E, bias, p, choice);
    const std::vector<std::int64_t> top = choose(a, choice);
    double sum = 0;
    for (std::int64_t e : top) sum += p[static_cast<std::size_t>(e)];
    for (std::int64_t e : top) {
      r.expert.push_back(e);
      r.weight.push_back(p[static_cast<std::size_t>(e)] / sum);
      ++r.tokens[static_cast<std::size_t>(e)];
    }
  }
  return r;
}

ps_t MoeLayerData::router(const GemmConfig& g, const Values& h) {
  h_ = h;
  KernelValues v;
  v.in = {h, w_.router};
  const ps_t took = gemm_reference(g, nullptr, &v).latency_ps;
  route_ = route_rows(a_, std::vector<double>(v.out.begin(), v.out.end()), a_.M, w_.bias);
  place();
  return took;
}

// The copies as the timing run places them (moe_place: each copy's expert, rank and share of
// its expert's rows); an expert's rows go to its copies in row order.
void MoeLayerData::place() {
  std::vector<std::int64_t> share(kMoeMaxCopies), rank_tokens(kMoeMaxRanks);
  std::vector<std::int32_t> expert(kMoeMaxCopies), rank(kMoeMaxCopies), replicas(kMoeMaxExperts), held(kMoeMaxRanks);
  std::vector<std::int16_t> order(kMoeMaxCopies);
  const MoePlaceBuf b{share.data(), expert.data(), rank.data(), replicas.data(), rank_tokens.data(), held.data(), order.data()};
  const std::int64_t n = moe_place(route_.tokens.data(), a_.E, a_.tp, a_.redundant, b);
  if (n == 0) throw InternalError("the routed tokens' experts could not be placed on the ranks", __FILE__, __LINE__);
  std::vector<std::vector<std::int64_t>> pairs(static_cast<std::size_t>(a_.E));  // per expert: its (row, slot)s
  for (std::size_t i = 0; i < route_.expert.size(); ++i) pairs[static_cast<std::size_t>(route_.expert[i])].push_back(static_cast<std::int64_t>(i));
  std::vector<std::size_t> taken(static_cast<std::size_t>(a_.E), 0);
  copies_.clear();
  for (std::int64_t c = 0; c < n; ++c) {
    const std::size_t x = static_cast<std::size_t>(expert[static_cast<std::size_t>(c)]);
    const std::size_t from = taken[x], rows = static_cast<std::size_t>(share[static_cast<std::size_t>(c)]);
    std::vector<std::int64_t> copy{rank[static_cast<std::size_t>(c)], static_cast<std::int64_t>(x)};
    copy.insert(copy.end(), pairs[x].begin() + static_cast<std::ptrdiff_t>(from), pairs[x].begin() + static_cast<std::ptrdiff_t>(from + rows));
    taken[x] += rows;
    copies_.push_back(std::move(copy));
  }
}

bool MoeLayerData::handles(const std::string& name) {
  return name == "expert_gate_up" || name == "expert_silu_mul" || name == "expert_down" || name == "shared_gate_up" ||
         name == "shared_silu_mul" || name == "shared_down" || name == "moe_sum";
}

ps_t MoeLayerData::gemm(const GemmConfig& g, const std::string& name) {
  ps_t took = -1;
  const std::int64_t each = g.m, H = a_.H;
  if (name == "expert_gate_up") {  // the copies' rows in runs of `each`
    runs_.clear();
    for (const std::vector<std::int64_t>& c : copies_)
      for (std::size_t i = 2; i < c.size(); i += static_cast<std::size_t>(each)) {
        Run run{c[1], c[0], std::vector<std::int64_t>(c.begin() + static_cast<std::ptrdiff_t>(i),
                                                     c.begin() + static_cast<std::ptrdiff_t>(std::min(c.size(), i + static_cast<std::size_t>(each)))), {}};
        Values x(static_cast<std::size_t>(each * H), 0.0f);
        for (std::size_t j = 0; j < run.pairs.size(); ++j)
          std::copy_n(h_.begin() + run.pairs[j] / a_.K * H, H, x.begin() + static_cast<std::ptrdiff_t>(j) * H);
        KernelValues v;
        v.in = {std::move(x), w_.gate_up[static_cast<std::size_t>(run.expert)]};
        same_time(took, gemm_reference(g, nullptr, &v).latency_ps, name);
        run.v = std::move(v.out);
        runs_.push_back(std::move(run));
      }
  } else if (name == "expert_down") {
    for (Run& run : runs_) {
      KernelValues v;
      v.in = {std::move(run.v), w_.down[static_cast<std::size_t>(run.expert)]};
      same_time(took, gemm_reference(g, nullptr, &v).latency_ps, name);
      run.v = std::move(v.out);
    }
  } else if (name == "shared_gate_up") {
    shared_.assign(static_cast<std::size_t>(a_.tp), {});
    for (std::int64_t r = 0; r < a_.tp; ++r) {
      std::vector<std::int64_t> cols = share(r, a_.Sr, a_.Sh, 0), up = share(r, a_.Sr, a_.Sh, a_.Sh);
      cols.insert(cols.end(), up.begin(), up.end());
      KernelValues v;
      v.in = {h_, take_cols(w_.shared_gate_up, H, 2 * a_.Sh, cols)};
      same_time(took, gemm_reference(g, nullptr, &v).latency_ps, name);
      shared_[static_cast<std::size_t>(r)] = std::move(v.out);
    }
  } else if (name == "shared_down") {
    for (std::int64_t r = 0; r < a_.tp; ++r) {
      KernelValues v;
      v.in = {std::move(shared_[static_cast<std::size_t>(r)]), take_rows(w_.shared_down, H, share(r, a_.Sr, a_.Sh, 0))};
      same_time(took, gemm_reference(g, nullptr, &v).latency_ps, name);
      shared_[static_cast<std::size_t>(r)] = std::move(v.out);
    }
  } else {
    throw InternalError("data mode does not know the MoE kernel " + name, __FILE__, __LINE__);
  }
  return took >= 0 ? took : gemm_reference(g).latency_ps;
}

ps_t MoeLayerData::vector(const LlmVecConfig& x, const std::string& name) {
  ps_t took = -1;
  if (name == "expert_silu_mul" || name == "shared_silu_mul") {
    auto silu = [&](Values& in, std::int64_t rows, std::int64_t cols) {
      KernelValues v;
      v.in = {columns(in, rows, 2 * cols, 0, cols), columns(in, rows, 2 * cols, cols, cols)};
      same_time(took, llm_vec_reference(x, nullptr, &v).latency_ps, name);
      in = std::move(v.out);
    };
    if (name == "expert_silu_mul")
      for (Run& run : runs_) silu(run.v, x.rows, a_.Im);
    else
      for (Values& s : shared_) silu(s, a_.M, a_.Sr);
    return took >= 0 ? took : llm_vec_reference(x).latency_ps;
  }
  if (name != "moe_sum") throw InternalError("data mode does not know the MoE kernel " + name, __FILE__, __LINE__);
  // Each rank: its copies' rows by their weights, and its share of the shared expert.
  std::vector<std::vector<double>> sum(static_cast<std::size_t>(a_.tp), std::vector<double>(static_cast<std::size_t>(a_.M * a_.H), 0.0));
  for (const Run& run : runs_)
    for (std::size_t j = 0; j < run.pairs.size(); ++j) {
      const std::int64_t row = run.pairs[j] / a_.K;
      const double w = route_.weight[static_cast<std::size_t>(run.pairs[j])];
      for (std::int64_t c = 0; c < a_.H; ++c)
        sum[static_cast<std::size_t>(run.rank)][static_cast<std::size_t>(row * a_.H + c)] += w * run.v[j * static_cast<std::size_t>(a_.H) + static_cast<std::size_t>(c)];
    }
  parts_.assign(static_cast<std::size_t>(a_.tp), Values(static_cast<std::size_t>(a_.M * a_.H)));
  for (std::size_t r = 0; r < parts_.size(); ++r)
    for (std::size_t i = 0; i < parts_[r].size(); ++i)
      parts_[r][i] = round_to(DType::f16, static_cast<float>(sum[r][i] + (a_.Sh > 0 ? static_cast<double>(shared_[r][i]) : 0.0)));
  return llm_vec_reference(x).latency_ps;
}

Dense moe_f64(const Dims& a, const MoeWeights& w, const Dense& h, std::int64_t rows, const Routing& data, std::int64_t* flips,
              double* gap) {
  const Dense logits = matmul(h, rows, a.H, w.router, a.E);
  const Routing own = route_rows(a, logits, rows, w.bias);
  Dense out(static_cast<std::size_t>(rows * a.H), 0.0);
  std::vector<double> p, choice;
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::size_t at = static_cast<std::size_t>(r * a.K);
    std::vector<std::int64_t> mine(own.expert.begin() + static_cast<std::ptrdiff_t>(at), own.expert.begin() + static_cast<std::ptrdiff_t>(at) + a.K),
        theirs(data.expert.begin() + static_cast<std::ptrdiff_t>(at), data.expert.begin() + static_cast<std::ptrdiff_t>(at) + a.K);
    std::vector<std::int64_t> experts = mine;
    std::vector<double> weights(own.weight.begin() + static_cast<std::ptrdiff_t>(at), own.weight.begin() + static_cast<std::ptrdiff_t>(at) + a.K);
    std::sort(mine.begin(), mine.end());
    std::sort(theirs.begin(), theirs.end());
    if (mine != theirs) {  // a near tie: the gap between the choices each side made and the other did not
      scores_of(a, logits.data() + r * a.E, w.bias, p, choice);
      double best_out = -1e300, worst_in = 1e300, sum = 0;
      for (std::int64_t e : mine)
        if (!std::binary_search(theirs.begin(), theirs.end(), e)) best_out = std::max(best_out, choice[static_cast<std::size_t>(e)]);
      for (std::int64_t e : theirs)
        if (!std::binary_search(mine.begin(), mine.end(), e)) worst_in = std::min(worst_in, choice[static_cast<std::size_t>(e)]);
      ++*flips;
      *gap = std::max(*gap, best_out - worst_in);
      experts = theirs;
      for (std::int64_t e : experts) sum += p[static_cast<std::size_t>(e)];
      for (std::size_t k = 0; k < experts.size(); ++k) weights[k] = p[static_cast<std::size_t>(experts[k])] / sum;
    }
    const double* row = h.data() + r * a.H;
    for (std::size_t k = 0; k < experts.size(); ++k) {
      const std::size_t e = static_cast<std::size_t>(experts[k]);
      expert_f64(a, w.gate_up[e], w.down[e], a.Im, row, weights[k], out.data() + r * a.H);
    }
    if (a.Sh > 0) expert_f64(a, w.shared_gate_up, w.shared_down, a.Sh, row, 1.0, out.data() + r * a.H);
  }
  return out;
}

}  // namespace llm_data
}  // namespace kb
