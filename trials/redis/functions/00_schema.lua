#!lua name=hpo_v1
-- hpo-functions-version: 9
--[[
hpo's atomic state transitions, one Redis Functions library (Redis >= 7).

Why Functions: every transition of a sweep or a trial is a read-modify-write
(check the state and the fencing token, then change several keys). Doing it
from C++ would race between schedulers and workers; here each function runs
atomically inside the server, and all times come from the server's clock
(TIME), so lease deadlines do not depend on the callers' clocks.

These files (trials/redis/functions/, one concern each, joined in the order of
their numbers) are the single source and this is the one description of the
key schema. The records' names (TrialState, SweepState, Stage, Role, Control,
and kTrialStates in order) are not spelled here: RedisStore writes them in
after this file, from trials/record_names.hpp, as Lua tables. CMake embeds
the files into the C++ (redis_store.cpp) and RedisStore loads the library with FUNCTION LOAD REPLACE on a (re)connection when
the server holds other code, unless the server's library is of a newer
version (the line `hpo-functions-version: N` above): a process older than the
one that loaded them is refused, never lets them go back. Raise N with every
change that an older caller or an older library could not work with (a
function's arguments or reply, a key's meaning); version 1 is every library
before the line existed.

Calling convention: FCALL <name> 0 <prefix> <args...>. The keys are derived
from the prefix inside the functions (a trial's sweep, the queue's entries are
only known inside), so this library targets a single Redis instance, not a
cluster. Expected refusals are error replies whose first word is the code:
NOT_FOUND, CONFLICT, LEASE_LOST, INVALID; anything else is a bug (kInternal).

Key schema (P = prefix, default "hpo:"):
  P..'sweep:'<sid>           hash  id name state spec maximize(0|1) created_ms finished_ms
                                   stage error next_trial next_member
                                   import_digest (imported sweeps: their trials' SHA-256)
                                   needs (what its trials ask of a worker: placement below)
                                   gpu (1: its trials hold GPUs, one per slot; version 7)
                                   constraints (JSON [{metric, max?, min?}]: a completed trial
                                   that breaks one is never the best; version 4)
                                   project owner (its project and the user who submitted it;
                                   version 6: 14_access.lua describes projects and users)
                                   tags (JSON array) note: the user's words on it
                                   priority (within its project: the claim serves the highest first)
  P..'notes:'<sid>           hash  trial id -> {"tags": [...], "note": "..."} of its trials
                                   '<kind>.<state>' counters (kind trial|member, state queued..cancelled)
                                   best_trial best_number best_params best_value (kind trial only)
  P..'sweeps'                zset  sid by creation sequence (newest = highest score)
  P..'seq:sweeps'            string INCR counter for that sequence
  P..'sweeps:active'         set   sids in state running
  P..'trial:'<tid>           hash  id sweep number kind params state attempt max_attempts slots
                                   created_ms, and once set: worker started_ms finished_ms value
                                   metrics error control extra lease_deadline lease_ms released
                                   (absent: empty or 0)
                                   (value: decimal text, absent when none; metrics, params: JSON;
                                   released: attempts given back without a failure, so the
                                   attempts that count against max_attempts are attempt - released;
                                   report_bytes, reports_dropped: of its stored reports)
  P..'trials:'<sid>':'<kind> list  tids by ascending number
  P..'queue:'<sid>           list  the sweep's queued tids, oldest at the head (may hold stale
                                   ids: skipped)
  P..'ready'                 list  sids whose queue may hold trials to claim, in round-robin
                                   order (each claim moves the sweeps it looks at to the back)
  P..'ready:set'             set   the same sids, for membership
  P..'leases'                zset  running tids by lease deadline (ms, server time)
  P..'reports:'<tid>         list  StepReport JSON {"step":..,"time_ms":..,"metrics":{..}}
  P..'attempts:'<tid>        list  AttemptRecord JSON, one per ended attempt (the running one is
                                   the trial's own fields; earlier versions wrote it at the claim)
  P..'events'                stream type sweep trial data(JSON), MAXLEN ~ max_events (100000);
                                   a data over max_event_bytes (4 KiB) is replaced by
                                   {"truncated":true,"bytes":N}, so the stream holds at most
                                   ~max_events x (max_event_bytes + ~100) bytes
  P..'deployment'            hash  artifact_dir (the scheduler's --artifacts), artifact_marker
                                   (its marker's id: workers check it before they use the
                                   folder), max_report_bytes
                                   (the scheduler's cap on one trial's stored reports, bytes),
                                   max_releases, max_event_bytes, max_events, project_store_bytes,
                                   project_file_bytes (its flags; the last two are every project's
                                   byte limits unless it has its own: 02b_bytes.lua)
  P..'workers'               hash  name -> WorkerInfo JSON (without last_heartbeat_ms)
  P..'worker_hb'             hash  name -> last heartbeat ms
  P..'worker:'<name>':alive' string with a TTL: the worker is live while it exists
  P..'artifact:'<tid>':'<name> string binary artifact
  P..'artifacts:'<tid>       set   the names of the trial's artifacts (for delete_sweep)
  P..'artifact_bytes:'<tid>  hash  name -> "store file": what each holds (02b_bytes.lua)
  P..'sweep_artifact:'<sid>':'<name> string a record of the sweep itself (ensemble record,
                                   manifest; earlier versions kept these with member 0)
  P..'sweep_artifacts:'<sid> set   the names of the sweep's own records (for delete_sweep)
  P..'sweep_artifact_bytes:'<sid> hash  the same for them
  P..'reaper:last_ms'        string server time of the last reap: a longer gap is an outage
  P..'reaper:outage_ms'      string the reaper's outage rule (renew judges rank leases by it)
  P..'reserve:'<tid>         string the worker that reserved this queued trial (expires)
  P..'reserving:'<worker>    string the trial this worker reserved (expires): see claim_many
  P..'idem:'<project>':'<key> string sweep id created with that Idempotency-Key in that project
                                   (with a TTL)
  P..'offers'                hash  worker -> what it had free after its last claim (offer JSON)
  P..'ranks:'<worker>        list  gang shares placed on this worker, waiting for its next claim
  P..'ranks_sent:'<worker>   list  shares handed out to it whose rank lease it has not renewed
                                   yet (handed out again with its next claim: a lost reply)
  P..'rank_lease:'<tid>':'<attempt>':'<worker> string a gang follower's rank lease (expires)
  P..'rendezvous:'<tid>':'<attempt> string rank 0's c10d TCPStore address (expires)
  (trial fields 'gang': the running attempt's layout across workers, JSON; 'reserved_for':
   the workers a gang reservation holds)
  P..'wake'                  stream one entry per call that made trials claimable (MAXLEN ~ 100):
                                   idle workers block on it (XREAD) from the cursor their last
                                   claim returned, so they wake as soon as work is queued
  (a sweep no registered worker can run, its hash's 'unschedulable' field saying why, is
   kept out of 'ready': its queue waits aside and stands in front of no other sweep)

Outages. A lease is a promise to renew every lease/3; nobody can keep it while
Redis is down or frozen, and nobody can judge it while the reaper is away. So
reap() remembers when it last ran; after a gap longer than the caller's
outage threshold it first gives every running trial one full lease from now,
plus the threshold again as time for clients to notice the server is back
(deadline = max(deadline, now + its lease_ms + threshold)), and expires
nothing in that call. Live workers renew within lease/3 of reconnecting; a
worker that died during the outage is reaped about one lease after the
reaper is back.

Releases. A worker that stops on purpose (drain, preemption, a lease it holds
but does not run) calls release(): the trial goes back to the head of the
queue with attempt + 1 (a new fencing token) and released + 1, so the release
does not count against max_attempts.
]]

