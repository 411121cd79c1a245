#include "soc.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace actgrad::atlas {

namespace {

struct Field {
  const char* name;
  double ModelParams::*member;
};
const Field kModelFields[] = {
    {"clock_ghz", &ModelParams::clock_ghz},
    {"hbm_bandwidth_gbps", &ModelParams::hbm_bandwidth_gbps},
    {"l2_bandwidth_gbps", &ModelParams::l2_bandwidth_gbps},
    {"l2_bytes", &ModelParams::l2_bytes},
    {"core_dma_bandwidth_gbps", &ModelParams::core_dma_bandwidth_gbps},
    {"dma_setup_ns", &ModelParams::dma_setup_ns},
    {"launch_overhead_ns", &ModelParams::launch_overhead_ns},
    {"core_start_ns", &ModelParams::core_start_ns},
    {"scalar_issue_ns", &ModelParams::scalar_issue_ns},
    {"flag_sync_ns", &ModelParams::flag_sync_ns},
    {"vec_issue_cycles", &ModelParams::vec_issue_cycles},
    {"vector_cycle_scale", &ModelParams::vector_cycle_scale},
};

std::string Text(const nlohmann::json& j, const char* key) {
  if (!j.is_object() || !j.contains(key)) return "";
  const auto& v = j.at(key);
  return v.is_string() ? v.get<std::string>() : v.dump();
}

bool GetValue(const nlohmann::json& params, const char* key, double* v, std::string* err) {
  if (!params.contains(key)) {
    *err = std::string("missing parameter '") + key + "'";
    return false;
  }
  const auto& p = params.at(key);
  const auto& val = p.is_object() ? p.value("value", nlohmann::json()) : p;
  if (!val.is_number()) {
    *err = std::string("parameter '") + key + "' has no numeric value";
    return false;
  }
  *v = val.get<double>();
  return true;
}

}  // namespace

const std::vector<std::string>& ModelParamNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const Field& f : kModelFields) n.push_back(f.name);
    return n;
  }();
  return names;
}

double* ModelParamRef(ModelParams& m, const std::string& name) {
  for (const Field& f : kModelFields)
    if (name == f.name) return &(m.*f.member);
  if (name.rfind("cpr.", 0) == 0) {
    for (int k = 0; k < AscendEmu::kNumVecKinds; ++k)
      if (name.substr(4) == AscendEmu::VecKindName(AscendEmu::VecKind(k))) return &m.cycles_per_repeat[k];
  }
  return nullptr;
}

bool SocFromJson(const nlohmann::json& j, SocInfo* out, std::string* err) {
  try {
    if (j.value("schema", "") != "actgrad-atlas-soc") {
      *err = "not an actgrad-atlas-soc file (schema field)";
      return false;
    }
    if (j.value("version", 0) != 1) {
      *err = "unsupported actgrad-atlas-soc version";
      return false;
    }
    SocInfo s;
    s.name = j.at("name").get<std::string>();
    s.soc_version = j.value("soc_version", s.name);
    const auto& p = j.at("params");
    double v;
    if (!GetValue(p, "vector_core_count", &v, err)) return false;
    s.vector_cores = uint32_t(v);
    if (!GetValue(p, "ub_bytes", &v, err)) return false;
    s.ub_bytes = uint64_t(v);
    if (!GetValue(p, "ub_reserved_bytes", &v, err)) return false;
    s.ub_reserved_bytes = uint64_t(v);
    if (!GetValue(p, "block_bytes", &v, err)) return false;
    s.block_bytes = uint32_t(v);
    if (!GetValue(p, "repeat_bytes", &v, err)) return false;
    s.repeat_bytes = uint32_t(v);
    for (const Field& f : kModelFields)
      if (!GetValue(p, f.name, &(s.model.*f.member), err)) return false;
    // optional parameters (absent from older files)
    if (p.contains("hbm_peak_gbps") && !GetValue(p, "hbm_peak_gbps", &s.hbm_peak_gbps, err)) return false;
    if (!p.is_object()) {
      *err = "params is not an object";
      return false;
    }
    for (auto it = p.begin(); it != p.end(); ++it)
      s.docs[it.key()] = ParamDoc{Text(it.value(), "unit"), Text(it.value(), "source"), Text(it.value(), "uncertainty")};
    // cycles per repeat, by vector instruction kind ("default" for the rest)
    const auto& cpr_node = p.at("cycles_per_repeat");
    const auto& cpr = cpr_node.is_object() && cpr_node.contains("value") ? cpr_node.at("value") : cpr_node;
    const double def = cpr.value("default", 1.0);
    for (int k = 0; k < AscendEmu::kNumVecKinds; ++k)
      s.model.cycles_per_repeat[k] = cpr.value(AscendEmu::VecKindName(AscendEmu::VecKind(k)), def);
    if (s.hbm_peak_gbps < 0) {
      *err = "hbm_peak_gbps must not be negative";
      return false;
    }
    if (s.vector_cores < 1 || s.ub_bytes <= s.ub_reserved_bytes || s.block_bytes != 32 || s.repeat_bytes != 256) {
      *err = "implausible structural parameters (cores, UB, 32-byte block, 256-byte repeat)";
      return false;
    }
    s.raw = j;
    *out = std::move(s);
    return true;
  } catch (const std::exception& e) {
    *err = e.what();
    return false;
  }
}

bool LoadSoc(const std::string& path, SocInfo* out, std::string* err) {
  std::ifstream in(path);
  if (!in) {
    *err = "cannot open " + path;
    return false;
  }
  nlohmann::json j;
  try {
    in >> j;
  } catch (const std::exception& e) {
    *err = path + ": " + e.what();
    return false;
  }
  if (!SocFromJson(j, out, err)) {
    *err = path + ": " + *err;
    return false;
  }
  out->path = path;
  return true;
}

nlohmann::json SocToJson(const SocInfo& soc) {
  nlohmann::json j = soc.raw;
  auto& p = j["params"];
  ModelParams m = soc.model;
  for (const Field& f : kModelFields) {
    auto& node = p[f.name];
    if (node.is_object()) node["value"] = m.*f.member;
    else node = m.*f.member;
  }
  auto& cpr_node = p["cycles_per_repeat"];
  auto& cpr = cpr_node.is_object() && cpr_node.contains("value") ? cpr_node["value"] : cpr_node;
  for (int k = 0; k < AscendEmu::kNumVecKinds; ++k) {
    const char* kn = AscendEmu::VecKindName(AscendEmu::VecKind(k));
    if (cpr.contains(kn) || m.cycles_per_repeat[k] != cpr.value("default", 1.0)) cpr[kn] = m.cycles_per_repeat[k];
  }
  return j;
}

// A value as a person writes it: 100 not 100.0, {"Exp": 4} as Exp=4.
static std::string ValueText(const nlohmann::json& v) {
  if (v.is_number()) {
    const double d = v.get<double>();
    char b[32];
    std::snprintf(b, sizeof b, "%.10g", d);
    return b;
  }
  if (v.is_object()) {
    std::string out;
    for (auto it = v.begin(); it != v.end(); ++it) out += (out.empty() ? "" : ", ") + it.key() + "=" + ValueText(it.value());
    return out;
  }
  return v.is_string() ? v.get<std::string>() : v.dump();
}

std::vector<SocParamRow> SocParamRows(const SocInfo& soc) {
  std::vector<SocParamRow> rows;
  const nlohmann::json j = SocToJson(soc);  // current values
  const auto& p = j.at("params");
  for (auto it = p.begin(); it != p.end(); ++it) {
    const auto& node = it.value();
    const auto& val = node.is_object() && node.contains("value") ? node.at("value") : node;
    SocParamRow r;
    r.name = it.key();
    r.value = ValueText(val);
    const auto d = soc.docs.find(it.key());
    if (d != soc.docs.end()) r.doc = d->second;
    rows.push_back(r);
  }
  return rows;
}

std::string DefaultSocDir() {
#ifdef ACTGRAD_ATLAS_SOC_DIR
  return ACTGRAD_ATLAS_SOC_DIR;
#else
  return "atlas/soc";
#endif
}

SocInfo LoadSocByName(const std::string& name) {
  SocInfo s;
  std::string err;
  if (!LoadSoc(DefaultSocDir() + "/" + name + ".json", &s, &err)) throw std::runtime_error(err);
  return s;
}

}  // namespace actgrad::atlas
