// The acquisition search (search/acquisition_optimizer.hpp): globally it finds
// the corner where an acquisition that grows towards a face of the cube is
// largest; with a trust radius it never leaves the box of that radius around
// the point it started from, and finds that box's best corner.
#include "search/acquisition_optimizer.hpp"

#include <gtest/gtest.h>

#include "tests/search/space_fixtures.hpp"

namespace hpo::search {
namespace {

// Larger towards u = (1, 1, ...), as a GP's variance grows towards a face.
Eigen::VectorXd towards_the_face(const std::vector<Eigen::VectorXd>& cand) {
  Eigen::VectorXd out(Eigen::Index(cand.size()));
  for (std::size_t c = 0; c < cand.size(); ++c) out[Eigen::Index(c)] = cand[c].sum();
  return out;
}

TEST(AcquisitionOptimizer, TrustRegionKeepsTheSearchNearItsStart) {
  const FeatureMap map(testing::box_space(4));
  const std::vector<Eigen::VectorXd> around = {Eigen::VectorXd::Constant(4, 0.3)};
  const Eigen::VectorXd global = maximize_acquisition(map, towards_the_face, around, 7, 10);
  const Eigen::VectorXd local = maximize_acquisition(map, towards_the_face, around, 7, 10, 0.1);
  for (int i = 0; i < 4; ++i) {
    EXPECT_GT(global[i], 0.95) << i;
    EXPECT_LE(std::abs(local[i] - 0.3), 0.1 + 1e-12) << i;
    EXPECT_GT(local[i], 0.39) << i;  // the best of its box
  }
}

}  // namespace
}  // namespace hpo::search
