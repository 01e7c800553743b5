// The sweep spec encoder: a parsed SweepSpec back to JSON text, the inverse of parse_spec().
//
// The round-trip guarantee: for any text T that parse_spec() accepts, d = dump_spec(parse_spec(T))
// is accepted by parse_spec() too, parses to the same typed spec, and dumps to d again. So a spec
// can be stored, shown or compared in one canonical form; the spec fuzz target and
// tests/trials/spec/spec_roundtrip_test.cpp check the guarantee.
//
// The dump holds every field of the typed structs, defaults included, with two kinds of
// exception, both dictated by what parse_spec() accepts: an optional that is absent stays absent
// (step, when, early_stopping, ensemble, ensemble epochs/subset, resources.memory_gb 0 = no cap),
// and a field is written only where the parser reads it (the recipe of the trial's kind, the
// pruner's own settings, selection_* under combine "selection", top_k under base top_k).
// `SweepSpec::source` (the text itself) and the spec's `description` are not part of it.
#pragma once

#include <string>

#include "trials/spec/spec.hpp"

namespace hpo::trials {

// Compact JSON, object keys sorted (parameters and the command's env keep their order), doubles in
// shortest round-trip form; parse_spec() reads it back to `spec` (less `source`).
std::string dump_spec(const SweepSpec& spec);

}  // namespace hpo::trials
