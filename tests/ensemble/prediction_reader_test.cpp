#include <gtest/gtest.h>

#include <cstring>

#include "ensemble/prediction_reader.hpp"

namespace hpo::ensemble {
namespace {

PredictionShape classes(std::int64_t rows, std::int64_t k) {
  PredictionShape s;
  s.classes = k;
  s.rows = rows;
  s.rows_field = "trial.data.validation_rows";
  return s;
}

std::string error_of(const Result<PredictionFile>& r) {
  return r.ok() ? std::string("(no error)") : r.error().message;
}

TEST(PredictionCsv, ReadsRowsInAnyOrderSortedByRowId) {
  auto r = read_prediction_csv(
      "row_id,target,p0,p1,p2\n2,1,0.1,0.8,0.1\n0,0,0.7,0.2,0.1\r\n1,2,0.001,0.001,1\n\n",
      "validation.csv", classes(3, 3));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(r->regression);
  EXPECT_EQ(r->row_ids, (std::vector<std::int64_t>{0, 1, 2}));
  EXPECT_EQ(r->labels, (std::vector<float>{0, 2, 1}));
  EXPECT_FLOAT_EQ(r->values(0, 0), 0.7f);
  EXPECT_FLOAT_EQ(r->values(2, 1), 0.8f);
  EXPECT_FLOAT_EQ(r->values(1, 2), static_cast<float>(1 / 1.002));  // renormalised
}

TEST(PredictionCsv, RegressionValues) {
  PredictionShape s;
  s.regression = true;
  s.rows = 2;
  auto r = read_prediction_csv("row_id,target,value\n1,-2.5,-2.25\n0,3e2,301\n", "test.csv", s);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->regression);
  EXPECT_EQ(r->values.cols, 1);
  EXPECT_FLOAT_EQ(r->values(0, 0), 301);
  EXPECT_FLOAT_EQ(r->labels[1], -2.5f);
  EXPECT_NE(error_of(read_prediction_csv("row_id,target,value\n0,1,nan\n1,1,2\n", "test.csv", s))
                .find("test.csv:2:3: expected a finite predicted value"),
            std::string::npos);
  // Finite as a double but not as the float32 the artifact stores (found by the fuzzer).
  EXPECT_NE(error_of(read_prediction_csv("row_id,target,value\n0,1,1e39\n1,1,2\n", "test.csv", s))
                .find("test.csv:2:3: expected a finite predicted value within float range"),
            std::string::npos);
  EXPECT_NE(error_of(read_prediction_csv("row_id,target,value\n0,-1e300,1\n1,1,2\n", "test.csv", s))
                .find("test.csv:2:2: the target must be a finite number within float range"),
            std::string::npos);
}

// Every malformed file names the file, the line and the column.
TEST(PredictionCsv, ErrorsNameTheFileLineAndColumn) {
  const auto shape = classes(2, 2);
  struct Case {
    const char* text;
    const char* expected;
  } cases[] = {
      {"", "validation.csv: the file is empty"},
      {"id,target,p0,p1\n", "validation.csv:1:1: expected the header row_id,target"},
      {"row_id,target,p0\n", "validation.csv:1: the header has 3 columns, expected 4"},
      {"row_id,target,p0,p1\n0,0,0.5,x\n", "validation.csv:2:4: expected a number, got \"x\""},
      {"row_id,target,p0,p1\n0,0,0.5\n", "validation.csv:2: 3 columns, expected 4"},
      {"row_id,target,p0,p1\n0.5,0,0.5,0.5\n", "validation.csv:2:1: expected an integer row id"},
      {"row_id,target,p0,p1\n0,0,1.5,-0.5\n",
       "validation.csv:2:3: expected a class probability in [0, 1], got 1.5"},
      {"row_id,target,p0,p1\n0,0,0.5,0.7\n",
       "validation.csv:2: the class probabilities sum to 1.2"},
      {"row_id,target,p0,p1\n0,2,0.5,0.5\n", "validation.csv:2:2: expected a class in 0..1"},
      {"row_id,target,p0,p1\n0,0,0.5,0.5\n0,1,0.5,0.5\n",
       "validation.csv:3:1: row id 0 appears twice (first at validation.csv:2)"},
      {"row_id,target,p0,p1\n0,0,0.5,0.5\n7,1,0.5,0.5\n",
       "validation.csv:3:1: row id 7 is outside 0..1"},
      {"row_id,target,p0,p1\n1,0,0.5,0.5\n",
       "validation.csv: 1 rows, expected 2 rows (trial.data.validation_rows); row id 0 is missing"},
      {"row_id,target,p0,p1\n0,0,1,0\n1,0,1,0\n1,0,1,0\n", "validation.csv:4: more rows than"},
  };
  for (const auto& c : cases) {
    auto r = read_prediction_csv(c.text, "validation.csv", shape);
    EXPECT_NE(error_of(r).find(c.expected), std::string::npos)
        << "input: " << c.text << "\ngot: " << error_of(r);
  }
}

TEST(PredictionCsv, OutOfBagRowsMustBeTheMembersOwn) {
  auto shape = classes(0, 2);
  shape.row_ids = {3, 5, 9};
  auto ok =
      read_prediction_csv("row_id,target,a,b\n9,1,0,1\n3,0,1,0\n5,0,0.6,0.4\n", "oob.csv", shape);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->row_ids, (std::vector<std::int64_t>{3, 5, 9}));
  auto bad = read_prediction_csv("row_id,target,a,b\n4,1,0,1\n", "oob.csv", shape);
  EXPECT_NE(error_of(bad).find("oob.csv:2:1: row 4 is not one of the member's out-of-bag rows"),
            std::string::npos)
      << error_of(bad);
  auto few = read_prediction_csv("row_id,target,a,b\n9,1,0,1\n", "oob.csv", shape);
  EXPECT_NE(error_of(few).find("row id 3 is missing"), std::string::npos) << error_of(few);
}

// A minimal .npy writer (format 1.0), as numpy.save writes it.
std::string npy(const std::string& descr, const std::string& shape, const void* data,
                std::size_t bytes, bool fortran = false) {
  std::string header = "{'descr': '" + descr +
                       "', 'fortran_order': " + (fortran ? "True" : "False") +
                       ", 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  out.append(static_cast<const char*>(data), bytes);
  return out;
}

TEST(PredictionNpy, ReadsValuesAndTargets) {
  const double values[] = {0.2, 0.8, 0.9, 0.1, 0.5, 0.5};
  const std::int64_t targets[] = {1, 0, 1};
  auto r = read_prediction_npy(npy("<f8", "(3, 2)", values, sizeof values), "validation.npy",
                               npy("<i8", "(3,)", targets, sizeof targets),
                               "validation_targets.npy", classes(3, 2));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->row_ids, (std::vector<std::int64_t>{0, 1, 2}));
  EXPECT_FLOAT_EQ(r->values(1, 0), 0.9f);
  EXPECT_EQ(r->labels, (std::vector<float>{1, 0, 1}));

  const float f32[] = {0.2f, 0.8f, 0.9f, 0.1f};
  auto shape_error = read_prediction_npy(npy("<f4", "(2, 2)", f32, sizeof f32), "validation.npy",
                                         npy("<i8", "(3,)", targets, sizeof targets),
                                         "validation_targets.npy", classes(3, 2));
  EXPECT_NE(error_of(shape_error).find("validation.npy: shape (2, 2), expected (3, 2)"),
            std::string::npos)
      << error_of(shape_error);
  auto fortran =
      read_prediction_npy(npy("<f8", "(3, 2)", values, sizeof values, true), "v.npy",
                          npy("<i8", "(3,)", targets, sizeof targets), "t.npy", classes(3, 2));
  EXPECT_NE(error_of(fortran).find("Fortran-order"), std::string::npos);
  auto dtype =
      read_prediction_npy(npy(">f8", "(3, 2)", values, sizeof values), "v.npy",
                          npy("<i8", "(3,)", targets, sizeof targets), "t.npy", classes(3, 2));
  EXPECT_NE(error_of(dtype).find("dtype \">f8\" is not supported"), std::string::npos)
      << error_of(dtype);
  auto truncated =
      read_prediction_npy(npy("<f8", "(3, 2)", values, sizeof values - 8), "v.npy",
                          npy("<i8", "(3,)", targets, sizeof targets), "t.npy", classes(3, 2));
  EXPECT_NE(error_of(truncated).find("v.npy: 40 bytes of data"), std::string::npos)
      << error_of(truncated);
  EXPECT_NE(error_of(read_prediction_npy("garbage", "v.npy", "", "t.npy", classes(3, 2)))
                .find("v.npy: not a NumPy .npy file"),
            std::string::npos);
  const double bad_probability[] = {0.2, 0.8, 1.9, 0.1, 0.5, 0.5};
  auto prob =
      read_prediction_npy(npy("<f8", "(3, 2)", bad_probability, sizeof values), "v.npy",
                          npy("<i8", "(3,)", targets, sizeof targets), "t.npy", classes(3, 2));
  EXPECT_NE(error_of(prob).find("v.npy: row 1, column 1: expected a class probability"),
            std::string::npos)
      << error_of(prob);
}

}  // namespace
}  // namespace hpo::ensemble
