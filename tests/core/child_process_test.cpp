// Where a child's output goes (core/child_process.hpp): through pipes the
// parent reads (tests/workers/agent/ covers those, with trials), to the
// parent's own stdout (`hpo predict`'s predictor), or to /dev/null (the
// embedded redis-server, which logs to its own file).
#include "core/child_process.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace hpo {
namespace {

SpawnOptions shell(const std::string& script, SpawnOptions::Output output) {
  SpawnOptions o;
  o.argv = {"sh", "-c", script};
  o.env = {"PATH=/bin:/usr/bin"};
  o.output = output;
  return o;
}

// Polls until the child ended; the lines the parent was handed.
std::vector<std::string> run_to_exit(ChildProcess& p) {
  std::vector<std::string> lines;
  while (!p.poll(100, [&](Stream, std::string_view l) { lines.emplace_back(l); })) {
  }
  return lines;
}

TEST(ChildProcessOutput, InheritedOutputIsTheParentsOwn) {
  int pipefd[2];
  ASSERT_EQ(::pipe(pipefd), 0);
  const int saved = ::dup(1);
  ASSERT_GE(saved, 0);
  ASSERT_EQ(::dup2(pipefd[1], 1), 1);  // this process's stdout is the pipe while the child starts
  auto child = ChildProcess::spawn(shell("echo to-the-terminal", SpawnOptions::Output::kInherit));
  ::dup2(saved, 1);
  ::close(saved);
  ::close(pipefd[1]);
  ASSERT_TRUE(child.ok()) << child.error().message;
  EXPECT_TRUE(run_to_exit(*child).empty()) << "nothing passes through the parent";
  EXPECT_EQ(child->exit_status(), 0);
  std::string got;
  char buf[64];
  for (ssize_t n; (n = ::read(pipefd[0], buf, sizeof buf)) > 0;) got.append(buf, n);
  ::close(pipefd[0]);
  EXPECT_EQ(got, "to-the-terminal\n");
}

TEST(ChildProcessOutput, DiscardedOutputGoesNowhereAndTheExitIsSeen) {
  auto child =
      ChildProcess::spawn(shell("echo out; echo err >&2; exit 3", SpawnOptions::Output::kNull));
  ASSERT_TRUE(child.ok()) << child.error().message;
  EXPECT_TRUE(run_to_exit(*child).empty());
  ASSERT_TRUE(child->exit_status().has_value());
  EXPECT_TRUE(WIFEXITED(*child->exit_status()));
  EXPECT_EQ(WEXITSTATUS(*child->exit_status()), 3);
}

TEST(ChildProcessOutput, APipedChildsLinesReachTheParent) {
  auto child = ChildProcess::spawn(shell("echo one; echo two", SpawnOptions::Output::kPipes));
  ASSERT_TRUE(child.ok()) << child.error().message;
  EXPECT_EQ(run_to_exit(*child), (std::vector<std::string>{"one", "two"}));
}

TEST(ChildProcessOutput, AProgramNotFoundIsAnErrorBeforeAnythingStarts) {
  SpawnOptions missing = shell("", SpawnOptions::Output::kNull);
  missing.argv = {"hpo-no-such-program"};
  auto none = ChildProcess::spawn(missing);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("hpo-no-such-program"), std::string::npos)
      << none.error().message;
}

}  // namespace
}  // namespace hpo
