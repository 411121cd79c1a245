#include "tools/tune/measurement_key.h"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <set>

#include "tools/inputs/hash.h"
#include "tools/tune/topology.h"
#include "variants/variant.h"

// Set by tools/tune/CMakeLists.txt at configure time (this file only).
#ifndef ACTGRAD_TUNER_CXX_FLAGS
#define ACTGRAD_TUNER_CXX_FLAGS "unknown"
#endif
#ifndef ACTGRAD_TUNER_BUILD_TYPE
#define ACTGRAD_TUNER_BUILD_TYPE "unknown"
#endif
#ifndef ACTGRAD_TUNER_HWY_VERSION
#define ACTGRAD_TUNER_HWY_VERSION "unknown"
#endif

extern char** environ;

namespace actgrad::tune {

using json = nlohmann::json;

namespace {

using inputs::Fnv1a;
using inputs::Hex12;

std::string CompilerName() {
#if defined(__clang__)
  return std::string("Clang ") + __clang_version__;
#elif defined(__GNUC__)
  return std::string("GNU ") + __VERSION__;
#else
  return "unknown";
#endif
}

// The fields in ToJson's order of comparison (KeyDifferences reports in it).
const char* const kFields[] = {"machine_id", "git_commit", "variants", "compiler", "build_type",
                               "cxx_flags",  "highway",    "affinity", "env"};

json Fields(const MeasurementKey& k) {
  return json{{"compiler", k.compiler},     {"build_type", k.build_type}, {"cxx_flags", k.cxx_flags},
              {"highway", k.highway},       {"variants", k.variants},     {"git_commit", k.git_commit},
              {"env", k.env},               {"affinity", k.affinity},     {"machine_id", k.machine_id}};
}

std::string Shown(const json& v) {
  if (v.is_null()) return "absent";
  if (v.is_string()) return v.get_ref<const std::string&>().empty() ? "\"\"" : v.get<std::string>();
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

bool IsKeyEnvVar(const std::string& name) {
  for (const char* p : {"ACTGRAD_", "OMP_", "GOMP_", "KMP_", "HWY_"})
    if (name.rfind(p, 0) == 0) return true;
  return false;
}

std::string VariantListHash() {
  std::string s;
  for (const Variant& v : Variants()) s += v.name + ":" + (v.supported ? "1" : "0") + "\n";
  return Hex12(Fnv1a(s));
}

std::string AffinityString() {
  // How many CPUs, sockets and last-level caches the mask allows, not which
  // CPUs: two machines of a fleet pinned to different cores measure alike.
  const Topology t = ThisTopology();
  return std::to_string(t.cpus) + " cpus, " + std::to_string(t.sockets) + " sockets, " +
         std::to_string(t.llc_domains) + " llc";
}

MeasurementKey MeasurementKey::Current(const std::string& git_commit, const std::string& machine_id) {
  MeasurementKey k;
  k.compiler = CompilerName();
  k.build_type = ACTGRAD_TUNER_BUILD_TYPE;
  k.cxx_flags = ACTGRAD_TUNER_CXX_FLAGS;
  k.highway = ACTGRAD_TUNER_HWY_VERSION;
  k.variants = VariantListHash();
  k.git_commit = git_commit;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv = *e;
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) continue;
    const std::string name = kv.substr(0, eq);
    if (IsKeyEnvVar(name)) k.env[name] = kv.substr(eq + 1);
  }
  k.affinity = AffinityString();
  k.machine_id = machine_id;
  return k;
}

std::string MeasurementKey::Hash() const {
  // dump() sorts object keys: the text, and so the hash, is canonical. A
  // value that is not UTF-8 (an environment variable) is replaced, not thrown.
  return Hex12(Fnv1a(Fields(*this).dump(-1, ' ', false, json::error_handler_t::replace)));
}

json MeasurementKey::ToJson() const {
  json j = Fields(*this);
  j["hash"] = Hash();
  return j;
}

bool MeasurementKey::FromJson(const json& j, MeasurementKey* out, std::string* why) {
  auto fail = [why](const std::string& m) {
    if (why) *why = m;
    return false;
  };
  if (!j.is_object()) return fail("the measurement key is not an object");
  MeasurementKey k;
  for (auto [name, field] : {std::pair{"compiler", &k.compiler}, std::pair{"build_type", &k.build_type},
                             std::pair{"cxx_flags", &k.cxx_flags}, std::pair{"highway", &k.highway},
                             std::pair{"variants", &k.variants}, std::pair{"git_commit", &k.git_commit},
                             std::pair{"affinity", &k.affinity}, std::pair{"machine_id", &k.machine_id}}) {
    const auto it = j.find(name);
    if (it == j.end() || !it->is_string()) return fail(std::string("measurement key: \"") + name + "\" is not a string");
    *field = it->get<std::string>();
  }
  const auto env = j.find("env");
  if (env == j.end() || !env->is_object()) return fail("measurement key: \"env\" is not an object");
  for (const auto& [name, value] : env->items()) {
    if (!value.is_string()) return fail("measurement key: env " + name + " is not a string");
    k.env[name] = value.get<std::string>();
  }
  *out = std::move(k);
  return true;
}

std::vector<std::string> KeyDifferences(const json& old_key, const json& new_key) {
  std::vector<std::string> out;
  const json none = json::object();
  const json& a = old_key.is_object() ? old_key : none;
  const json& b = new_key.is_object() ? new_key : none;
  if (!old_key.is_object() && new_key.is_object()) {
    out.push_back("measurement_key absent -> " + Shown(b.value("hash", json())));
    return out;
  }
  auto get = [](const json& o, const std::string& k) { return o.contains(k) ? o.at(k) : json(); };
  std::set<std::string> known(std::begin(kFields), std::end(kFields));
  std::vector<std::string> names(std::begin(kFields), std::end(kFields));
  for (const json* o : {&a, &b})  // fields of another tool version, sorted
    for (const auto& [k, v] : o->items())
      if (k != "hash" && known.insert(k).second) names.push_back(k);
  for (const std::string& name : names) {
    const json va = get(a, name), vb = get(b, name);
    if (va == vb) continue;
    if (name == "env" && (va.is_object() || va.is_null()) && (vb.is_object() || vb.is_null())) {
      std::set<std::string> vars;
      for (const json* o : {&va, &vb})
        if (o->is_object())
          for (const auto& [k, v] : o->items()) vars.insert(k);
      for (const std::string& var : vars) {
        const json ea = va.is_object() ? get(va, var) : json(), eb = vb.is_object() ? get(vb, var) : json();
        if (ea == eb) continue;
        out.push_back("env " + var + " " + (ea.is_null() ? "unset" : Shown(ea)) + " -> " +
                      (eb.is_null() ? "unset" : Shown(eb)));
      }
      continue;
    }
    out.push_back(name + " " + Shown(va) + " -> " + Shown(vb));
  }
  return out;
}

std::vector<std::string> KeyDifferences(const MeasurementKey& old_key, const MeasurementKey& new_key) {
  return KeyDifferences(old_key.ToJson(), new_key.ToJson());
}

std::string JoinDifferences(const std::vector<std::string>& diffs) {
  std::string s;
  for (const auto& d : diffs) s += (s.empty() ? "" : ", ") + d;
  return s;
}

}  // namespace actgrad::tune
