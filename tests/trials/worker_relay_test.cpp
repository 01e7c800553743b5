// The worker relay's rules (admit: pure) and RESP both ways: what a worker
// token may have run on the scheduler's Redis connection, one rule at a time.
#include "trials/redis/worker_relay.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "trials/redis/resp.hpp"

namespace {

using hpo::ErrorCode;
using hpo::trials::WorkerTokenRecord;
using hpo::trials::redis::admit;
using hpo::trials::redis::RelayOptions;
using hpo::trials::redis::Reply;
using Argv = std::vector<std::string>;

const WorkerTokenRecord kAny{"wt1", "gpu-1", "", 0, "admin"};
const WorkerTokenRecord kTeam{"wt2", "gpu-2", "team", 0, "admin"};

bool refused(const WorkerTokenRecord& who, Argv argv) {
  auto r = admit(who, std::move(argv), RelayOptions{});
  if (r) return false;
  EXPECT_EQ(r.error().code, ErrorCode::kUnauthorized);
  EXPECT_NE(r.error().message.find("worker endpoint does not run"), std::string::npos)
      << r.error().message;
  return true;
}

TEST(WorkerRelayRules, TheWorkersOwnFunctionsRunForItsOwnNameOnly) {
  auto claim =
      admit(kAny, {"FCALL", "hpo_claim_batch", "0", "hpo:", "gpu-1", "{}", "1", "3000", "64"},
            RelayOptions{});
  ASSERT_TRUE(claim.ok()) << claim.error().message;
  EXPECT_TRUE(claim->writes);
  EXPECT_TRUE(admit(kAny, {"FCALL", "hpo_complete_batch", "0", "hpo:", "gpu-1", "0"}, {}).ok());
  EXPECT_TRUE(
      admit(kAny, {"FCALL", "hpo_report", "0", "hpo:", "s-1", "0", "gpu-1", "5", "0"}, {}).ok());
  EXPECT_TRUE(admit(kAny, {"FCALL", "hpo_rendezvous", "0", "hpo:", "s-1", "0", "gpu-1"}, {}).ok());
  // Another worker's name, in each Function's own place for it.
  EXPECT_TRUE(refused(kAny, {"FCALL", "hpo_complete_batch", "0", "hpo:", "gpu-9", "0"}));
  EXPECT_TRUE(refused(kAny, {"FCALL", "hpo_report", "0", "hpo:", "s-1", "0", "gpu-9", "5", "0"}));
  EXPECT_TRUE(refused(kAny, {"FCALL", "hpo_heartbeat_batch", "0", "hpo:", "gpu-9", "3000", "0"}));
  EXPECT_TRUE(refused(kAny, {"FCALL", "hpo_release", "0", "hpo:", "s-1", "0", "gpu-9", "x", "0"}));
  EXPECT_TRUE(refused(kAny, {"FCALL", "hpo_rendezvous", "0", "hpo:", "s-1", "0"}));
  // Another prefix, keys passed, or a short call.
  EXPECT_TRUE(refused(kAny, {"FCALL", "hpo_complete_batch", "0", "other:", "gpu-1", "0"}));
  EXPECT_TRUE(refused(kAny, {"FCALL", "hpo_complete_batch", "1", "hpo:", "gpu-1", "0"}));
  EXPECT_TRUE(refused(kAny, {"FCALL", "hpo_claim_batch", "0", "hpo:"}));
}

TEST(WorkerRelayRules, NoFunctionOfTheSchedulerOrOfAccessRuns) {
  for (const char* fn :
       {"hpo_cancel_sweep", "hpo_delete_sweep", "hpo_update_project", "hpo_create_user",
        "hpo_add_token", "hpo_resolve_token", "hpo_set_control", "hpo_reap", "hpo_finish_sweep",
        "hpo_create_trials", "hpo_add_worker_token", "hpo_resolve_worker_token", "hpo_claim",
        "hpo_complete", "hpo_heartbeat", "hpo_audit_record", "hpo_worker_may_read"})
    EXPECT_TRUE(refused(kAny, {"FCALL", fn, "0", "hpo:", "gpu-1"})) << fn;
}

TEST(WorkerRelayRules, RawCommandsOnProjectsSpecsAndUsageAreRefused) {
  EXPECT_TRUE(refused(kAny, {"HSET", "hpo:project:victim", "weight", "1000"}));
  EXPECT_TRUE(refused(kAny, {"HINCRBY", "hpo:project:victim", "use_slots", "1000000"}));
  EXPECT_TRUE(refused(kAny, {"HGET", "hpo:sweep:s-1", "spec"}));
  EXPECT_TRUE(refused(kAny, {"HGETALL", "hpo:trial:s-1"}));
  EXPECT_TRUE(refused(kAny, {"GET", "hpo:sweep_artifact:s-1:model"}));
  EXPECT_TRUE(refused(kAny, {"HGET", "hpo:deployment", "max_report_bytes"}));
  EXPECT_TRUE(refused(kAny, {"XREAD", "STREAMS", "hpo:events", "0"}));
  EXPECT_TRUE(refused(kAny, {"EVAL", "return 1", "0"}));
  EXPECT_TRUE(refused(kAny, {"FUNCTION", "LOAD", "REPLACE", "#!lua name=x"}));
  EXPECT_TRUE(refused(kAny, {"SCAN", "0"}));
  EXPECT_TRUE(refused(kAny, {"FLUSHALL"}));
  EXPECT_TRUE(refused(kAny, {"ACL", "LIST"}));
  EXPECT_TRUE(refused(kAny, {"MULTI"}));
  EXPECT_TRUE(refused(kAny, {}));
}

TEST(WorkerRelayRules, ReadsAreOfWhatAWorkerNeeds) {
  auto artifact = admit(kAny, {"GET", "hpo:artifact:s-1-3:checkpoint"}, {});
  ASSERT_TRUE(artifact.ok());
  EXPECT_EQ(artifact->read_trial, "s-1-3") << "only where worker_may_read says so";
  EXPECT_FALSE(artifact->writes);
  EXPECT_TRUE(admit(kAny, {"HMGET", "hpo:deployment", "artifact_dir", "artifact_marker"}, {}).ok());
  EXPECT_TRUE(admit(kAny, {"SMEMBERS", "hpo:sweeps:active"}, {}).ok());
  EXPECT_TRUE(admit(kAny, {"TIME"}, {}).ok());
  EXPECT_TRUE(admit(kAny, {"FUNCTION", "LIST", "LIBRARYNAME", "hpo_v1", "WITHCODE"}, {}).ok());
}

TEST(WorkerRelayRules, AWaitIsBoundedAndOnTheWakeStreamOnly) {
  RelayOptions o;
  o.max_block = std::chrono::milliseconds(2000);
  auto wait =
      admit(kAny, {"XREAD", "COUNT", "1", "BLOCK", "600000", "STREAMS", "hpo:wake", "0-0"}, o);
  ASSERT_TRUE(wait.ok());
  EXPECT_EQ(wait->block.count(), 2000);
  EXPECT_EQ(wait->argv[4], "2000");
  auto forever = admit(kAny, {"XREAD", "BLOCK", "0", "STREAMS", "hpo:wake", "$"}, o);
  ASSERT_TRUE(forever.ok());
  EXPECT_EQ(forever->block.count(), 2000) << "0 (for ever) is the longest wait allowed";
  EXPECT_TRUE(refused(kAny, {"XREAD", "BLOCK", "x", "STREAMS", "hpo:wake", "$"}));
  EXPECT_TRUE(refused(kAny, {"XREAD", "STREAMS", "hpo:wake", "hpo:events", "0", "0"}));
}

TEST(WorkerRelayRules, AProjectBoundTokenOffersAndRegistersItsProjectOnly) {
  EXPECT_TRUE(admit(kTeam,
                    {"FCALL", "hpo_claim_batch", "0", "hpo:", "gpu-2",
                     R"({"slots":1,"project":"team"})", "1", "3000", "64"},
                    {})
                  .ok());
  EXPECT_TRUE(refused(kTeam, {"FCALL", "hpo_claim_batch", "0", "hpo:", "gpu-2", R"({"slots":1})",
                              "1", "3000", "64"}));
  EXPECT_TRUE(refused(kTeam, {"FCALL", "hpo_claim_batch", "0", "hpo:", "gpu-2",
                              R"({"slots":1,"project":"other"})", "1", "3000", "64"}));
  EXPECT_TRUE(refused(kTeam, {"FCALL", "hpo_put_worker", "0", "hpo:", "gpu-2",
                              R"({"name":"gpu-2","project":"other"})", "3000"}));
  EXPECT_TRUE(refused(
      kTeam, {"FCALL", "hpo_claim_batch", "0", "hpo:", "gpu-2", "not json", "1", "3000", "64"}));
}

TEST(WorkerRelayRules, TheReportCapIsTheSchedulers) {
  RelayOptions o;
  o.max_reports_per_trial = 100;
  auto r =
      admit(kAny, {"FCALL", "hpo_report", "0", "hpo:", "s-1", "0", "gpu-1", "999999999", "0"}, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->argv[7], "100");
}

TEST(WorkerRelayRules, ATokenForANamePrefixIsEachNamedWorkerUnderItAlone) {
  const WorkerTokenRecord pool{"wt3", "slurm-*", "", 0, "admin"};
  EXPECT_TRUE(pool.names_many());
  auto one = pool.as_worker("slurm-77_3-node4");
  ASSERT_TRUE(one.ok()) << one.error().message;
  EXPECT_EQ(one->host, "slurm-77_3-node4");
  EXPECT_FALSE(one->names_many());
  // As that worker, another worker's name in a Function is refused as before.
  EXPECT_TRUE(refused(*one, {"FCALL", "hpo_heartbeat_batch", "0", "hpo:", "slurm-1_0-node1", "0"}));
  for (const char* bad : {"", "gpu-1", "slurm", "slurm-a b", "slurm-*"}) {
    auto r = pool.as_worker(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, hpo::ErrorCode::kUnauthorized);
    EXPECT_NE(r.error().message.find("slurm-*"), std::string::npos) << r.error().message;
  }
  // A token for one worker: its own name, or none (an earlier worker); never another.
  EXPECT_TRUE(kAny.as_worker("").ok());
  EXPECT_TRUE(kAny.as_worker("gpu-1").ok());
  EXPECT_FALSE(kAny.as_worker("gpu-2").ok());
  // What a token may be made for.
  EXPECT_TRUE(hpo::trials::check_worker_name("host", "slurm-*", true).ok());
  EXPECT_FALSE(hpo::trials::check_worker_name("host", "*", true).ok());
  EXPECT_FALSE(hpo::trials::check_worker_name("host", "slurm-*", false).ok());
  EXPECT_FALSE(hpo::trials::check_worker_name("host", "a*b*", true).ok());
}

TEST(Resp, CommandsAndRepliesRoundTripBinarySafe) {
  const std::string bytes("a\0b\r\nc", 6);
  auto cmds =
      hpo::trials::redis::parse_commands(hpo::trials::redis::resp_command({"SET", "k", bytes}) +
                                             hpo::trials::redis::resp_command({"PING"}),
                                         8);
  ASSERT_TRUE(cmds.ok()) << cmds.error().message;
  ASSERT_EQ(cmds->size(), 2u);
  EXPECT_EQ((*cmds)[0][2], bytes);
  Reply arr;
  arr.type = Reply::Type::kArray;
  Reply s, e, n, i;
  s.type = Reply::Type::kString;
  s.str = bytes;
  e.type = Reply::Type::kError;
  e.str = "UNAUTHORIZED two\r\nlines";
  i.type = Reply::Type::kInteger;
  i.integer = -7;
  arr.elements = {s, e, n, i};
  auto back = hpo::trials::redis::parse_resp(hpo::trials::redis::resp_reply(arr), 4);
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_EQ(back->size(), 1u);
  const Reply& got = back->front();
  ASSERT_EQ(got.elements.size(), 4u);
  EXPECT_EQ(got.elements[0].str, bytes);
  EXPECT_TRUE(got.elements[1].is_error());
  EXPECT_EQ(got.elements[1].str, "UNAUTHORIZED two  lines");
  EXPECT_TRUE(got.elements[2].is_nil());
  EXPECT_EQ(got.elements[3].integer, -7);
}

TEST(Resp, WhatIsNotACommandIsRefusedNamingWhy) {
  using hpo::trials::redis::parse_commands;
  EXPECT_EQ(parse_commands("*2\r\n$3\r\nGET\r\n", 8).error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(parse_commands(":1\r\n", 8).error().message.find("not a command"), std::string::npos);
  EXPECT_NE(parse_commands("hello", 8).error().message.find("not RESP"), std::string::npos);
  const std::string many = hpo::trials::redis::resp_command({"PING"});
  EXPECT_NE(parse_commands(many + many + many, 2).error().message.find("more than 2"),
            std::string::npos);
}

}  // namespace
