// The names of what hpo stores with a trial (TrialQueue::put_artifact) or a
// sweep (ArtifactStore::put_sweep_record), in one place: the worker writes them, the ensemble
// stage, the REST API, the CLI's export and hpo-predict read them.
#pragma once

namespace hpo::trials::artifact {

// A torch trial's (workers/torch): the trained module, and its predictions on
// the validation and test rows (and, for an ensemble member, its out-of-bag
// training rows) in ensemble/prediction_file.hpp's format. A command trial's
// predictions become the same three artifacts (workers/command_outputs.hpp).
inline constexpr char kModel[] = "model.pt";
inline constexpr char kValPredictions[] = "val_predictions";
inline constexpr char kTestPredictions[] = "test_predictions";
inline constexpr char kOobPredictions[] = "oob_predictions";
// An ensemble member's plan summary (ensemble/bagging_json.hpp: data shape and
// feature subset, without the row lists), written by the torch and command workers.
inline constexpr char kBaggingPlan[] = "bagging.json";
// A command trial's own files from $HPO_OUTPUT_DIR (models, plots) are kept as
// "output.<file name>".
inline constexpr char kOutputPrefix[] = "output.";
// The latest checkpoint of a trial (a torch trial's: its trainer's state at an
// epoch's end or where a drain stopped it; trainer.hpp). Written by the
// running attempt, fenced like every artifact; the next attempt resumes from it.
inline constexpr char kCheckpoint[] = "checkpoint";
// Every attempt's: the tail of its output (stdout lines that are not metrics, and stderr).
inline constexpr char kLog[] = "log.txt";
// The ensemble stage's, records of the sweep itself: the record the API serves
// at /api/sweeps/{id}/ensemble, and the manifest hpo-predict reads from an
// exported directory (both also at /api/sweeps/{id}/artifacts/{name}).
inline constexpr char kEnsembleRecord[] = "ensemble.json";
inline constexpr char kEnsembleManifest[] = "manifest.json";

}  // namespace hpo::trials::artifact
