// One reader for every typed JSON section: the sweep spec, its `ensemble` section,
// the torch recipe, the ensemble manifest (and the stored records the REST API decodes).
//
// DESIGN. A reader wraps one JSON object that sits at a known path ("trial.model")
// and appends one FieldError {path, message} per problem to the caller's vector; it
// never throws and keeps going after a bad field, so one pass reports every problem
// (a caller that stops at the first takes errors.front()). Each getter marks its key
// as read, so unknown_keys() can report the keys nobody asked for. A getter returns
// nullopt/nullptr both when the key is absent and when it is bad: the caller keeps
// its default and the error is already recorded.
//
// One wording for one problem, whichever document it is in:
//   expected a string, got an integer 5       a wrong type (the value cut at 60 chars)
//   is required                               absent (or null, where null means absent)
//   5 is out of range: expected 1 to 4        a number or an integer outside [lo, hi]
//   "x" is not one of: a, b                   a string outside its set
//   unknown key (expected one of: a, b)       a key no getter read (the hint is optional)
//   must be a finite number
// Paths are dotted, with [i] for an array item: "trial.model.hidden[1]".
//
// FieldRules hold the two corner cases on which the documents' grammars differ: a
// null value is an absent key in the spec and the manifest but a wrong type in the
// ensemble section and the torch recipe, and the spec reads 2.0 as an integer while
// the ensemble section and the manifest refuse it. Integers never wrap: a value past
// int64 (nlohmann keeps it unsigned) is out of range (json_int64, json_limits.hpp).
//
// One template for nlohmann::json and nlohmann::ordered_json (the spec keeps the
// user's key order); both are instantiated in json_fields.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/result.hpp"

namespace hpo::trials {

struct FieldRules {
  bool null_is_absent = true;      // false: `"key": null` is a value of the wrong type
  bool floats_as_integers = true;  // true: an integral float (2.0, |x| < 9e15) is an integer
};

template <class Json>
class BasicFieldReader {
 public:
  // `j` is the object itself (callers check that it is one); `path` is where it sits
  // ("" at the root); errors go to `errors`, which must outlive the reader.
  BasicFieldReader(const Json& j, std::string path, std::vector<FieldError>& errors,
                   FieldRules rules = {});

  // ---- paths and errors ----
  const std::string& path() const { return path_; }
  std::string at(std::string_view key) const;                       // path + "." + key
  static std::string item(const std::string& path, std::size_t i);  // path + "[i]"
  void error(const std::string& path, std::string message);
  // "expected <what>, got <the type> <the value>" at `path`.
  void expected(const std::string& path, std::string_view what, const Json& got);
  // No error appended (by this reader or anyone else) since this reader was made.
  bool ok() const { return errors_.size() == errors_before_; }

  // ---- members of the object; each marks its key as read ----
  // The value, or nullptr when absent (an "is required" error when `required`).
  const Json* get(const std::string& key, bool required = false);
  void mark_seen(const std::string& key) { seen_.insert(key); }
  std::optional<std::string> string(const std::string& key, bool required = false);
  std::optional<std::string> one_of(const std::string& key,
                                    std::initializer_list<const char*> allowed,
                                    bool required = false);
  std::optional<std::string> one_of(const std::string& key, std::span<const char* const> allowed,
                                    bool required = false);
  std::optional<double> number(const std::string& key, bool required = false);  // finite only
  std::optional<double> number_in(const std::string& key, double lo, double hi,
                                  bool required = false);
  std::optional<std::int64_t> integer(const std::string& key, std::int64_t lo, std::int64_t hi,
                                      bool required = false);
  std::optional<bool> boolean(const std::string& key, bool required = false);
  const Json* object(const std::string& key, bool required = false);
  const Json* array(const std::string& key, bool required = false);

  // ---- the same checks on a value that is not a member (an array item) ----
  std::optional<double> as_number(const Json& v, const std::string& path);
  std::optional<std::int64_t> as_integer(const Json& v, const std::string& path, std::int64_t lo,
                                         std::int64_t hi);
  bool is_integer(const Json& v) const;  // under this reader's rules; range not checked

  // An "unknown key" error for every key no getter read (or mark_seen named).
  void unknown_keys(const char* expected_keys = nullptr);
  const std::set<std::string>& seen() const { return seen_; }

  // The house wording's parts: "an integer", "a string", ...; the value as JSON, shortened.
  static std::string type_name(const Json& v);
  static std::string describe(const Json& v);

 private:
  const Json& j_;
  std::string path_;
  std::vector<FieldError>& errors_;
  std::size_t errors_before_;
  FieldRules rules_;
  std::set<std::string> seen_;
};

using FieldReader = BasicFieldReader<nlohmann::json>;
using OrderedFieldReader = BasicFieldReader<nlohmann::ordered_json>;

extern template class BasicFieldReader<nlohmann::json>;
extern template class BasicFieldReader<nlohmann::ordered_json>;

}  // namespace hpo::trials
