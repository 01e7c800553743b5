// The OpenAPI document and the router must list the same routes.
#include <set>

#include <gtest/gtest.h>

#include "trials/record_names.hpp"
#include "web/api.hpp"
#include "web/api_errors.hpp"
#include "web/json_codec.hpp"

namespace hpo::web {
namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

TEST(OpenApi, DocumentAndRouterListTheSameRoutes) {
  EventHub hub;
  Api api(
      ApiOptions{},
      []() -> Result<std::unique_ptr<trials::Store>> { return Error::unavailable("no store"); },
      hub);
  auto doc = parse_json(Api::openapi_json());
  ASSERT_TRUE(doc.ok());
  EXPECT_EQ((*doc)["openapi"].get<std::string>().rfind("3.", 0), 0u);
  std::set<std::string> documented, routed;
  for (auto& [path, item] : (*doc)["paths"].items())
    for (auto& [method, op] : item.items()) documented.insert(lower(method) + " " + path);
  for (const auto& r : api.routes()) routed.insert(lower(r.method) + " " + r.pattern);
  EXPECT_EQ(documented, routed);
  EXPECT_GE(routed.size(), 10u);
}

// The records' enums come from their one spelling (trials/record_names.hpp).
TEST(OpenApi, TheRecordsEnumsAreTheNameTables) {
  auto doc = parse_json(Api::openapi_json());
  ASSERT_TRUE(doc.ok());
  auto names = [](auto table) {
    Json out = Json::array();
    for (const char* n : table.all()) out.push_back(n);
    return out;
  };
  const Json& schemas = (*doc)["components"]["schemas"];
  EXPECT_EQ(schemas["Trial"]["properties"]["state"]["enum"], names(trials::kTrialStateNames));
  EXPECT_EQ(schemas["Trial"]["properties"]["kind"]["enum"], names(trials::kTrialRoleNames));
  EXPECT_EQ(schemas["Trial"]["properties"]["control"]["enum"], names(trials::kControlNames));
  EXPECT_EQ(schemas["Sweep"]["properties"]["state"]["enum"], names(trials::kSweepStateNames));
  EXPECT_EQ(schemas["Sweep"]["properties"]["stage"]["enum"], names(trials::kSweepStageNames));
  // Error codes: ErrorCode's (core/result.hpp), then the HTTP layer's own.
  Json codes = names(kErrorCodeNames);
  for (const auto& c : names(kHttpErrorNames)) codes.push_back(c);
  EXPECT_EQ(schemas["Error"]["properties"]["error"]["properties"]["code"]["enum"], codes);
}

TEST(OpenApi, EveryReferenceResolves) {
  auto doc = parse_json(Api::openapi_json());
  ASSERT_TRUE(doc.ok());
  std::vector<const Json*> stack{&*doc};
  int refs = 0;
  while (!stack.empty()) {
    const Json* j = stack.back();
    stack.pop_back();
    if (j->is_object()) {
      if (auto it = j->find("$ref"); it != j->end()) {
        std::string ref = it->get<std::string>();
        ASSERT_EQ(ref.rfind("#/", 0), 0u) << ref;
        EXPECT_TRUE(doc->contains(Json::json_pointer(ref.substr(1)))) << ref;
        ++refs;
      }
      for (auto& [k, v] : j->items()) stack.push_back(&v);
    } else if (j->is_array()) {
      for (auto& v : *j) stack.push_back(&v);
    }
  }
  EXPECT_GT(refs, 10);
}

TEST(OpenApi, ServedByTheApi) {
  EventHub hub;
  Api api(
      ApiOptions{},
      []() -> Result<std::unique_ptr<trials::Store>> { return Error::unavailable("no store"); },
      hub);
  Request r;
  r.method = "GET";
  r.path = "/api/openapi.json";
  auto res = api.handle(r);
  EXPECT_EQ(res.status, 200);
  EXPECT_EQ(res.body, Api::openapi_json());
}

}  // namespace
}  // namespace hpo::web
