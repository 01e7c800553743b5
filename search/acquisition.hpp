// Log expected improvement, computed without underflow.
//
// For minimisation EI(x) = sigma * h(z), z = (best - mean) / sigma,
// h(z) = phi(z) + z Phi(z). Far from the incumbent h underflows to 0 (z < -38
// in doubles) and plain EI gives the optimiser a flat zero landscape; log h is
// evaluated in three regimes as in Ament et al., "Unexpected Improvements to
// Expected Improvement" (NeurIPS 2023):
//   z > -1:        log(phi(z) + z Phi(z)) directly;
//   -30 < z <= -1: log phi(z) + log(1 - |z| sqrt(pi/2) erfcx(|z|/sqrt2)), with
//                  erfcx = erfc * exp(x^2) (exact in doubles for x < 21.3);
//   z <= -30:      log phi(z) + log of the asymptotic series of 1 - |z| R(|z|)
//                  (R the Mills ratio): 1/z^2 - 3/z^4 + 15/z^6 - ...,
//                  relative error < 1e-10 there.
#pragma once

namespace hpo::search {

// log h(z), finite for every finite z.
double log_h(double z);

// log EI for minimisation; sigma > 0 (standard deviation, not variance).
double log_expected_improvement(double mean, double sigma, double best);

}  // namespace hpo::search
