// The OpenAPI 3 document of the REST API, served at /api/openapi.json.
// tests/web/openapi_test.cpp checks that every route the Api registers is here
// and that every path here is a registered route, so the two stay equal.
#include "web/api.hpp"

#include <span>
#include <string>
#include <utility>
#include <vector>

#include "trials/record_names.hpp"
#include "web/api_errors.hpp"

namespace hpo::web {

namespace {
const char* const kOpenApi = R"json({
  "openapi": "3.0.3",
  "info": {
    "title": "hpo",
    "version": "0.1.0",
    "description": "Hyperparameter search and ensemble orchestration. Calls carry `Authorization: Bearer <token>` (an event stream may be opened with a one-time ?ticket= from POST /api/events/ticket instead; a token never goes into a URL): the scheduler's own token is its bootstrap admin's, users' tokens name them. Every sweep belongs to a project; a user is a viewer (reads), member (submits; cancels and deletes their own sweeps) or admin (everything in the project) of each project they are in. A resource of a project the caller may not read answers 404 exactly as one that does not exist; one they may read but not change answers 403. Without a token, reads are open only on a one-person install (one user) that does not protect reads. Every error has the shape {\"error\": {\"code\", \"message\", \"fields\": [{\"path\", \"message\"}]}}."
  },
  "components": {
    "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
    "parameters": {
      "id": {"name": "id", "in": "path", "required": true, "schema": {"type": "string"}},
      "offset": {"name": "offset", "in": "query", "schema": {"type": "integer", "minimum": 0, "default": 0}},
      "limit": {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 0, "maximum": 1000, "default": 100}},
      "project": {"name": "project", "in": "query", "description": "the project (1 to 64 of a-z 0-9 . _ -); default: \"default\"", "schema": {"type": "string", "pattern": "^[a-z0-9][a-z0-9._-]{0,63}$"}},
      "name": {"name": "name", "in": "path", "required": true, "schema": {"type": "string"}},
      "after": {"name": "after", "in": "query", "description": "entries after this id", "schema": {"type": "string"}}
    },
    "schemas": {
      "Error": {"type": "object", "required": ["error"], "properties": {"error": {"type": "object",
        "required": ["code", "message", "fields"], "properties": {
          "code": {"type": "string", "enum": @ERROR_CODES@},
          "message": {"type": "string"},
          "fields": {"type": "array", "items": {"type": "object", "properties": {"path": {"type": "string"}, "message": {"type": "string"}}}}}}}},
      "Counts": {"type": "object", "properties": {
        "queued": {"type": "integer"}, "running": {"type": "integer"}, "completed": {"type": "integer"},
        "failed": {"type": "integer"}, "pruned": {"type": "integer"}, "cancelled": {"type": "integer"}}},
      "Params": {"type": "object", "additionalProperties": {"oneOf": [{"type": "number"}, {"type": "string"}, {"type": "boolean"}]}},
      "Metrics": {"type": "object", "additionalProperties": {"type": "number", "nullable": true}},
      "Sweep": {"type": "object", "required": ["id", "name", "state", "counts", "best", "objective"], "properties": {
        "id": {"type": "string"}, "name": {"type": "string"},
        "state": {"type": "string", "enum": @SWEEP_STATES@},
        "stage": {"type": "string", "enum": @STAGES@},
        "unschedulable": {"type": "string", "description": "why no registered worker can run this sweep's trials (they wait aside, behind no other sweep); empty when one can"},
        "objective": {"type": "object", "properties": {"metric": {"type": "string"}, "mode": {"type": "string", "enum": ["min", "max"]}}},
        "counts": {"$ref": "#/components/schemas/Counts"},
        "member_counts": {"$ref": "#/components/schemas/Counts"},
        "best": {"type": "object", "nullable": true, "properties": {"trial_id": {"type": "string"}, "number": {"type": "integer"}, "params": {"$ref": "#/components/schemas/Params"}, "value": {"type": "number"}}},
        "max_trials": {"type": "integer"}, "members_requested": {"type": "integer"}, "next_number": {"type": "integer"}, "next_member": {"type": "integer"},
        "created_ms": {"type": "integer"}, "finished_ms": {"type": "integer"}, "error": {"type": "string"},
        "project": {"type": "string"}, "owner": {"type": "string", "description": "the user who submitted it (empty: none recorded)"},
        "tags": {"type": "array", "items": {"type": "string"}}, "note": {"type": "string"}, "priority": {"type": "integer"},
        "spec": {"type": "object", "description": "the spec as submitted (its keys in the order written)"}}},
      "Project": {"type": "object", "properties": {"name": {"type": "string"}, "weight": {"type": "number"}, "created_ms": {"type": "integer"},
        "limits": {"type": "object", "description": "its own settings; 0: no limit (for the byte limits: the scheduler's default)", "properties": {"max_slots": {"type": "integer"}, "max_queued_trials": {"type": "integer"}, "max_active_sweeps": {"type": "integer"}, "max_gpus": {"type": "integer"}, "max_store_bytes": {"type": "integer"}, "max_file_bytes": {"type": "integer"}}},
        "use": {"type": "object", "description": "what it holds now", "properties": {"slots": {"type": "integer"}, "queued_trials": {"type": "integer"}, "active_sweeps": {"type": "integer"}, "gpus": {"type": "integer", "description": "the slots of its running trials that asked for GPUs (one GPU each)"}, "store_bytes": {"type": "integer", "description": "what it keeps in Redis: specs, params, reports, results, logs, artifacts kept there"}, "file_bytes": {"type": "integer", "description": "its artifact files in the pool's artifact folder"}}},
        "byte_limits": {"type": "object", "description": "the byte limits in force: its own, else the scheduler's default (0: none)", "properties": {"store_bytes": {"type": "integer"}, "file_bytes": {"type": "integer"}}},
        "role": {"type": "string", "nullable": true, "enum": ["viewer", "member", "admin"]}}},
      "ProjectSettings": {"type": "object", "properties": {"name": {"type": "string", "description": "at creation only"},
        "weight": {"type": "number", "description": "its share of free slots against other projects with ready work (default 1)"},
        "max_slots": {"type": "integer", "minimum": 0, "description": "the most slots its running trials hold at once, enforced by the claim (0: none)"},
        "max_gpus": {"type": "integer", "minimum": 0, "description": "the most GPUs its running trials hold at once (a trial asking for GPUs holds one per slot), enforced by the claim (0: none)"},
        "max_queued_trials": {"type": "integer", "minimum": 0, "description": "a submit while it has this many queued trials is refused with 429 (0: none)"},
        "max_active_sweeps": {"type": "integer", "minimum": 0, "description": "a submit while it has this many running sweeps is refused with 429 (0: none)"},
        "max_store_bytes": {"type": "integer", "minimum": 0, "description": "the most bytes it keeps in Redis; a submit, import or artifact past it is refused with 429, reports past it are counted as dropped, a log is left out (0: the scheduler's --project-store-mb)"},
        "max_file_bytes": {"type": "integer", "minimum": 0, "description": "the most bytes of its artifact files in the artifact folder; a write past it stops there and fails its trial (0: the scheduler's --project-file-gb)"}}},
      "Annotation": {"type": "object", "properties": {
        "tags": {"type": "array", "maxItems": 32, "items": {"type": "string", "pattern": "^[A-Za-z0-9._:/=+-]{1,64}$"}},
        "note": {"type": "string", "maxLength": 4096}}},
      "AuditEntry": {"type": "object", "properties": {"id": {"type": "string"}, "time_ms": {"type": "integer"}, "user": {"type": "string"},
        "project": {"type": "string"}, "action": {"type": "string"}, "target": {"type": "string"}, "detail": {"type": "string"}}},
      "Token": {"type": "object", "properties": {"id": {"type": "string"}, "user": {"type": "string"}, "label": {"type": "string"},
        "token": {"type": "string", "description": "the secret: shown in this reply only (the server keeps its SHA-256)"},
        "expires_in_days": {"type": "number", "nullable": true, "description": "refused after this many days; null: never"}}},
      "WorkerToken": {"type": "object", "properties": {"id": {"type": "string"}, "host": {"type": "string"},
        "project": {"type": "string", "nullable": true, "description": "its trials only; null: any project's"},
        "created_ms": {"type": "integer"}, "created_by": {"type": "string"},
        "token": {"type": "string", "description": "the secret: in the creating reply only (the server keeps its SHA-256)"}}},
      "Trial": {"type": "object", "required": ["id", "number", "state", "params", "value", "attempt", "worker"], "properties": {
        "id": {"type": "string"}, "sweep_id": {"type": "string"}, "number": {"type": "integer"},
        "kind": {"type": "string", "enum": @ROLES@},
        "state": {"type": "string", "enum": @TRIAL_STATES@},
        "params": {"$ref": "#/components/schemas/Params"}, "value": {"type": "number", "nullable": true},
        "attempt": {"type": "integer"}, "max_attempts": {"type": "integer"}, "slots": {"type": "integer"},
        "worker": {"type": "string"}, "metrics": {"$ref": "#/components/schemas/Metrics"}, "error": {"type": "string"},
        "control": {"type": "string", "enum": @CONTROLS@},
        "created_ms": {"type": "integer"}, "started_ms": {"type": "integer"}, "finished_ms": {"type": "integer"},
        "extra": {"nullable": true},
        "gang": {"type": "object", "nullable": true, "description": "a data-parallel attempt whose ranks span workers: world and, per worker, its ranks", "properties": {
          "world": {"type": "integer"}, "ranks": {"type": "array", "items": {"type": "object", "properties": {
            "worker": {"type": "string"}, "first": {"type": "integer"}, "count": {"type": "integer"}}}}}}}},
      "TrialDetail": {"allOf": [{"$ref": "#/components/schemas/Trial"}, {"type": "object", "properties": {
        "attempts": {"type": "array", "items": {"type": "object", "properties": {"attempt": {"type": "integer"}, "worker": {"type": "string"}, "started_ms": {"type": "integer"}, "ended_ms": {"type": "integer"}, "outcome": {"type": "string"}, "error": {"type": "string"}}}},
        "reports": {"type": "array", "items": {"type": "object", "properties": {"step": {"type": "integer"}, "metrics": {"$ref": "#/components/schemas/Metrics"}, "time_ms": {"type": "integer"}}}},
        "reports_total": {"type": "integer", "description": "reports stored (at most 10000; later ones are counted in reports_dropped)"},
        "reports_offset": {"type": "integer"}, "reports_limit": {"type": "integer"},
        "log_tail": {"type": "string", "nullable": true, "description": "the last lines of the latest attempt's output (stdout lines that are not metrics, and stderr)"}}}]},
      "Worker": {"type": "object", "properties": {
        "name": {"type": "string"}, "host": {"type": "string"}, "slots": {"type": "integer"}, "busy_slots": {"type": "integer"},
        "trials": {"type": "array", "items": {"type": "string"}},
        "gpus": {"type": "array", "items": {"type": "object", "properties": {"index": {"type": "integer"}, "name": {"type": "string"}, "memory_total_mb": {"type": "integer"}, "memory_used_mb": {"type": "integer"}, "utilization_pct": {"type": "integer"}, "uuid": {"type": "string", "description": "GPU-... or, for a MIG instance, MIG-..."}}}},
        "last_heartbeat_ms": {"type": "integer"}, "started_ms": {"type": "integer"},
        "torch": {"type": "boolean", "description": "runs torch trials"}, "cuda": {"type": "boolean", "description": "runs torch trials on its GPUs"},
        "cpus": {"type": "number", "description": "cores its trials' resources.cpus share (0: not counted)"}, "memory_gb": {"type": "number"},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "project": {"type": "string", "description": "the one project whose trials it takes (hpo-worker --project); empty: every project's"}}}
    },
    "responses": {
      "Error": {"description": "an error", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    }
  },
  "paths": {
    "/api/sweeps": {
      "post": {"summary": "Submit a sweep spec. With an Idempotency-Key header, a retried submit (same key, same spec, within 24 h) returns the first sweep instead of creating another", "security": [{"bearer": []}],
        "parameters": [{"name": "Idempotency-Key", "in": "header", "required": false, "schema": {"type": "string", "maxLength": 200}}, {"$ref": "#/components/parameters/project"}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object"}}}},
        "responses": {"201": {"description": "stored (or stored before under the same Idempotency-Key)", "content": {"application/json": {"schema": {"type": "object", "properties": {"id": {"type": "string"}}}}}},
          "409": {"$ref": "#/components/responses/Error"}, "429": {"$ref": "#/components/responses/Error"},
          "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"},
          "413": {"$ref": "#/components/responses/Error"}, "503": {"$ref": "#/components/responses/Error"}}},
      "get": {"summary": "List sweeps, newest first",
        "parameters": [{"$ref": "#/components/parameters/offset"}, {"$ref": "#/components/parameters/limit"}, {"name": "project", "in": "query", "description": "only this project's (default: every project the caller may read)", "schema": {"type": "string"}}, {"name": "tag", "in": "query", "description": "only sweeps with this tag", "schema": {"type": "string"}}],
        "responses": {"200": {"description": "a page", "content": {"application/json": {"schema": {"type": "object", "properties": {
          "sweeps": {"type": "array", "items": {"$ref": "#/components/schemas/Sweep"}}, "offset": {"type": "integer"}, "limit": {"type": "integer"}}}}}},
          "400": {"$ref": "#/components/responses/Error"}}}
    },
    "/api/sweeps/import": {
      "post": {"summary": "Import past trials (hpo import): an ended sweep holding the CSV's rows (the format GET .../trials?format=csv writes), checked against the spec they were run with; all or nothing. A warm start can then name it", "security": [{"bearer": []}],
        "parameters": [{"name": "Idempotency-Key", "in": "header", "required": false, "schema": {"type": "string", "maxLength": 200}}, {"$ref": "#/components/parameters/project"}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["spec", "csv"], "properties": {"spec": {"type": "object"}, "csv": {"type": "string"}}}}}},
        "responses": {"201": {"description": "stored", "content": {"application/json": {"schema": {"type": "object", "properties": {"id": {"type": "string"}, "trials": {"type": "integer"}}}}}},
          "409": {"$ref": "#/components/responses/Error"},
          "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"},
          "413": {"$ref": "#/components/responses/Error"}, "503": {"$ref": "#/components/responses/Error"}}}
    },
    "/api/sweeps/{id}": {
      "get": {"summary": "One sweep: state, counts, best trial", "parameters": [{"$ref": "#/components/parameters/id"}],
        "responses": {"200": {"description": "the sweep", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Sweep"}}}},
          "404": {"$ref": "#/components/responses/Error"}}},
      "patch": {"summary": "Set the sweep's tags and note (its owner or a project admin) and its priority within its project (a project admin; claims serve a project's sweeps of the highest priority first); a key left out stays as it was", "security": [{"bearer": []}],
        "parameters": [{"$ref": "#/components/parameters/id"}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"allOf": [{"$ref": "#/components/schemas/Annotation"}, {"type": "object", "properties": {"priority": {"type": "integer", "minimum": -1000, "maximum": 1000}}}]}}}},
        "responses": {"200": {"description": "the annotation now", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Annotation"}}}},
          "400": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}}},
      "delete": {"summary": "Delete an ended sweep with its trials, reports, attempts and artifacts (409 while it runs: cancel it first)", "security": [{"bearer": []}],
        "parameters": [{"$ref": "#/components/parameters/id"}],
        "responses": {"204": {"description": "deleted"},
          "401": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}, "409": {"$ref": "#/components/responses/Error"}}}
    },
    "/api/sweeps/{id}/trials": {
      "get": {"summary": "Trials of a sweep: paged, filtered, sorted; CSV with format=csv; one array per field with format=columns (CSV and columns are unbounded unless limit is given)",
        "parameters": [{"$ref": "#/components/parameters/id"}, {"$ref": "#/components/parameters/offset"}, {"$ref": "#/components/parameters/limit"},
          {"name": "state", "in": "query", "schema": {"type": "string", "enum": @TRIAL_STATES@}},
          {"name": "sort", "in": "query", "description": "[-]number | [-]value | [-]started | [-]finished | [-]metric:NAME | [-]param:NAME; '-' sorts descending; missing values last", "schema": {"type": "string", "default": "number"}},
          {"name": "kind", "in": "query", "schema": {"type": "string", "enum": @ROLES@, "default": "trial"}},
          {"name": "tag", "in": "query", "description": "only trials with this tag", "schema": {"type": "string"}},
          {"name": "format", "in": "query", "schema": {"type": "string", "enum": ["json", "csv", "columns"], "default": "json"}}],
        "responses": {"200": {"description": "a page", "content": {
            "application/json": {"schema": {"oneOf": [
              {"type": "object", "properties": {"trials": {"type": "array", "items": {"$ref": "#/components/schemas/Trial"}}, "total": {"type": "integer"}, "offset": {"type": "integer"}, "limit": {"type": "integer"}}},
              {"type": "object", "description": "format=columns: column i of every array is the page's trial i; state, worker and error hold indexes into dictionaries; params and metrics hold null where a trial has none",
               "properties": {"total": {"type": "integer"}, "offset": {"type": "integer"}, "limit": {"type": "integer", "nullable": true}, "count": {"type": "integer"},
                 "columns": {"type": "object", "properties": {"id": {"type": "array"}, "number": {"type": "array"}, "state": {"type": "array"}, "value": {"type": "array"}, "attempt": {"type": "array"}, "worker": {"type": "array"}, "error": {"type": "array"}, "created_ms": {"type": "array"}, "started_ms": {"type": "array"}, "finished_ms": {"type": "array"}, "extra": {"type": "array", "description": "only for sweeps with search.multi_fidelity or search.pbt: each trial's place in the schedule (budget, bracket and rung or member and generation, resume_from, exploited), null for others"}}},
                 "dictionaries": {"type": "object", "properties": {"state": {"type": "array", "items": {"type": "string"}}, "worker": {"type": "array", "items": {"type": "string"}}, "error": {"type": "array", "items": {"type": "string"}}}},
                 "params": {"type": "object", "additionalProperties": {"type": "array"}}, "metrics": {"type": "object", "additionalProperties": {"type": "array"}}}}]}},
            "text/csv": {"schema": {"type": "string"}}}},
          "400": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}}}
    },
    "/api/sweeps/{id}/pareto": {
      "get": {"summary": "The Pareto front of a sweep's completed trials (those that keep the spec's constraints) over its objectives (one objective: its best trials), with the hypervolume it dominates up to the reference (each objective's spec reference, else the worst counted value)",
        "parameters": [{"$ref": "#/components/parameters/id"}],
        "responses": {"200": {"description": "the front", "content": {"application/json": {"schema": {"type": "object", "properties": {
            "sweep": {"type": "string"}, "objectives": {"type": "array", "items": {"type": "object", "properties": {"metric": {"type": "string"}, "mode": {"type": "string", "enum": ["min", "max"]}}}},
            "reference": {"type": "array", "items": {"type": "number", "nullable": true}}, "hypervolume": {"type": "number", "nullable": true}, "hypervolume_exact": {"type": "boolean", "description": "false: a Monte Carlo estimate in bounded time (many objectives over a large front)"}, "hypervolume_std_error": {"type": "number", "nullable": true}, "counted": {"type": "integer"},
            "front": {"type": "array", "items": {"type": "object", "properties": {"trial_id": {"type": "string"}, "number": {"type": "integer"}, "params": {"type": "object"}, "values": {"type": "object", "additionalProperties": {"type": "number"}}}}}}}}}},
          "404": {"$ref": "#/components/responses/Error"}}}
    },
    "/api/sweeps/{id}/ensemble": {
      "get": {"summary": "The ensemble record of a sweep with an ensemble section: combine rule, every model with its weight, bagging seed and validation/test metrics, the best single model, the ensemble's metrics, the mean member's, the OOB estimate when available, failed members",
        "parameters": [{"$ref": "#/components/parameters/id"}],
        "responses": {"200": {"description": "the record (also a valid ensemble manifest)", "content": {"application/json": {"schema": {"type": "object"}}}},
          "404": {"$ref": "#/components/responses/Error"}}}
    },
    "/api/sweeps/{id}/cancel": {
      "post": {"summary": "Cancel a sweep: queued trials are cancelled, running ones asked to stop", "security": [{"bearer": []}],
        "parameters": [{"$ref": "#/components/parameters/id"}],
        "responses": {"200": {"description": "the sweep after the cancel", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Sweep"}}}},
          "401": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}, "409": {"$ref": "#/components/responses/Error"}}}
    },
    "/api/trials/{id}": {
      "get": {"summary": "One trial with its attempts and intermediate reports (paged: reports_total says how many are stored)", "parameters": [{"$ref": "#/components/parameters/id"},
          {"name": "reports_offset", "in": "query", "description": "first report (default 0)", "schema": {"type": "integer", "minimum": 0}},
          {"name": "reports_limit", "in": "query", "description": "reports at most (default and maximum 10000)", "schema": {"type": "integer", "minimum": 0, "maximum": 10000}}],
        "responses": {"200": {"description": "the trial", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/TrialDetail"}}}},
          "404": {"$ref": "#/components/responses/Error"}}},
      "patch": {"summary": "Set the trial's tags and note (its sweep's owner or a project admin), kept beside its record (which stays as it ended)", "security": [{"bearer": []}],
        "parameters": [{"$ref": "#/components/parameters/id"}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Annotation"}}}},
        "responses": {"200": {"description": "the annotation now", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Annotation"}}}},
          "400": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}}}
    },
    "/api/sweeps/{id}/artifacts/{name}": {
      "get": {"summary": "The raw bytes of one of the sweep's own records (ensemble.json, manifest.json)",
        "parameters": [{"$ref": "#/components/parameters/id"},
          {"name": "name", "in": "path", "required": true, "description": "artifact name: A-Z a-z 0-9 . _ - only", "schema": {"type": "string", "pattern": "^[A-Za-z0-9._-]+$"}}],
        "responses": {"200": {"description": "the record", "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}},
          "400": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}}}
    },
    "/api/trials/{id}/artifacts/{name}": {
      "get": {"summary": "The raw bytes of one artifact a trial stored (model.pt, val_predictions, test_predictions, oob_predictions, log.txt)",
        "parameters": [{"$ref": "#/components/parameters/id"},
          {"name": "name", "in": "path", "required": true, "description": "artifact name: A-Z a-z 0-9 . _ - only", "schema": {"type": "string", "pattern": "^[A-Za-z0-9._-]+$"}}],
        "responses": {"200": {"description": "the artifact", "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}},
          "400": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}}}
    },
    "/api/workers": {
      "get": {"summary": "Live workers",
        "responses": {"200": {"description": "workers", "content": {"application/json": {"schema": {"type": "object", "properties": {"workers": {"type": "array", "items": {"$ref": "#/components/schemas/Worker"}}, "total": {"type": "integer"}}}}}}}}
    },
    "/api/events": {
      "get": {"summary": "Server-sent events for every state change; resumable",
        "parameters": [{"name": "Last-Event-ID", "in": "header", "schema": {"type": "string"}},
          {"name": "last_event_id", "in": "query", "description": "same as the header, for the first connection", "schema": {"type": "string"}},
          {"name": "sweep", "in": "query", "description": "only events of this sweep", "schema": {"type": "string"}},
          {"name": "ticket", "in": "query", "description": "a stream ticket (POST /api/events/ticket) in place of the Authorization header, which an EventSource cannot send", "schema": {"type": "string"}}],
        "responses": {"200": {"description": "an event stream; each data line is {id, type, sweep_id, trial_id, data}", "content": {"text/event-stream": {"schema": {"type": "string"}}}},
          "401": {"$ref": "#/components/responses/Error"}}}
    },
    "/api/events/ticket": {
      "post": {"summary": "A ticket that opens one event stream as the caller, once, within a minute: no token ever goes into a URL", "security": [{"bearer": []}],
        "responses": {"200": {"description": "the ticket", "content": {"application/json": {"schema": {"type": "object", "properties": {"ticket": {"type": "string"}, "expires_in_s": {"type": "integer"}}}}}},
          "401": {"$ref": "#/components/responses/Error"}}}
    },
    "/api/whoami": {
      "get": {"summary": "The caller: their user, whether a service admin, their role in each project", "security": [{"bearer": []}],
        "responses": {"200": {"description": "the caller", "content": {"application/json": {"schema": {"type": "object", "properties": {
          "user": {"type": "string", "nullable": true}, "service_admin": {"type": "boolean"}, "reads_everything": {"type": "boolean"},
          "roles": {"type": "object", "additionalProperties": {"type": "string"}}}}}}}, "401": {"$ref": "#/components/responses/Error"}}}
    },
    "/api/projects": {
      "get": {"summary": "The projects the caller may read, with their role", "security": [{"bearer": []}],
        "responses": {"200": {"description": "projects", "content": {"application/json": {"schema": {"type": "object", "properties": {"projects": {"type": "array", "items": {"$ref": "#/components/schemas/Project"}}}}}}}}},
      "post": {"summary": "Create a project (a service admin)", "security": [{"bearer": []}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ProjectSettings"}}}},
        "responses": {"201": {"description": "created", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Project"}}}},
          "400": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}, "409": {"$ref": "#/components/responses/Error"}}}
    },
    "/api/projects/{name}": {
      "patch": {"summary": "Change a project's weight and limits (a service admin); claims and submits obey them at once", "security": [{"bearer": []}],
        "parameters": [{"$ref": "#/components/parameters/name"}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ProjectSettings"}}}},
        "responses": {"200": {"description": "the project", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Project"}}}},
          "400": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}}}
    },
    "/api/projects/{name}/members": {
      "get": {"summary": "A project's members and their roles", "security": [{"bearer": []}], "parameters": [{"$ref": "#/components/parameters/name"}],
        "responses": {"200": {"description": "members", "content": {"application/json": {"schema": {"type": "object", "properties": {"project": {"type": "string"},
          "members": {"type": "array", "items": {"type": "object", "properties": {"user": {"type": "string"}, "role": {"type": "string"}}}}}}}}},
          "404": {"$ref": "#/components/responses/Error"}}}
    },
    "/api/projects/{name}/members/{user}": {
      "put": {"summary": "Give a user a role in the project (the project's admins)", "security": [{"bearer": []}],
        "parameters": [{"$ref": "#/components/parameters/name"}, {"name": "user", "in": "path", "required": true, "schema": {"type": "string"}}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["role"], "properties": {"role": {"type": "string", "enum": ["viewer", "member", "admin"]}}}}}},
        "responses": {"200": {"description": "the membership", "content": {"application/json": {"schema": {"type": "object"}}}},
          "400": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}}},
      "delete": {"summary": "Remove a user from the project (the project's admins)", "security": [{"bearer": []}],
        "parameters": [{"$ref": "#/components/parameters/name"}, {"name": "user", "in": "path", "required": true, "schema": {"type": "string"}}],
        "responses": {"204": {"description": "removed"}, "403": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}}}
    },
    "/api/projects/{name}/audit": {
      "get": {"summary": "Who did what in the project, oldest first (the project's admins)", "security": [{"bearer": []}],
        "parameters": [{"$ref": "#/components/parameters/name"}, {"$ref": "#/components/parameters/after"}, {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 10000, "default": 1000}}],
        "responses": {"200": {"description": "entries", "content": {"application/json": {"schema": {"type": "object", "properties": {"project": {"type": "string"}, "entries": {"type": "array", "items": {"$ref": "#/components/schemas/AuditEntry"}}}}}}},
          "403": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}}}
    },
    "/api/audit": {
      "get": {"summary": "The service's own audit log: users and tokens (a service admin)", "security": [{"bearer": []}],
        "parameters": [{"$ref": "#/components/parameters/after"}, {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 10000, "default": 1000}}],
        "responses": {"200": {"description": "entries", "content": {"application/json": {"schema": {"type": "object", "properties": {"entries": {"type": "array", "items": {"$ref": "#/components/schemas/AuditEntry"}}}}}}},
          "403": {"$ref": "#/components/responses/Error"}}}
    },
    "/api/users": {
      "get": {"summary": "Every user (a service admin)", "security": [{"bearer": []}],
        "responses": {"200": {"description": "users", "content": {"application/json": {"schema": {"type": "object", "properties": {"users": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}, "service_admin": {"type": "boolean"}, "disabled": {"type": "boolean", "description": "its tokens are refused"}, "created_ms": {"type": "integer"}}}}}}}}},
          "403": {"$ref": "#/components/responses/Error"}}},
      "post": {"summary": "Create a user and their first token (a service admin)", "security": [{"bearer": []}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "service_admin": {"type": "boolean"}, "label": {"type": "string"}}}}}},
        "responses": {"201": {"description": "created", "content": {"application/json": {"schema": {"type": "object", "properties": {"name": {"type": "string"}, "service_admin": {"type": "boolean"}, "token": {"$ref": "#/components/schemas/Token"}}}}}},
          "400": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}, "409": {"$ref": "#/components/responses/Error"}}}
    },
    "/api/users/{name}": {
      "patch": {"summary": "Disable or enable a user (their tokens are refused within a second), make or unmake a service admin (a service admin; audited)", "security": [{"bearer": []}], "parameters": [{"$ref": "#/components/parameters/name"}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "properties": {"disabled": {"type": "boolean"}, "service_admin": {"type": "boolean"}}}}}},
        "responses": {"200": {"description": "changed", "content": {"application/json": {"schema": {"type": "object", "properties": {"name": {"type": "string"}, "changed": {"type": "string"}}}}}},
          "400": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}, "409": {"$ref": "#/components/responses/Error"}}}
    },
    "/api/users/{name}/tokens": {
      "get": {"summary": "A user's tokens, without their secrets (the user, or a service admin)", "security": [{"bearer": []}], "parameters": [{"$ref": "#/components/parameters/name"}],
        "responses": {"200": {"description": "tokens", "content": {"application/json": {"schema": {"type": "object", "properties": {"user": {"type": "string"}, "tokens": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "string"}, "label": {"type": "string"}, "created_ms": {"type": "integer"}, "expires_ms": {"type": "integer", "nullable": true, "description": "refused from then on; null: never"}}}}}}}}},
          "404": {"$ref": "#/components/responses/Error"}}},
      "post": {"summary": "A new token for the user (the user, or a service admin); its secret is in this reply only", "security": [{"bearer": []}], "parameters": [{"$ref": "#/components/parameters/name"}],
        "requestBody": {"required": false, "content": {"application/json": {"schema": {"type": "object", "properties": {"label": {"type": "string"}, "expires_in_days": {"type": "number", "description": "refused after this many days (above 0, at most 3650); none: never"}}}}}},
        "responses": {"201": {"description": "the token", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Token"}}}},
          "404": {"$ref": "#/components/responses/Error"}}}
    },
    "/api/tokens/{id}": {
      "delete": {"summary": "Revoke a token (its user, or a service admin): refused within a second", "security": [{"bearer": []}], "parameters": [{"$ref": "#/components/parameters/id"}],
        "responses": {"204": {"description": "revoked"}, "404": {"$ref": "#/components/responses/Error"}}}
    },
    "/api/worker-tokens": {
      "get": {"summary": "Worker hosts' credentials, without their secrets (a service admin)", "security": [{"bearer": []}],
        "responses": {"200": {"description": "worker tokens", "content": {"application/json": {"schema": {"type": "object", "properties": {"worker_tokens": {"type": "array", "items": {"$ref": "#/components/schemas/WorkerToken"}}}}}}},
          "403": {"$ref": "#/components/responses/Error"}}},
      "post": {"summary": "A credential for one worker host (a service admin; audited): its holder reaches the store only through POST /api/worker/redis, for the worker named `host` only, and takes only `project`'s trials when that is given. The secret is in this reply only.", "security": [{"bearer": []}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["host"], "properties": {"host": {"type": "string", "description": "the name hpo-worker runs with (--name, else the host name)"}, "project": {"type": "string"}}}}}},
        "responses": {"201": {"description": "the worker token, with `token` (its secret)", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/WorkerToken"}}}},
          "400": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}}}
    },
    "/api/worker-tokens/{id}": {
      "delete": {"summary": "Revoke a worker token (a service admin; audited; to anyone else it does not exist): refused within a second", "security": [{"bearer": []}], "parameters": [{"$ref": "#/components/parameters/id"}],
        "responses": {"204": {"description": "revoked"}, "403": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}}}
    },
    "/api/openapi.json": {
      "get": {"summary": "This document", "responses": {"200": {"description": "OpenAPI 3", "content": {"application/json": {"schema": {"type": "object"}}}}}}
    },
    "/metrics": {
      "get": {"summary": "Prometheus metrics: sweeps and trials by state, queue depth, active leases, workers and slots, results, request counts and latency histograms",
        "responses": {"200": {"description": "Prometheus text format 0.0.4", "content": {"text/plain": {"schema": {"type": "string"}}}},
          "503": {"$ref": "#/components/responses/Error"}}}
    },
    "/healthz": {
      "get": {"summary": "Health: the store answers",
        "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"type": "object", "properties": {"status": {"type": "string"}}}}}},
          "503": {"$ref": "#/components/responses/Error"}}}
    }
  }
})json";

// The enums of the records, from their one spelling (trials/record_names.hpp).
std::string with_names(std::string doc) {
  auto list = [](std::span<const char* const> names) {
    std::string out = "[";
    for (std::size_t i = 0; i < names.size(); ++i)
      out += std::string(i ? ", " : "") + "\"" + names[i] + "\"";
    return out + "]";
  };
  // ErrorCode's codes, then the HTTP layer's own.
  std::vector<const char*> error_codes(kErrorCodeNames.all().begin(), kErrorCodeNames.all().end());
  error_codes.insert(error_codes.end(), kHttpErrorNames.all().begin(), kHttpErrorNames.all().end());
  const std::pair<const char*, std::string> marks[] = {
      {"@TRIAL_STATES@", list(trials::kTrialStateNames.all())},
      {"@SWEEP_STATES@", list(trials::kSweepStateNames.all())},
      {"@STAGES@", list(trials::kSweepStageNames.all())},
      {"@ROLES@", list(trials::kTrialRoleNames.all())},
      {"@CONTROLS@", list(trials::kControlNames.all())},
      {"@ERROR_CODES@", list(error_codes)}};
  for (const auto& [mark, names] : marks) {
    const std::string m = mark;
    for (auto at = doc.find(m); at != std::string::npos; at = doc.find(m, at + names.size()))
      doc.replace(at, m.size(), names);
  }
  return doc;
}

}  // namespace

const std::string& Api::openapi_json() {
  static const std::string doc = with_names(kOpenApi);
  return doc;
}

}  // namespace hpo::web
