// Data roots at submit: the lexical rules (trials/data_roots.hpp).
#include <gtest/gtest.h>

#include "trials/data_roots.hpp"

namespace hpo::trials {
namespace {

TEST(DataRoots, LexicallyUnderFoldsDotsAndSlashes) {
  EXPECT_TRUE(lexically_under("/usr/share/datasets/a.csv", "/usr/share/datasets"));
  EXPECT_TRUE(lexically_under("/usr/share/datasets/x/../a.csv", "/usr/share/datasets/"));
  EXPECT_TRUE(lexically_under("//usr/share//datasets/./a.csv", "/usr/share/datasets"));
  EXPECT_FALSE(lexically_under("/usr/share/datasets/../../etc/passwd", "/usr/share/datasets"));
  EXPECT_FALSE(lexically_under("/usr/share/datasets-evil/a.csv", "/usr/share/datasets"));
  EXPECT_FALSE(lexically_under("/usr/share/datasets", "/usr/share/datasets"));  // not a file
  EXPECT_FALSE(lexically_under("a.csv", "/usr/share/datasets"));                // relative
  EXPECT_TRUE(lexically_under("/etc/passwd", "/"));
}

TEST(DataRoots, SubmitRefusesPathsOutsideEveryRootWithTheFieldPath) {
  TorchDataRecipe d;
  d.format = "csv";
  d.train = "/srv/data/train.csv";
  d.validation = "/etc/passwd";
  d.test = "../secrets/test.csv";
  d.target = "y";
  auto errors = check_data_paths(d, {"/usr/share/datasets", "/srv/data"});
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0].path, "trial.data.validation");
  EXPECT_NE(errors[0].message.find("/etc/passwd"), std::string::npos);
  EXPECT_NE(errors[0].message.find("/usr/share/datasets, /srv/data"), std::string::npos);
  EXPECT_EQ(errors[1].path, "trial.data.test");
  EXPECT_NE(errors[1].message.find(".."), std::string::npos);
  d.validation = "sub/../val.csv";  // stays inside: fine
  d.test = "test.csv";
  EXPECT_TRUE(check_data_paths(d, {"/srv/data"}).empty());
  d.validation = "/etc/passwd";
  EXPECT_TRUE(check_data_paths(d, {}).empty());  // no roots: confinement off
}

}  // namespace
}  // namespace hpo::trials
