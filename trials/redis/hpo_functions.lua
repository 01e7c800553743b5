#!lua name=hpo_v1
-- hpo-functions-version: 4
--[[
hpo's atomic state transitions, one Redis Functions library (Redis >= 7).

Why Functions: every transition of a sweep or a trial is a read-modify-write
(check the state and the fencing token, then change several keys). Doing it
from C++ would race between schedulers and workers; here each function runs
atomically inside the server, and all times come from the server's clock
(TIME), so lease deadlines do not depend on the callers' clocks.

This file is the single source: CMake embeds it into the C++ (redis_store.cpp)
and RedisStore loads it with FUNCTION LOAD REPLACE on a (re)connection when
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
                                   constraints (JSON [{metric, max?, min?}]: a completed trial
                                   that breaks one is never the best; version 4)
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
  P..'deployment'            hash  artifact_dir (the scheduler's --artifacts), max_report_bytes
                                   (the scheduler's cap on one trial's stored reports, bytes),
                                   max_releases, max_event_bytes, max_events (its flags)
  P..'workers'               hash  name -> WorkerInfo JSON (without last_heartbeat_ms)
  P..'worker_hb'             hash  name -> last heartbeat ms
  P..'worker:'<name>':alive' string with a TTL: the worker is live while it exists
  P..'artifact:'<tid>':'<name> string binary artifact
  P..'artifacts:'<tid>       set   the names of the trial's artifacts (for delete_sweep)
  P..'sweep_artifact:'<sid>':'<name> string a record of the sweep itself (ensemble record,
                                   manifest; earlier versions kept these with member 0)
  P..'sweep_artifacts:'<sid> set   the names of the sweep's own records (for delete_sweep)
  P..'reaper:last_ms'        string server time of the last reap: a longer gap is an outage
  P..'reaper:outage_ms'      string the reaper's outage rule (renew judges rank leases by it)
  P..'reserve:'<tid>         string the worker that reserved this queued trial (expires)
  P..'reserving:'<worker>    string the trial this worker reserved (expires): see claim_many
  P..'idem:'<key>            string sweep id created with that Idempotency-Key (with a TTL)
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

local kTrialStates = {'queued', 'running', 'completed', 'failed', 'pruned', 'cancelled'}

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function int(n) return string.format('%d', n) end

local function refuse(code, msg) return redis.error_reply(code .. ' ' .. msg) end

local function hgetall(key)
  local flat = redis.call('HGETALL', key)
  if #flat == 0 then return nil end
  local t = {}
  for i = 1, #flat, 2 do t[flat[i]] = flat[i + 1] end
  return t
end

-- JSON text of a string. cjson.encode costs more than the rest of a claim on
-- the hot path, so a string with nothing to escape is quoted directly.
local function jstr(v)
  if not string.find(v, '[%c"\\]') then return '"' .. v .. '"' end
  return cjson.encode(v)
end

local function jval(v)
  local ty = type(v)
  if ty == 'string' then return jstr(v) end
  if ty == 'number' then
    if v == math.floor(v) and v > -1e15 and v < 1e15 then return string.format('%d', v) end
    return string.format('%.17g', v)
  end
  if ty == 'boolean' then return v and 'true' or 'false' end
  return 'null'
end

-- JSON object from `tbl` (strings, numbers) plus `raw` fields whose values
-- are already JSON text (numbers that must not go through a double).
local function json_obj(tbl, raw)
  local parts = {}
  for k, v in pairs(tbl) do parts[#parts + 1] = jstr(k) .. ':' .. jval(v) end
  for k, v in pairs(raw or {}) do parts[#parts + 1] = jstr(k) .. ':' .. v end
  return '{' .. table.concat(parts, ',') .. '}'
end

-- The most bytes of one event's data and the most events kept: the stream is
-- bounded in bytes as well as entries. Readers that need more read the trial or
-- the sweep. The scheduler's flags (deployment hash) override the defaults.
local DEFAULT_EVENT_DATA = 4096
local DEFAULT_EVENTS = 100000

local function emit(P, typ, sweep, trial, data)
  data = data or '{}'
  local limits = redis.call('HMGET', P .. 'deployment', 'max_event_bytes', 'max_events')
  local max_data = tonumber(limits[1] or '') or DEFAULT_EVENT_DATA
  local max_events = tonumber(limits[2] or '') or DEFAULT_EVENTS
  if #data > max_data then data = '{"truncated":true,"bytes":' .. #data .. '}' end
  redis.call('XADD', P .. 'events', 'MAXLEN', '~', tostring(max_events), '*', 'type', typ,
             'sweep', sweep or '', 'trial', trial or '', 'data', data)
end

-- Moves trial `t` (a table from hgetall) to state `to`, keeping the sweep's
-- per-kind counters in step so that reading a sweep is O(1).
-- With `delta` (a batch's pending counter changes, see count/apply_counts) the
-- counters are changed once at the end of the call instead of per trial.
local function count(delta, sweep, field, by)
  local d = delta[sweep]
  if not d then
    d = {}
    delta[sweep] = d
  end
  d[field] = (d[field] or 0) + by
end

local function apply_counts(P, delta)
  for sweep, d in pairs(delta) do
    for field, by in pairs(d) do
      if by ~= 0 then redis.call('HINCRBY', P .. 'sweep:' .. sweep, field, by) end
    end
  end
end

local function move_counts(P, t, to, delta)
  if delta then
    count(delta, t.sweep, t.kind .. '.' .. t.state, -1)
    count(delta, t.sweep, t.kind .. '.' .. to, 1)
  else
    local skey = P .. 'sweep:' .. t.sweep
    redis.call('HINCRBY', skey, t.kind .. '.' .. t.state, -1)
    redis.call('HINCRBY', skey, t.kind .. '.' .. to, 1)
  end
  t.state = to
end

local function move(P, t, to, delta)
  move_counts(P, t, to, delta)
  redis.call('HSET', P .. 'trial:' .. t.id, 'state', to)
end

-- An AttemptRecord's JSON.
local function attempt_json(attempt, worker, started_ms, ended_ms, outcome, err)
  return '{"attempt":' .. jval(tonumber(attempt)) .. ',"worker":' .. jstr(worker or '') ..
         ',"started_ms":' .. jval(tonumber(started_ms) or 0) .. ',"ended_ms":' ..
         jval(tonumber(ended_ms) or 0) .. ',"outcome":' .. jstr(outcome) .. ',"error":' ..
         jstr(err or '') .. '}'
end

-- An attempt's record is written when it ends, from the trial (its attempt,
-- worker and start are the trial's): the running one is the trial itself
-- (RedisStore::get_attempts shows it from there), so a claim writes none.
-- Earlier versions wrote a record at the claim: the list then already holds
-- one for this attempt, which is rewritten instead.
local function attempt_end(P, t, now, outcome, err)
  local key = P .. 'attempts:' .. t.id
  local rec = attempt_json(t.attempt, t.worker, t.started_ms, now, outcome, err)
  if redis.call('LLEN', key) > tonumber(t.attempt) then
    redis.pcall('LSET', key, -1, rec)
  else
    redis.call('RPUSH', key, rec)
  end
end

local function lease_drop(P, t)
  redis.call('HSET', P .. 'trial:' .. t.id, 'lease_deadline', '0')
  redis.call('ZREM', P .. 'leases', t.id)
end

-- Whether the metrics (JSON text) keep every bound of `bounds` (decoded
-- constraints); a metric not reported, or not a number, breaks its bound.
local function feasible(bounds, metrics)
  if #bounds == 0 then return true end
  local ok, m = pcall(cjson.decode, metrics or '')
  if not ok or type(m) ~= 'table' then return false end
  for _, c in ipairs(bounds) do
    local v = m[c.metric]
    if type(v) ~= 'number' or v ~= v then return false end
    if type(c.max) == 'number' and v > c.max then return false end
    if type(c.min) == 'number' and v < c.min then return false end
  end
  return true
end

-- `bests` (optional) holds a batch's sweeps' best trials: read once per sweep,
-- written once at the end (write_bests). A trial that breaks one of the
-- sweep's constraints is never the best.
local function update_best(P, t, value, metrics, bests)
  if t.kind ~= 'trial' or value == nil or value == '' then return end
  local v = tonumber(value)
  if v == nil or v ~= v then return end
  local skey = P .. 'sweep:' .. t.sweep
  local b = bests and bests[t.sweep]
  if not b then
    local cur = redis.call('HMGET', skey, 'best_value', 'maximize', 'constraints')
    local bounds = {}
    if cur[3] and cur[3] ~= '' then
      local ok, decoded = pcall(cjson.decode, cur[3])
      if ok and type(decoded) == 'table' then bounds = decoded end
    end
    b = {value = cur[1] and tonumber(cur[1]) or nil, maximize = cur[2] == '1', bounds = bounds}
    if bests then bests[t.sweep] = b end
  end
  if not feasible(b.bounds, metrics) then return end
  local better = b.value == nil or (b.maximize and v > b.value) or (not b.maximize and v < b.value)
  if not better then return end
  b.value = v
  b.fields = {'best_trial', t.id, 'best_number', t.number, 'best_params', t.params, 'best_value',
              value}
  if not bests then redis.call('HSET', skey, unpack(b.fields)) end
end

local function write_bests(P, bests)
  for sweep, b in pairs(bests) do
    if b.fields then redis.call('HSET', P .. 'sweep:' .. sweep, unpack(b.fields)) end
  end
end

-- Set by any change that may let an idle worker claim; the registered
-- functions (see `waking` at the end) then add one entry to P..'wake' per call.
local wake_pending = false

-- The sweep takes part in the claims' round robin (unless it is unschedulable).
local function make_ready(P, sid)
  if redis.call('HEXISTS', P .. 'sweep:' .. sid, 'unschedulable') == 1 then return end
  if redis.call('SADD', P .. 'ready:set', sid) == 1 then
    redis.call('RPUSH', P .. 'ready', sid)
    wake_pending = true
  end
end

local function unready(P, sid)
  if redis.call('SREM', P .. 'ready:set', sid) == 1 then redis.call('LREM', P .. 'ready', 1, sid) end
end

-- Queues trial `tid` of sweep `sid` (at the head: it goes next within its sweep).
local function enqueue(P, sid, tid, at_head)
  redis.call(at_head and 'LPUSH' or 'RPUSH', P .. 'queue:' .. sid, tid)
  make_ready(P, sid)
  wake_pending = true
end

-- Back to the queue tail with the next attempt (retry or expired lease).
local function requeue(P, t, reason, at_head)
  local next_attempt = tonumber(t.attempt) + 1
  move(P, t, 'queued')
  redis.call('HSET', P .. 'trial:' .. t.id, 'attempt', int(next_attempt), 'control', 'none',
             'error', reason)
  enqueue(P, t.sweep, t.id, at_head)
  emit(P, 'trial.queued', t.sweep, t.id,
       json_obj({attempt = next_attempt, reason = reason}))
end

-- Attempts that count against max_attempts once the current one ends as a failure.
local function failures_after(t)
  return tonumber(t.attempt) + 1 - tonumber(t.released or '0')
end

-- A trial whose current attempt ended without a result goes back to the queue
-- unless somebody already gave up on it: then the verdict is that decision.
local function stop_verdict(P, t)
  local sweep_state = redis.call('HGET', P .. 'sweep:' .. t.sweep, 'state')
  if t.control == 'cancel' or sweep_state ~= 'running' then return 'cancelled' end
  if t.control == 'prune' then return 'pruned' end
  return nil
end

-- Ends a trial for good: state, timing, result; best trial; event.
-- `delta` and `bests` (optional): a batch's deferred counters and best trials.
local function finish(P, t, now, state, value, metrics, err, delta, bests)
  move_counts(P, t, state, delta)
  local fields = {'state', state, 'finished_ms', int(now), 'error', err or '', 'lease_deadline', '0'}
  if metrics and metrics ~= '' then
    table.insert(fields, 'metrics')
    table.insert(fields, metrics)
  end
  local raw = {}
  if value and value ~= '' then
    table.insert(fields, 'value')
    table.insert(fields, value)
    raw.value = value
  end
  redis.call('HSET', P .. 'trial:' .. t.id, unpack(fields))
  if state == 'completed' then update_best(P, t, value, metrics, bests) end
  emit(P, 'trial.finished', t.sweep, t.id,
       json_obj({state = state, attempt = tonumber(t.attempt), error = err or ''}, raw))
end

-- The fencing check shared by heartbeat, report and complete.
local function fenced(P, tid, attempt, worker)
  local t = hgetall(P .. 'trial:' .. tid)
  if not t then return nil, refuse('NOT_FOUND', 'trial ' .. tid) end
  if t.state ~= 'running' or t.attempt ~= attempt or t.worker ~= worker then
    return nil, refuse('LEASE_LOST', 'trial ' .. tid .. ' is ' .. t.state .. ' at attempt ' ..
                       t.attempt .. ' by ' .. (t.worker or '') .. '; caller has attempt ' .. attempt ..
                       ' by ' .. worker)
  end
  return t
end

local function flatten(key)
  return redis.call('HGETALL', key)
end

-- An idempotency key's first sweep: its id when that sweep was made with the
-- same spec (and, for an import, the same trials: `digest`), a refusal when
-- with others; nil when the key is unused or its sweep is gone.
local function idem_first(P, idem, spec, digest)
  if idem == '' then return nil end
  local first = redis.call('GET', P .. 'idem:' .. idem)
  if not first then return nil end
  local s = redis.call('HMGET', P .. 'sweep:' .. first, 'spec', 'import_digest')
  if not s[1] then return nil end
  if s[1] == spec and (s[2] or '') == digest then return first end
  return nil, refuse('CONFLICT', 'Idempotency-Key ' .. idem .. ' was used for sweep ' .. first ..
                     ' with another ' .. (digest ~= '' and 'import' or 'spec'))
end

-- A new running sweep's keys; nil or a refusal.
local function new_sweep(P, id, name, spec, maximize, needs, idem, idem_ttl, now, constraints)
  local skey = P .. 'sweep:' .. id
  if redis.call('EXISTS', skey) == 1 then return refuse('CONFLICT', 'sweep id ' .. id .. ' taken') end
  redis.call('HSET', skey, 'id', id, 'name', name, 'spec', spec, 'maximize', maximize, 'state',
             'running', 'stage', 'search', 'created_ms', int(now), 'finished_ms', '0',
             'next_trial', '0', 'next_member', '0', 'error', '', 'needs', needs or '',
             'constraints', constraints or '')
  for _, kind in ipairs({'trial', 'member'}) do
    for _, s in ipairs(kTrialStates) do redis.call('HSET', skey, kind .. '.' .. s, '0') end
  end
  local seq = redis.call('INCR', P .. 'seq:sweeps')
  redis.call('ZADD', P .. 'sweeps', seq, id)
  if idem ~= '' then
    redis.call('SET', P .. 'idem:' .. idem, id, 'EX', tonumber(idem_ttl or '86400'))
  end
  emit(P, 'sweep.created', id, '', json_obj({name = name}))
  return nil
end

-- create_sweep P id name spec maximize [idem_key idem_ttl_s needs_json constraints_json]
--   -> sweep id
-- With an Idempotency-Key: a key already used for a sweep that still exists
-- returns that sweep (the same spec) or refuses (another spec), so a client
-- that retries a submit whose reply it lost gets the first sweep back.
local function create_sweep(keys, a)
  local P, id = a[1], a[2]
  local idem = a[6] or ''
  local first, refusal = idem_first(P, idem, a[4], '')
  if first or refusal then return first or refusal end
  local err = new_sweep(P, id, a[3], a[4], a[5], a[8], idem, a[7], now_ms(), a[9])
  if err then return err end
  redis.call('SADD', P .. 'sweeps:active', id)
  return id
end

local kEndedStates = {completed = true, failed = true, pruned = true, cancelled = true}

-- import_sweep P id name spec maximize idem_key idem_ttl_s needs constraints digest n
--   {params state value metrics error worker started_ms finished_ms}*n -> sweep id
-- An ended sweep (finished, stage done) holding n ended trials, written at
-- once; `digest` (the trials' hash) makes a retry with other rows a conflict.
local function import_sweep(keys, a)
  local P, id, idem, digest = a[1], a[2], a[6] or '', a[10]
  local n = tonumber(a[11])
  if n == nil or n < 0 then return refuse('INVALID', 'trial count ' .. tostring(a[11])) end
  for i = 1, n do
    local state = a[11 + 8 * (i - 1) + 2]
    if not kEndedStates[state] then
      return refuse('INVALID', 'imported trial ' .. int(i - 1) .. ' is ' .. tostring(state) ..
                    ', not ended')
    end
  end
  local first, refusal = idem_first(P, idem, a[4], digest)
  if first or refusal then return first or refusal end
  local now = now_ms()
  local err = new_sweep(P, id, a[3], a[4], a[5], a[8], idem, a[7], now, a[9])
  if err then return err end
  local skey = P .. 'sweep:' .. id
  local ids, delta, bests = {}, {}, {}
  for i = 1, n do
    local at = 11 + 8 * (i - 1)
    local num = i - 1
    local tid = id .. '-' .. int(num)
    ids[i] = tid
    local state = a[at + 2]
    local fields = {'id', tid, 'sweep', id, 'number', int(num), 'kind', 'trial', 'params', a[at + 1],
                    'state', state, 'attempt', '0', 'max_attempts', '1', 'slots', '1', 'created_ms',
                    int(now), 'worker', a[at + 6], 'started_ms', a[at + 7], 'finished_ms', a[at + 8],
                    'error', a[at + 5], 'lease_deadline', '0'}
    if a[at + 3] ~= '' then
      table.insert(fields, 'value')
      table.insert(fields, a[at + 3])
    end
    if a[at + 4] ~= '' then
      table.insert(fields, 'metrics')
      table.insert(fields, a[at + 4])
    end
    redis.call('HSET', P .. 'trial:' .. tid, unpack(fields))
    redis.call('RPUSH', P .. 'attempts:' .. tid,
               attempt_json(0, a[at + 6], a[at + 7], a[at + 8], state, a[at + 5]))
    count(delta, id, 'trial.' .. state, 1)
    if state == 'completed' then
      update_best(P, {kind = 'trial', sweep = id, id = tid, number = int(num), params = a[at + 1]},
                  a[at + 3], a[at + 4], bests)
    end
  end
  -- RPUSH takes the ids in chunks (a call's arguments are bounded by Lua's stack).
  for from = 1, n, 1000 do
    redis.call('RPUSH', P .. 'trials:' .. id .. ':trial', unpack(ids, from, math.min(n, from + 999)))
  end
  apply_counts(P, delta)
  write_bests(P, bests)
  redis.call('HSET', skey, 'next_trial', int(n), 'state', 'finished', 'stage', 'done', 'finished_ms',
             int(now), 'import_digest', digest)
  emit(P, 'sweep.finished', id, '', json_obj({state = 'finished', error = ''}))
  return id
end

-- Creates trials number, number+1, ... of sweep `sid` and queues them; `items`
-- is {params, max_attempts, slots, extra} per trial. A compare-and-set on the
-- sweep's next number (all or none are created) -> the new trial ids and the
-- creation time, or a refusal.
local function create_many(P, sid, kind, number, limit, items)
  if kind ~= 'trial' and kind ~= 'member' then return nil, refuse('INVALID', 'kind ' .. kind) end
  local skey = P .. 'sweep:' .. sid
  local s = redis.call('HMGET', skey, 'state', 'next_' .. kind)
  if not s[1] then return nil, refuse('NOT_FOUND', 'sweep ' .. sid) end
  if s[1] ~= 'running' then return nil, refuse('CONFLICT', 'sweep ' .. sid .. ' is ' .. s[1]) end
  if tonumber(s[2]) ~= number then
    return nil, refuse('CONFLICT', 'next ' .. kind .. ' number of ' .. sid .. ' is ' .. s[2] ..
                       ', not ' .. int(number))
  end
  if number + #items > limit then
    return nil, refuse('CONFLICT', kind .. ' limit ' .. int(limit) .. ' reached')
  end
  local now = now_ms()
  local ids = {}
  for i, it in ipairs(items) do
    local n = number + i - 1
    local tid = sid .. '-' .. (kind == 'member' and 'm' or '') .. int(n)
    ids[i] = tid
    -- Only the fields with a value: the rest (worker, started_ms, finished_ms,
    -- value, metrics, error, control, lease_deadline, lease_ms, released,
    -- an empty extra) read as empty or 0 until a transition sets them, and a
    -- smaller hash is less to write to the AOF and to keep.
    local tkey = P .. 'trial:' .. tid
    redis.call('HSET', tkey, 'id', tid, 'sweep', sid, 'number', int(n), 'kind', kind, 'params',
               it[1], 'state', 'queued', 'attempt', '0', 'max_attempts', it[2], 'slots', it[3],
               'created_ms', int(now))
    if it[4] ~= '' then redis.call('HSET', tkey, 'extra', it[4]) end
    emit(P, 'trial.queued', sid, tid, json_obj({attempt = 0, number = n, kind = kind}))
  end
  redis.call('HSET', skey, 'next_' .. kind, int(number + #items))
  redis.call('HINCRBY', skey, kind .. '.queued', #items)
  redis.call('RPUSH', P .. 'trials:' .. sid .. ':' .. kind, unpack(ids))
  redis.call('RPUSH', P .. 'queue:' .. sid, unpack(ids))
  make_ready(P, sid)
  wake_pending = true
  return ids, now
end

-- create_trials P sweep kind number limit n {params max_attempts slots extra}*n
--   -> {created_ms, tid...}
local function create_trials(keys, a)
  local n = tonumber(a[6])
  if n == nil or n < 1 then return refuse('INVALID', 'trial count ' .. tostring(a[6])) end
  local items = {}
  for i = 1, n do
    local at = 6 + 4 * (i - 1)
    items[i] = {a[at + 1], a[at + 2], a[at + 3], a[at + 4]}
  end
  local ids, now = create_many(a[1], a[2], a[3], tonumber(a[4]), tonumber(a[5]), items)
  if not ids then return now end
  table.insert(ids, 1, int(now))
  return ids
end

-- create_trial P sweep kind number limit params max_attempts slots extra -> trial hash (flat)
-- (one trial; kept for callers of earlier versions)
local function create_trial(keys, a)
  local P = a[1]
  local ids, err = create_many(P, a[2], a[3], tonumber(a[4]), tonumber(a[5]),
                               {{a[6], a[7], a[8], a[9]}})
  if not ids then return err end
  return flatten(P .. 'trial:' .. ids[1])
end

-- Data written before per-sweep queues: the one shared queue, split once.
local function migrate_shared_queue(P)
  local old = P .. 'queue'
  for _, tid in ipairs(redis.call('LRANGE', old, 0, -1)) do
    local ts = redis.call('HMGET', P .. 'trial:' .. tid, 'state', 'sweep')
    if ts[1] == 'queued' then enqueue(P, ts[2], tid, false) end
  end
  redis.call('DEL', old)
end

-- What a worker needs of a claimed trial, by position (claim_batch's reply;
-- RedisStore reads it in this order): half the strings of a flat hash.
local kClaimFields = {'id', 'sweep', 'number', 'kind', 'params', 'state', 'attempt', 'released',
                      'max_attempts', 'slots', 'worker', 'created_ms', 'started_ms', 'control',
                      'extra', 'lease_deadline', 'gang'}

local function claim_row(t)
  local out = {}
  for i, f in ipairs(kClaimFields) do out[i] = t[f] or '' end
  return out
end

-- The wake stream's newest id: a worker that found too little waits for
-- entries after it (wait_for_work), so nothing queued after this call is missed.
local function wake_cursor(P)
  local last = redis.call('XREVRANGE', P .. 'wake', '+', '-', 'COUNT', 1)
  if #last == 0 then return '0-0' end
  return last[1][1]
end

-- Placement (trials/placement.hpp has the rules; these mirror fits_now/take).
-- `o` is the claiming worker's offer (to_json(Offer)): what it has free now
-- (slots, gpus, cpus, memory_gb; cpus/memory < 0: not counted) and what it is
-- (total_slots, all_gpus, total_cpus, total_memory_gb, torch, cuda, labels).
-- `need` is the sweep's request (to_json(ResourceRequest), field 'needs' of
-- the sweep; sweeps stored before requests existed have none: {}).
local function gpu_ok(need, g)
  if need.gpu_mb and (g.mb or 0) < need.gpu_mb then return false end
  if need.gpu_model and not string.find(g.model or '', need.gpu_model, 1, true) then
    return false
  end
  return true
end

local function count_gpus(need, list)
  local n = 0
  for _, g in ipairs(list) do if gpu_ok(need, g) then n = n + 1 end end
  return n
end

local function labels_ok(need, labels)
  for _, want in ipairs(need.labels or {}) do
    local eq = string.find(want, '=', 1, true)
    if eq then
      if labels[string.sub(want, 1, eq - 1)] ~= string.sub(want, eq + 1) then return false end
    elseif labels[want] == nil then
      return false
    end
  end
  return true
end

local function kinds_ok(need, o)
  if need.torch and not o.torch then return false end
  if need.torch and (need.gpus or 0) > 0 and not o.cuda then return false end
  return labels_ok(need, o.labels or {})
end

local function amounts_ok(need, slots, free_slots, gpus, cpus, mem)
  if slots > free_slots then return false end
  if (need.gpus or 0) > 0 and count_gpus(need, gpus) < slots then return false end
  if need.cpus and cpus >= 0 and need.cpus > cpus + 1e-9 then return false end
  if need.memory_gb and mem >= 0 and need.memory_gb > mem + 1e-9 then return false end
  return true
end

local function fits_now(need, slots, o)
  return kinds_ok(need, o) and amounts_ok(need, slots, o.slots, o.gpus, o.cpus, o.memory_gb)
end

-- Could it fit once the worker is idle? (Then a worker short of room now may reserve it.)
local function fits_idle(need, slots, o)
  return kinds_ok(need, o) and
           amounts_ok(need, slots, o.total_slots, o.all_gpus, o.total_cpus, o.total_memory_gb)
end

local function take(need, slots, o)
  local cpu_free = o.slots - #o.gpus
  o.slots = o.slots - slots
  if (need.gpus or 0) == 0 then  -- slots without a GPU first, then the last GPU slots
    for _ = 1, math.min(#o.gpus, math.max(0, slots - cpu_free)) do table.remove(o.gpus) end
  else
    local left, kept = slots, {}
    for _, g in ipairs(o.gpus) do
      if left > 0 and gpu_ok(need, g) then left = left - 1 else kept[#kept + 1] = g end
    end
    o.gpus = kept
  end
  if need.cpus and o.cpus >= 0 then o.cpus = o.cpus - need.cpus end
  if need.memory_gb and o.memory_gb >= 0 then o.memory_gb = o.memory_gb - need.memory_gb end
end

-- The offer of a caller that sends only a free-slot count (earlier versions, tests).
local function parse_offer(text)
  if string.sub(text, 1, 1) == '{' then
    local o = cjson.decode(text)
    o.gpus, o.all_gpus, o.labels = o.gpus or {}, o.all_gpus or {}, o.labels or {}
    return o
  end
  local n = tonumber(text)
  return {slots = n, gpus = {}, cpus = -1, memory_gb = -1, total_slots = n, all_gpus = {},
          total_cpus = -1, total_memory_gb = -1, torch = true, cuda = false, labels = {}}
end

local function needs_of(P, sid, cache)
  local need = cache[sid]
  if need then return need end
  local text = redis.call('HGET', P .. 'sweep:' .. sid, 'needs')
  need = (text and text ~= '') and cjson.decode(text) or {}
  cache[sid] = need
  return need
end

-- Reservations keep a wide trial from starving behind a stream of narrow
-- ones: a worker that could run the head of a sweep's queue once idle, but is
-- short of room now, reserves it (P..'reserve:'<tid> -> worker, and
-- P..'reserving:'<worker> -> tid, both expiring after reserve_ms unless
-- renewed) and claims nothing else until that trial fits, or is gone, or
-- another worker took it. At most one worker reserves a trial. Field
-- 'skipped' of a trial counts the claims that passed it over for want of room.
-- A trial is reserved once claims have passed it over kReserveAfter times for
-- want of room (until then smaller trials behind it may fill the gap).
local kReserveAfter = 3
local function reserve_ms(lease_ms) return math.max(2000, lease_ms) end

-- @split@ (functions.cmake cuts the embedded text here: C++ string literals stay under 64 KB)
-- Gangs: a data-parallel trial (need.ranks = k > 1) whose ranks span workers
-- (trials/placement.hpp has the rules). Every claim records what the claiming
-- worker still has free after it (P..'offers', worker -> offer JSON), so a
-- claim can place a gang on the claimer (rank 0, the leader, which holds the
-- trial's lease) and on other live workers' free slots at once, or not at all.
-- The followers' shares wait in P..'ranks:'<worker> (JSON {trial, sweep,
-- attempt, number, kind, params, extra, first, count, world, leader}) and are handed out by the
-- follower's next claim, ahead of anything else, from the slots the record
-- promised (the worker's free slots only grow between its claims; its claims
-- alone take them). Each follower renews a rank lease
-- (P..'rank_lease:'<tid>':'<attempt>':'<worker>, rank_heartbeat) fenced by the
-- trial's attempt; the leader's heartbeat fails the attempt as a whole once a
-- follower's rank lease has lapsed, and the ranks of a stale attempt stop.
-- Rank 0 publishes its c10d TCPStore address in
-- P..'rendezvous:'<tid>':'<attempt>, the others join it.

-- What one rank asks: one slot (a GPU one for a GPU trial), its share of the cores and memory.
local function rank_need(need)
  local k = need.ranks or 1
  return {slots = 1, gpus = ((need.gpus or 0) > 0) and 1 or 0, gpu_mb = need.gpu_mb,
          gpu_model = need.gpu_model, cpus = need.cpus and need.cpus / k,
          memory_gb = need.memory_gb and need.memory_gb / k, torch = need.torch,
          labels = need.labels}
end

local function is_gang(need) return (need.ranks or 1) > 1 end

-- How many ranks of the request fit offer `o`, now or once idle.
local function ranks_fitting(rn, o, idle)
  if not kinds_ok(rn, o) then return 0 end
  local slots, gpus, cpus, mem = o.slots, o.gpus, o.cpus, o.memory_gb
  if idle then slots, gpus, cpus, mem = o.total_slots, o.all_gpus, o.total_cpus, o.total_memory_gb end
  local n = slots or 0
  if (rn.gpus or 0) > 0 then n = math.min(n, count_gpus(rn, gpus or {})) end
  if rn.cpus and (cpus or -1) >= 0 then n = math.min(n, math.floor(cpus / rn.cpus + 1e-9)) end
  if rn.memory_gb and (mem or -1) >= 0 then n = math.min(n, math.floor(mem / rn.memory_gb + 1e-9)) end
  return math.max(0, n)
end

-- The live workers' recorded offers but `worker`'s, each {worker, offer}:
-- those holding a reservation for another trial than `tid` are left out.
local function other_offers(P, worker, tid)
  local out = {}
  local all = redis.call('HGETALL', P .. 'offers')
  for i = 1, #all, 2 do
    local w = all[i]
    if w ~= worker then
      if redis.call('EXISTS', P .. 'worker:' .. w .. ':alive') == 0 then
        redis.call('HDEL', P .. 'offers', w)
      else
        local held = redis.call('GET', P .. 'reserving:' .. w)
        if not held or held == tid then out[#out + 1] = {worker = w, offer = parse_offer(all[i + 1])} end
      end
    end
  end
  return out
end

-- Whether a live worker other than `worker` could hold all of it once idle
-- (then the trial waits for it rather than spreading over several).
local function another_holds_whole(P, worker, need, tid, slots)
  for _, c in ipairs(other_offers(P, worker, tid)) do
    if fits_idle(need, slots, c.offer) then return true end
  end
  return false
end

-- Where the gang's ranks go: {{worker, count, offer}, ...}, the claimer first
-- (rank 0), then the other workers that fit most ranks (by name among equals)
-- until all k have a slot; per_host m: exactly m on each; nil when they do not
-- all fit (now, or once idle when `idle`).
local function gang_plan(P, worker, o, need, tid, idle)
  local k, m = need.ranks, need.per_host
  local rn = rank_need(need)
  local function share(n, left)
    if m then return (n >= m and left >= m) and m or 0 end
    return math.min(n, left)
  end
  local first = share(ranks_fitting(rn, o, idle), k)
  if first < 1 then return nil end
  local plan, left = {{worker = worker, count = first, offer = o}}, k - first
  if left == 0 then return plan end
  local others = other_offers(P, worker, tid)
  for _, c in ipairs(others) do c.fit = ranks_fitting(rn, c.offer, idle) end
  table.sort(others, function(a, b)
    if a.fit ~= b.fit then return a.fit > b.fit end
    return a.worker < b.worker
  end)
  for _, c in ipairs(others) do
    if left == 0 then break end
    local n = share(c.fit, left)
    if n > 0 then
      plan[#plan + 1] = {worker = c.worker, count = n, offer = c.offer}
      left = left - n
    end
  end
  if left > 0 then return nil end
  return plan
end

-- The trial `t` (the fields claim_many reads) becomes running, leased to `worker`.
local function lease_to(P, t, worker, now, lease_ms, delta)
  move_counts(P, t, 'running', delta)
  t.worker, t.started_ms, t.control, t.error = worker, int(now), 'none', ''
  t.lease_ms, t.lease_deadline = int(lease_ms), int(now + lease_ms)
  redis.call('HSET', P .. 'trial:' .. t.id, 'state', 'running', 'worker', worker, 'started_ms',
             t.started_ms, 'control', 'none', 'error', '', 'lease_ms', t.lease_ms,
             'lease_deadline', t.lease_deadline, 'gang', '')
  redis.call('ZADD', P .. 'leases', t.lease_deadline, t.id)
  emit(P, 'trial.started', t.sweep, t.id, json_obj({worker = worker, attempt = tonumber(t.attempt)}))
end

-- Leases the gang trial `t` to the plan's first worker and hands the other
-- workers their shares (P..'ranks:'<worker>), their recorded offers reduced
-- by what their ranks take. The claim row's 'slots' becomes the leader's own
-- share and its 'gang' the layout {world, ranks = {{worker, first, count}}}.
-- A plan of one worker (the whole trial fits it) is a plain claim out of its offer.
local function place_gang(P, t, need, plan, now, lease_ms, delta)
  if #plan == 1 then
    take(need, tonumber(t.slots), plan[1].offer)
    lease_to(P, t, plan[1].worker, now, lease_ms, delta)
    return
  end
  local rn = rank_need(need)
  local layout, first = {}, 0
  for i, p in ipairs(plan) do
    for _ = 1, p.count do take(rn, 1, p.offer) end
    layout[i] = {worker = p.worker, first = first, count = p.count}
    first = first + p.count
  end
  local leader = plan[1].worker
  lease_to(P, t, leader, now, lease_ms, delta)
  t.gang = cjson.encode({world = first, ranks = layout})
  t.slots = int(plan[1].count)
  redis.call('HSET', P .. 'trial:' .. t.id, 'gang', t.gang)
  for i = 2, #plan do
    local p = plan[i]
    redis.call('HSET', P .. 'offers', p.worker, cjson.encode(p.offer))
    redis.call('RPUSH', P .. 'ranks:' .. p.worker,
               cjson.encode({trial = t.id, sweep = t.sweep, attempt = tonumber(t.attempt),
                             number = tonumber(t.number), kind = t.kind, params = t.params,
                             extra = t.extra, first = layout[i].first, count = p.count,
                             world = first, leader = leader}))
    -- Until it first renews it, the follower's rank lease is the claim's.
    redis.call('SET', P .. 'rank_lease:' .. t.id .. ':' .. t.attempt .. ':' .. p.worker, '1',
               'PX', int(lease_ms))
  end
  wake_pending = true  -- idle followers wake and pick their shares up at once
end

-- A follower's claim first takes the gang shares waiting for it (those of
-- attempts still running), out of its offer: {{share table, spec}, ...}.
-- A share handed out stays in P..'ranks_sent:'<worker> until the follower
-- first renews its rank lease (rank_heartbeat): a claim whose reply was lost
-- on the way hands it out again with the next one (the worker knows a share
-- it already runs by its trial, attempt and first rank).
local function take_ranks(P, worker, o, cache)
  local key, sent = P .. 'ranks:' .. worker, P .. 'ranks_sent:' .. worker
  local waiting = redis.call('LRANGE', sent, 0, -1)
  local resent = #waiting  -- the first ones: the worker's slots hold them already
  for _, text in ipairs(redis.call('LRANGE', key, 0, -1)) do waiting[#waiting + 1] = text end
  if #waiting == 0 then return {} end
  redis.call('DEL', key, sent)
  local out = {}
  for i, text in ipairs(waiting) do
    local r = cjson.decode(text)
    local st = redis.call('HMGET', P .. 'trial:' .. r.trial, 'state', 'attempt')
    if st[1] == 'running' and tonumber(st[2]) == r.attempt then
      if i > resent then
        local rn = rank_need(needs_of(P, r.sweep, cache))
        for _ = 1, r.count do take(rn, 1, o) end
      end
      out[#out + 1] = {text, redis.call('HGET', P .. 'sweep:' .. r.sweep, 'spec') or ''}
      redis.call('RPUSH', sent, text)
    end
  end
  return out
end

local function claim_fields(P, tid)
  local v = redis.call('HMGET', P .. 'trial:' .. tid, 'state', 'slots', 'sweep', 'kind', 'number',
                       'params', 'attempt', 'released', 'max_attempts', 'created_ms', 'extra')
  if not v[1] then return nil end
  return {id = tid, state = v[1], slots = v[2], sweep = v[3], kind = v[4], number = v[5],
          params = v[6], attempt = v[7], released = v[8] or '0', max_attempts = v[9],
          created_ms = v[10], extra = v[11] or ''}
end

-- A reservation this worker holds: nil when it holds none (or it ended), else
-- true after claiming the reserved trial into `claimed` (it fit), false when
-- it still does not fit (the reservation is renewed; nothing else is claimed).
local function honour_reservation(P, worker, o, lease_ms, now, cache, claimed, specs, delta)
  local rkey = P .. 'reserving:' .. worker
  local tid = redis.call('GET', rkey)
  if not tid then return nil end
  local t = claim_fields(P, tid)
  local owner = redis.call('GET', P .. 'reserve:' .. tid)
  local mine = owner == worker
  local need = t and needs_of(P, t.sweep, cache)
  if t and t.state == 'queued' and owner and not mine and is_gang(need) then
    return false  -- held for the gang another worker reserved: its ranks may need our slots
  end
  if not t or t.state ~= 'queued' or not mine then
    redis.call('DEL', rkey)
    if mine then redis.call('DEL', P .. 'reserve:' .. tid) end
    return nil
  end
  local gang = is_gang(need) and (need.per_host or not fits_idle(need, tonumber(t.slots), o))
  if gang then
    local plan = gang_plan(P, worker, o, need, tid, false)
    local held = cjson.decode(redis.call('HGET', P .. 'trial:' .. tid, 'reserved_for') or '[]')
    if not plan then
      for _, w in ipairs(held) do
        if redis.call('GET', P .. 'reserving:' .. w) == tid then
          redis.call('PEXPIRE', P .. 'reserving:' .. w, reserve_ms(lease_ms))
        end
      end
      redis.call('PEXPIRE', rkey, reserve_ms(lease_ms))
      redis.call('PEXPIRE', P .. 'reserve:' .. tid, reserve_ms(lease_ms))
      return false
    end
    for _, w in ipairs(held) do
      if redis.call('GET', P .. 'reserving:' .. w) == tid then redis.call('DEL', P .. 'reserving:' .. w) end
    end
    redis.call('DEL', rkey, P .. 'reserve:' .. tid)
    redis.call('HDEL', P .. 'trial:' .. tid, 'reserved_for')
    place_gang(P, t, need, plan, now, lease_ms, delta)
  elseif not fits_now(need, tonumber(t.slots), o) then
    redis.call('PEXPIRE', rkey, reserve_ms(lease_ms))
    redis.call('PEXPIRE', P .. 'reserve:' .. tid, reserve_ms(lease_ms))
    return false
  else
    redis.call('DEL', rkey, P .. 'reserve:' .. tid)
    take(need, tonumber(t.slots), o)
    lease_to(P, t, worker, now, lease_ms, delta)
  end
  local qkey = P .. 'queue:' .. t.sweep
  redis.call('LREM', qkey, 1, tid)
  if redis.call('LLEN', qkey) == 0 then unready(P, t.sweep) end
  claimed[#claimed + 1] = t
  specs[t.sweep] = redis.call('HGET', P .. 'sweep:' .. t.sweep, 'spec') or ''
  return true
end

-- Takes up to `want` queued trials that fit the offer `o` (free slots, GPUs,
-- cores, memory, kinds, labels; see above) and leases them to `worker`: a
-- list of trial tables (running now) with the sweeps' specs by id. Fair across
-- sweeps: it goes round the ready sweeps (at most sweeps_max of them, in the
-- claims' round-robin order) taking one trial per sweep per round, and the
-- sweeps it visited move to the back of 'ready'. In each sweep it takes the
-- oldest queued trials that fit among the first scan_max of its queue; ids no
-- longer queued (cancelled while waiting) are dropped on the way, and a sweep
-- whose queue is empty leaves 'ready'. A trial that would fit the worker idle
-- but not now, passed over kReserveAfter times, is reserved (above), and the
-- claim ends there.
local function claim_many(P, worker, o, want, lease_ms, scan, sweeps_max)
  if redis.call('EXISTS', P .. 'queue') == 1 then migrate_shared_queue(P) end
  local claimed, specs = {}, {}
  local cache = {}  -- the visited sweeps' requests
  local ranks = take_ranks(P, worker, o, cache)
  -- What is left after this claim, for the gangs other workers place (below).
  local function record() redis.call('HSET', P .. 'offers', worker, cjson.encode(o)) end
  if want < 1 or o.slots < 1 then
    record()
    return claimed, specs, ranks
  end
  local now = now_ms()
  local delta = {}
  local held = honour_reservation(P, worker, o, lease_ms, now, cache, claimed, specs, delta)
  if held == false then
    apply_counts(P, delta)
    record()
    return claimed, specs, ranks
  end
  local ready = P .. 'ready'
  local order = redis.call('LRANGE', ready, 0, sweeps_max - 1)
  local queues = {}  -- per visited sweep: its scanned ids, next position, ids to drop
  local visited = 0
  local took = true
  local reserved = false
  while took and not reserved and #claimed < want and o.slots > 0 do
    took = false
    for i, sid in ipairs(order) do
      if #claimed >= want or o.slots < 1 or reserved then break end
      local q = queues[i]
      if not q then
        q = {ids = {}, pos = 1, drop = {}, more = true}
        queues[i] = q
        visited = i
      end
      local need = needs_of(P, sid, cache)
      while true do
        if q.pos > #q.ids then
          -- The queue is read in chunks about the size of what is wanted
          -- (up to scan_max in all), not scan_max ids on every call.
          if not q.more or #q.ids >= scan then break end
          local chunk = math.min(scan - #q.ids, math.max(8, 2 * (want - #claimed)))
          local got = redis.call('LRANGE', P .. 'queue:' .. sid, #q.ids, #q.ids + chunk - 1)
          for _, id in ipairs(got) do q.ids[#q.ids + 1] = id end
          q.more = #got == chunk
          if #got == 0 then break end
        end
        local tid = q.ids[q.pos]
        q.pos = q.pos + 1
        -- What the claim decides on and the worker needs, not the whole hash.
        local t = claim_fields(P, tid)
        if not t or t.state ~= 'queued' then
          q.drop[#q.drop + 1] = tid
        elseif fits_now(need, tonumber(t.slots), o) and not need.per_host then
          q.drop[#q.drop + 1] = tid
          take(need, tonumber(t.slots), o)
          lease_to(P, t, worker, now, lease_ms, delta)
          claimed[#claimed + 1] = t
          if not specs[sid] then specs[sid] = redis.call('HGET', P .. 'sweep:' .. sid, 'spec') or '' end
          took = true
          break
        elseif is_gang(need) and (need.per_host or (not fits_idle(need, tonumber(t.slots), o) and
                 not another_holds_whole(P, worker, need, tid, tonumber(t.slots)))) then
          -- Wider than any one worker (or per_host): across workers, as a gang or not at all.
          local plan = gang_plan(P, worker, o, need, tid, false)
          if plan then
            q.drop[#q.drop + 1] = tid
            place_gang(P, t, need, plan, now, lease_ms, delta)
            claimed[#claimed + 1] = t
            if not specs[sid] then specs[sid] = redis.call('HGET', P .. 'sweep:' .. sid, 'spec') or '' end
            took = true
            break
          end
          local idle_plan = not q.passed and gang_plan(P, worker, o, need, tid, true)
          if idle_plan and redis.call('HINCRBY', P .. 'trial:' .. tid, 'skipped', 1) >= kReserveAfter then
            q.passed = true
            local rkey = P .. 'reserve:' .. tid
            local by = redis.call('GET', rkey)
            if not by or by == worker or redis.call('EXISTS', P .. 'reserving:' .. by) == 0 then
              -- The gang's leader-to-be and the workers of its plan hold their slots for it.
              local ttl = reserve_ms(lease_ms)
              local held = {}
              redis.call('SET', rkey, worker, 'PX', ttl)
              redis.call('SET', P .. 'reserving:' .. worker, tid, 'PX', ttl)
              for i = 2, #idle_plan do
                local w = idle_plan[i].worker
                if redis.call('SET', P .. 'reserving:' .. w, tid, 'PX', ttl, 'NX') then
                  held[#held + 1] = w
                elseif redis.call('GET', P .. 'reserving:' .. w) == tid then
                  held[#held + 1] = w
                end
              end
              redis.call('HSET', P .. 'trial:' .. tid, 'reserved_for', cjson.encode(held))
              reserved = true
              break
            end
          else
            q.passed = true
          end
        elseif not q.passed and fits_idle(need, tonumber(t.slots), o) and
                 redis.call('HINCRBY', P .. 'trial:' .. tid, 'skipped', 1) >= kReserveAfter then
          local rkey = P .. 'reserve:' .. tid
          local by = redis.call('GET', rkey)
          q.passed = true
          if not by or by == worker or redis.call('EXISTS', P .. 'reserving:' .. by) == 0 then
            redis.call('SET', rkey, worker, 'PX', reserve_ms(lease_ms))
            redis.call('SET', P .. 'reserving:' .. worker, tid, 'PX', reserve_ms(lease_ms))
            reserved = true
            break
          end
        else
          q.passed = true  -- only the first trial passed over in a sweep counts a skip
        end
      end
    end
  end
  apply_counts(P, delta)
  -- The visited sweeps go to the back, in order; then the ones left empty leave.
  for _ = 1, visited do redis.call('LMOVE', ready, ready, 'LEFT', 'RIGHT') end
  for i = 1, visited do
    local q, qkey = queues[i], P .. 'queue:' .. order[i]
    local prefix = #q.drop
    for j = 1, #q.drop do
      if q.drop[j] ~= q.ids[j] then
        prefix = 0
        break
      end
    end
    if prefix > 0 then
      redis.call('LTRIM', qkey, prefix, -1)
    elseif #q.drop > 0 then
      for _, tid in ipairs(q.drop) do redis.call('LREM', qkey, 1, tid) end
    end
    if redis.call('LLEN', qkey) == 0 then unready(P, order[i]) end
  end
  record()
  return claimed, specs, ranks
end

-- claim_batch P worker free_slots max_trials lease_ms scan_max [sweeps_max]
--   -> {{claim row (kClaimFields)...}, {sid, spec, ...}, wake cursor}
-- The cursor is '' when max_trials were claimed, else where wait_for_work
-- starts waiting.
local function claim_batch(keys, a)
  local P, worker = a[1], a[2]
  local claimed, specs, ranks = claim_many(P, worker, parse_offer(a[3]), tonumber(a[4]),
                                           tonumber(a[5]), tonumber(a[6]), tonumber(a[7] or '64'))
  local trials = {}
  for i, t in ipairs(claimed) do trials[i] = claim_row(t) end
  local spec_list = {}
  for sid, spec in pairs(specs) do
    table.insert(spec_list, sid)
    table.insert(spec_list, spec)
  end
  local cursor = ''
  if #claimed < tonumber(a[4]) then cursor = wake_cursor(P) end
  local shares = {}
  for i, r in ipairs(ranks) do shares[i] = r end
  return {trials, spec_list, cursor, shares}
end

-- claim P worker free_slots lease_ms scan_max [sweeps_max] -> nil | trial hash (flat)
--   followed by 'sweep_spec', the sweep's spec as submitted (one trial; kept
--   for callers of earlier versions)
local function claim(keys, a)
  local P = a[1]
  local claimed, specs = claim_many(P, a[2], parse_offer(a[3]), 1, tonumber(a[4]),
                                    tonumber(a[5]), tonumber(a[6] or '64'))
  if #claimed == 0 then return false end
  local out = flatten(P .. 'trial:' .. claimed[1].id)
  table.insert(out, 'sweep_spec')
  table.insert(out, specs[claimed[1].sweep])
  return out
end


-- The running attempt of trial `t` (a full hash) ends without a result
-- (`outcome`, `reason`): re-queued while attempts remain, else failed.
local function expire(P, t, now, outcome, reason, final)
  lease_drop(P, t)
  attempt_end(P, t, now, outcome, reason)
  local verdict = stop_verdict(P, t)  -- the pruner or the user had already given up on it
  local attempts = failures_after(t)
  if verdict then
    finish(P, t, now, verdict, nil, nil, reason)
  elseif attempts < tonumber(t.max_attempts) then
    requeue(P, t, reason)
  else
    finish(P, t, now, 'failed', nil, nil, (final or reason) .. ' after ' .. int(attempts) .. ' attempts')
  end
end

-- A gang's follower whose rank lease lapsed (nil: none), once the claim's
-- first lease is over. `gang` is the trial's layout.
local function lost_rank(P, tid, attempt, gang)
  local g = cjson.decode(gang)
  for i = 2, #g.ranks do
    local w = g.ranks[i].worker
    if redis.call('EXISTS', P .. 'rank_lease:' .. tid .. ':' .. attempt .. ':' .. w) == 0 then
      return g.ranks[i]
    end
  end
  return nil
end

-- Renews one lease -> the trial's control, or a refusal.
local function renew(P, tid, attempt, worker, lease_ms, now)
  local tkey = P .. 'trial:' .. tid
  local ts = redis.call('HMGET', tkey, 'state', 'attempt', 'worker', 'control', 'lease_ms', 'gang')
  if not ts[1] then return nil, refuse('NOT_FOUND', 'trial ' .. tid) end
  if ts[1] ~= 'running' or ts[2] ~= attempt or ts[3] ~= worker then
    return nil, refuse('LEASE_LOST', 'trial ' .. tid .. ' is ' .. ts[1] .. ' at attempt ' ..
                       tostring(ts[2]) .. ' by ' .. tostring(ts[3]) .. '; caller has attempt ' ..
                       attempt .. ' by ' .. worker)
  end
  -- Past an outage the reaper has not seen the end of yet (no pass for
  -- longer than its outage rule), nobody could renew a rank lease either:
  -- a lapsed one is not a lost follower until the reaper's next pass gives
  -- every lease, rank leases included, one more term.
  -- (The scheduler alone being down is no such outage: the leader renewed
  -- meanwhile, so its own lease has not lapsed, and rank leases are judged.)
  local in_outage = false
  local outage_ms = tonumber(redis.call('GET', P .. 'reaper:outage_ms') or '0') or 0
  if outage_ms > 0 then
    local last = tonumber(redis.call('GET', P .. 'reaper:last_ms') or '0') or 0
    local deadline = tonumber(redis.call('HGET', tkey, 'lease_deadline') or '0') or 0
    in_outage = last > 0 and now - last > outage_ms and deadline < now
  end
  if ts[6] and ts[6] ~= '' and not in_outage then
    local lost = lost_rank(P, tid, attempt, ts[6])
    if lost then  -- a follower is gone: the attempt ends on every rank and is retried whole
      local reason = 'data-parallel ranks ' .. int(lost.first) .. '-' ..
                       int(lost.first + lost.count - 1) .. ' on worker ' .. lost.worker ..
                       ' lost (rank lease expired)'
      expire(P, hgetall(tkey), now, 'rank_lost', reason)
      return nil, refuse('LEASE_LOST', 'trial ' .. tid .. ': ' .. reason)
    end
  end
  local deadline = int(now + tonumber(lease_ms))
  redis.call('ZADD', P .. 'leases', deadline, tid)
  if ts[5] ~= lease_ms then
    redis.call('HSET', tkey, 'lease_deadline', deadline, 'lease_ms', lease_ms)
  else
    redis.call('HSET', tkey, 'lease_deadline', deadline)
  end
  return ts[4]
end

-- heartbeat P tid attempt worker lease_ms -> control
local function heartbeat(keys, a)
  local control, err = renew(a[1], a[2], a[3], a[4], a[5], now_ms())
  return control or err
end

-- heartbeat_batch P worker lease_ms n {tid attempt}*n -> {control or refusal text, ...}
-- Every lease a worker holds, renewed in one call; each is fenced on its own.
local function heartbeat_batch(keys, a)
  local P, worker, lease_ms, n = a[1], a[2], a[3], tonumber(a[4])
  local now = now_ms()
  local out = {}
  for i = 1, n do
    local control, err = renew(P, a[3 + 2 * i], a[4 + 2 * i], worker, lease_ms, now)
    out[i] = control or err.err
  end
  return out
end


-- The most bytes of stored reports one trial may hold: the scheduler's
-- setting in the deployment hash, else 16 MiB (0: no cap).
local DEFAULT_REPORT_BYTES = 16777216

-- report P tid attempt worker max_reports n step1 metrics1 ... stepn metricsn -> control
-- A batch of reports in one call and one event (the latest report, with the
-- count). Past max_reports stored reports (0: no cap), or past the trial's
-- report bytes (see DEFAULT_REPORT_BYTES), the rest are counted in the
-- trial's reports_dropped and not stored: a flood of metric lines, or of
-- metrics with long names, must not grow one trial without bound.
local function report(keys, a)
  local P = a[1]
  local t, err = fenced(P, a[2], a[3], a[4])
  if not t then return err end
  local cap = tonumber(a[5])
  local n = tonumber(a[6])
  if n == 0 then return t.control end
  local rkey = P .. 'reports:' .. t.id
  local tkey = P .. 'trial:' .. t.id
  local room = n
  if cap > 0 then room = math.max(0, math.min(n, cap - redis.call('LLEN', rkey))) end
  local byte_cap = tonumber(redis.call('HGET', P .. 'deployment', 'max_report_bytes') or '')
  if not byte_cap then byte_cap = DEFAULT_REPORT_BYTES end
  local used = tonumber(t.report_bytes or '0') or 0
  local now = int(now_ms())
  local stored, added = 0, 0
  for i = 1, room do
    local step = int(tonumber(a[5 + 2 * i]))
    local entry = '{"step":' .. step .. ',"time_ms":' .. now .. ',"metrics":' .. a[6 + 2 * i] .. '}'
    if byte_cap > 0 and used + added + #entry > byte_cap then break end
    redis.call('RPUSH', rkey, entry)
    stored = stored + 1
    added = added + #entry
  end
  if added > 0 then redis.call('HINCRBY', tkey, 'report_bytes', added) end
  if stored < n then redis.call('HINCRBY', tkey, 'reports_dropped', n - stored) end
  local last = int(tonumber(a[5 + 2 * n]))
  emit(P, 'trial.reported', t.sweep, t.id,
       '{"step":' .. last .. ',"metrics":' .. a[6 + 2 * n] .. ',"count":' .. int(n) .. '}')
  return t.control
end

-- Keeps bytes under a name for an owner: 'artifact' (a trial's) or
-- 'sweep_artifact' (a sweep's own), with the owner's name set (for delete_sweep).
local function keep_named(P, kind, owner, name, bytes)
  redis.call('SET', P .. kind .. ':' .. owner .. ':' .. name, bytes)
  redis.call('SADD', P .. kind .. 's:' .. owner, name)
end

local function valid_outcome(o)
  return o == 'completed' or o == 'failed' or o == 'pruned' or o == 'cancelled'
end

-- Ends the current attempt of `tid` with a result -> the trial's new state, or
-- a refusal. `log` (may be '') is kept as the attempt's log artifact; `delta`
-- and `bests` defer a batch's counters and best trials to its end.
local function complete_one(P, tid, attempt, worker, outcome, value, metrics, err, retryable, log,
                            now, delta, bests)
  if not valid_outcome(outcome) then return nil, refuse('INVALID', 'outcome ' .. outcome) end
  local t, refusal = fenced(P, tid, attempt, worker)
  if not t then return nil, refusal end
  if log ~= '' then keep_named(P, 'artifact', t.id, 'log.txt', log) end
  redis.call('ZREM', P .. 'leases', t.id)
  attempt_end(P, t, now, outcome, err)
  if outcome == 'failed' and retryable == '1' and failures_after(t) < tonumber(t.max_attempts) then
    local verdict = stop_verdict(P, t)  -- cancelled or pruned meanwhile: no retry
    if not verdict then
      redis.call('HSET', P .. 'trial:' .. t.id, 'lease_deadline', '0')
      requeue(P, t, err)
      return 'queued'
    end
    finish(P, t, now, verdict, nil, metrics, err, delta, bests)
    return verdict
  end
  finish(P, t, now, outcome, value, metrics, err, delta, bests)
  return outcome
end

-- complete P tid attempt worker outcome value metrics_json error retryable(0|1) -> new state
local function complete(keys, a)
  local state, err = complete_one(a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], '',
                                  now_ms())
  return state or err
end

-- complete_batch P worker n {tid attempt outcome value metrics error retryable log}*n
--   -> {new state or refusal text, ...}
-- Results of several attempts in one call, each fenced on its own (a stale
-- one is refused, the others are kept); `log` non-empty is stored as the
-- attempt's log.txt in the same step.
local function complete_batch(keys, a)
  local P, worker, n = a[1], a[2], tonumber(a[3])
  local now = now_ms()
  local delta, bests = {}, {}
  local out = {}
  for i = 1, n do
    local at = 3 + 8 * (i - 1)
    local state, err = complete_one(P, a[at + 1], a[at + 2], worker, a[at + 3], a[at + 4],
                                    a[at + 5], a[at + 6], a[at + 7], a[at + 8], now, delta, bests)
    out[i] = state or err.err
  end
  apply_counts(P, delta)
  write_bests(P, bests)
  return out
end


-- After an outage (see the top): every running trial gets one lease from now.
local function extend_leases_after_outage(P, now, gap, allowance)
  local all = redis.call('ZRANGE', P .. 'leases', 0, -1, 'WITHSCORES')
  local extended = 0
  for i = 1, #all, 2 do
    local tid, deadline = all[i], tonumber(all[i + 1])
    local lease_ms = tonumber(redis.call('HGET', P .. 'trial:' .. tid, 'lease_ms') or '0') or 0
    local fresh = now + lease_ms + allowance
    if fresh > deadline then
      redis.call('ZADD', P .. 'leases', int(fresh), tid)
      redis.call('HSET', P .. 'trial:' .. tid, 'lease_deadline', int(fresh))
      extended = extended + 1
    end
    -- A gang's followers could not renew their rank leases either: each gets
    -- the same allowance (whether or not its key lapsed meanwhile), so the
    -- next heartbeat does not end a healthy gang for a lapse nobody caused.
    local g = redis.call('HMGET', P .. 'trial:' .. tid, 'gang', 'attempt')
    if g[1] and g[1] ~= '' then
      local layout = cjson.decode(g[1])
      for r = 2, #layout.ranks do
        local key = P .. 'rank_lease:' .. tid .. ':' .. g[2] .. ':' .. layout.ranks[r].worker
        if redis.call('PTTL', key) < lease_ms + allowance then
          local held = redis.call('GET', key) or '1'
          redis.call('SET', key, held, 'PX', int(lease_ms + allowance))
        end
      end
    end
  end
  emit(P, 'leases.extended', '', '', json_obj({gap_ms = gap, leases = extended}))
end

-- reap P max [outage_ms] -> number of expired leases handled
local function reap(keys, a)
  local P, max = a[1], tonumber(a[2])
  local outage_ms = tonumber(a[3] or '0')
  local now = now_ms()
  local last = tonumber(redis.call('GET', P .. 'reaper:last_ms') or '0')
  redis.call('SET', P .. 'reaper:last_ms', int(now))
  redis.call('SET', P .. 'reaper:outage_ms', int(outage_ms))
  -- Never twice in a row: a Redis so loaded that every pass comes late must
  -- still expire the leases of dead workers.
  local extended_last = redis.call('GET', P .. 'reaper:extended') == '1'
  if outage_ms > 0 and last > 0 and now - last > outage_ms and not extended_last then
    redis.call('SET', P .. 'reaper:extended', '1')
    extend_leases_after_outage(P, now, now - last, outage_ms)
    return 0
  end
  if extended_last then redis.call('DEL', P .. 'reaper:extended') end
  local ids = redis.call('ZRANGEBYSCORE', P .. 'leases', '-inf', int(now), 'LIMIT', 0, max)
  local handled = 0
  for _, tid in ipairs(ids) do
    redis.call('ZREM', P .. 'leases', tid)
    local t = hgetall(P .. 'trial:' .. tid)
    if t and t.state == 'running' then
      handled = handled + 1
      expire(P, t, now, 'lease_expired', 'lease of worker ' .. t.worker .. ' expired', 'lease expired')
    end
  end
  return handled
end

-- release P tid attempt worker reason [counted] -> new state (queued, cancelled, pruned or failed)
-- The worker gives the attempt back (drain, preemption, a lease it holds but
-- does not run): back to the head of the queue with a new fencing token, not
-- counted against max_attempts.
-- How many times a trial may be given back before it fails: the
-- scheduler's setting (deployment hash), else 20 (0: no bound). A trial on
-- hosts preempted faster than it checkpoints would otherwise never end.
local DEFAULT_MAX_RELEASES = 20

local function release(keys, a)
  local P = a[1]
  local t, err = fenced(P, a[2], a[3], a[4])
  if not t then return err end
  local now = now_ms()
  lease_drop(P, t)
  attempt_end(P, t, now, 'released', a[5])
  local verdict = stop_verdict(P, t)
  if verdict then
    finish(P, t, now, verdict, nil, nil, a[5])
    return verdict
  end
  redis.call('HSET', P .. 'trial:' .. t.id, 'released', int(tonumber(t.released or '0') + 1))
  -- Only drains and preemptions count towards the bound (a[6] '1'; callers of
  -- earlier versions send none): the pool's own placement glitches do not.
  local stopped = tonumber(t.stopped_releases or '0')
  if a[6] ~= '0' then
    stopped = stopped + 1
    redis.call('HSET', P .. 'trial:' .. t.id, 'stopped_releases', int(stopped))
  end
  local bound = tonumber(redis.call('HGET', P .. 'deployment', 'max_releases') or '')
  if not bound then bound = DEFAULT_MAX_RELEASES end
  if bound > 0 and stopped > bound then
    finish(P, t, now, 'failed', nil, nil,
           'given back ' .. int(stopped) .. ' times without finishing (drains, preemptions), ' ..
           'more than the pool allows (hpo-scheduler --max-releases ' .. int(bound) ..
           '); the last time: ' .. a[5])
    return 'failed'
  end
  requeue(P, t, 'released: ' .. a[5], true)
  return 'queued'
end


-- put_artifact P tid attempt worker name bytes -> 1
-- Fenced like complete: only the attempt that holds the lease writes bytes, so
-- a stale attempt (paused past its lease) can never overwrite what the
-- accepted attempt stored, and a finished trial's artifacts never change.
local function put_artifact(keys, a)
  local P = a[1]
  local t, err = fenced(P, a[2], a[3], a[4])
  if not t then return err end
  keep_named(P, 'artifact', t.id, a[5], a[6])
  return 1
end

-- put_record P tid name bytes -> 1
-- The scheduler's own records about a trial (the ensemble record and manifest
-- stored with the first member). Names are the caller's reserved ones; a
-- record never replaces an artifact a worker stored.
local function put_record(keys, a)
  local P, tid, name = a[1], a[2], a[3]
  if redis.call('EXISTS', P .. 'trial:' .. tid) == 0 then return refuse('NOT_FOUND', 'trial ' .. tid) end
  keep_named(P, 'artifact', tid, name, a[4])
  return 1
end

-- put_sweep_record P sid name bytes -> 1
-- A record of the sweep as a whole (the ensemble record and manifest).
local function put_sweep_record(keys, a)
  local P, sid, name = a[1], a[2], a[3]
  if redis.call('EXISTS', P .. 'sweep:' .. sid) == 0 then return refuse('NOT_FOUND', 'sweep ' .. sid) end
  keep_named(P, 'sweep_artifact', sid, name, a[4])
  return 1
end

-- worker_leases P worker -> {tid, attempt, ...} of the trials running under that worker
local function worker_leases(keys, a)
  local P, worker = a[1], a[2]
  local out = {}
  for _, tid in ipairs(redis.call('ZRANGE', P .. 'leases', 0, -1)) do
    local ts = redis.call('HMGET', P .. 'trial:' .. tid, 'state', 'worker', 'attempt')
    if ts[1] == 'running' and ts[2] == worker then
      table.insert(out, tid)
      table.insert(out, ts[3])
    end
  end
  return out
end

-- delete_sweep P sid max -> trials left to delete (call again until 0)
-- Only a sweep that has ended and whose trials have all stopped. Each call
-- deletes up to `max` trials with everything they own; the last one deletes
-- the sweep itself and takes it off the sweep list (so a delete interrupted
-- between calls is found and finished by the next one).
local function delete_sweep(keys, a)
  local P, sid, max = a[1], a[2], tonumber(a[3])
  local skey = P .. 'sweep:' .. sid
  local state = redis.call('HGET', skey, 'state')
  if not state then return refuse('NOT_FOUND', 'sweep ' .. sid) end
  if state == 'running' then
    return refuse('CONFLICT', 'sweep ' .. sid .. ' is running: cancel it first')
  end
  local still = redis.call('HMGET', skey, 'trial.running', 'member.running')
  local running = (tonumber(still[1]) or 0) + (tonumber(still[2]) or 0)
  if running > 0 then
    return refuse('CONFLICT', 'sweep ' .. sid .. ' still has ' .. int(running) ..
                  ' running trial(s), stopping at their next heartbeat: try again shortly')
  end
  local left = 0
  for _, kind in ipairs({'trial', 'member'}) do
    local list = P .. 'trials:' .. sid .. ':' .. kind
    while max > 0 do
      local tid = redis.call('LPOP', list)
      if not tid then break end
      max = max - 1
      for _, name in ipairs(redis.call('SMEMBERS', P .. 'artifacts:' .. tid)) do
        redis.call('DEL', P .. 'artifact:' .. tid .. ':' .. name)
      end
      redis.call('DEL', P .. 'trial:' .. tid, P .. 'reports:' .. tid, P .. 'attempts:' .. tid,
                 P .. 'artifacts:' .. tid)
      redis.call('ZREM', P .. 'leases', tid)
    end
    left = left + redis.call('LLEN', list)
  end
  if left == 0 then
    -- Last: until now the sweep stays listed, so an interrupted delete is found again.
    for _, name in ipairs(redis.call('SMEMBERS', P .. 'sweep_artifacts:' .. sid)) do
      redis.call('DEL', P .. 'sweep_artifact:' .. sid .. ':' .. name)
    end
    redis.call('DEL', skey, P .. 'queue:' .. sid, P .. 'sweep_artifacts:' .. sid)
    redis.call('ZREM', P .. 'sweeps', sid)
    emit(P, 'sweep.deleted', sid, '', '{}')
  end
  return left
end

-- Ends a running sweep (state checked by the caller). Leftover trials are
-- stopped: queued ones are cancelled at once, running ones get control
-- 'cancel', which their worker sees on its next heartbeat or report.
local function end_sweep(P, sid, to, err)
  local now = now_ms()
  redis.call('HSET', P .. 'sweep:' .. sid, 'state', to, 'finished_ms', int(now), 'error', err)
  redis.call('SREM', P .. 'sweeps:active', sid)
  for _, kind in ipairs({'trial', 'member'}) do
    for _, tid in ipairs(redis.call('LRANGE', P .. 'trials:' .. sid .. ':' .. kind, 0, -1)) do
      local tkey = P .. 'trial:' .. tid
      local ts = redis.call('HMGET', tkey, 'state', 'attempt', 'kind', 'number', 'params')
      if ts[1] == 'queued' then
        local t = {id = tid, sweep = sid, state = 'queued', attempt = ts[2], kind = ts[3],
                   number = ts[4], params = ts[5]}
        finish(P, t, now, 'cancelled', nil, nil, 'sweep ' .. to)
      elseif ts[1] == 'running' then
        redis.call('HSET', tkey, 'control', 'cancel')
      end
    end
  end
  redis.call('DEL', P .. 'queue:' .. sid)
  unready(P, sid)
  redis.call('HDEL', P .. 'sweep:' .. sid, 'unschedulable')
  emit(P, 'sweep.finished', sid, '', json_obj({state = to, error = err}))
end

local function sweep_state(P, sid)
  local state = redis.call('HGET', P .. 'sweep:' .. sid, 'state')
  if not state then return nil, refuse('NOT_FOUND', 'sweep ' .. sid) end
  return state
end

-- cancel_sweep P sid -> 1 (idempotent)
local function cancel_sweep(keys, a)
  local P, sid = a[1], a[2]
  local state, err = sweep_state(P, sid)
  if not state then return err end
  if state == 'cancelled' then return 1 end
  if state ~= 'running' then return refuse('CONFLICT', 'sweep ' .. sid .. ' is ' .. state) end
  end_sweep(P, sid, 'cancelled', 'cancelled by user')
  return 1
end

-- finish_sweep P sid state(finished|failed|cancelled) error -> 1
local function finish_sweep(keys, a)
  local P, sid, to = a[1], a[2], a[3]
  if to ~= 'finished' and to ~= 'failed' and to ~= 'cancelled' then
    return refuse('INVALID', 'sweep state ' .. to)
  end
  local state, err = sweep_state(P, sid)
  if not state then return err end
  if state ~= 'running' then return refuse('CONFLICT', 'sweep ' .. sid .. ' is ' .. state) end
  end_sweep(P, sid, to, a[4])
  return 1
end

-- set_stage P sid from to -> 1
local function set_stage(keys, a)
  local P, sid = a[1], a[2]
  local skey = P .. 'sweep:' .. sid
  local stage = redis.call('HGET', skey, 'stage')  -- absent: no such sweep
  if not stage then return refuse('NOT_FOUND', 'sweep ' .. sid) end
  if stage ~= a[3] then
    return refuse('CONFLICT', 'sweep ' .. sid .. ' is in stage ' .. stage .. ', not ' .. a[3])
  end
  redis.call('HSET', skey, 'stage', a[4])
  emit(P, 'sweep.stage', sid, '', json_obj({from = a[3], to = a[4]}))
  return 1
end

-- set_control P tid control(none|prune|cancel) -> 1
-- A running trial gets the flag (its worker sees it on the next heartbeat or
-- report); a queued trial that is cancelled is finished at once.
local function set_control(keys, a)
  local P, tid, control = a[1], a[2], a[3]
  if control ~= 'none' and control ~= 'prune' and control ~= 'cancel' then
    return refuse('INVALID', 'control ' .. control)
  end
  local t = hgetall(P .. 'trial:' .. tid)
  if not t then return refuse('NOT_FOUND', 'trial ' .. tid) end
  if t.state == 'running' then
    redis.call('HSET', P .. 'trial:' .. tid, 'control', control)
    emit(P, 'trial.control', t.sweep, tid, json_obj({control = control}))
    return 1
  end
  if t.state == 'queued' and control == 'cancel' then
    finish(P, t, now_ms(), 'cancelled', nil, nil, 'cancelled')
    return 1
  end
  return refuse('CONFLICT', 'trial ' .. tid .. ' is ' .. t.state)
end

-- set_unschedulable P sid reason -> 1
-- A non-empty reason takes the sweep out of the claims' round robin (its queue
-- waits aside, in front of no other sweep); an empty one puts it back.
local function set_unschedulable(keys, a)
  local P, sid, reason = a[1], a[2], a[3]
  local skey = P .. 'sweep:' .. sid
  local state = redis.call('HGET', skey, 'state')
  if not state then return refuse('NOT_FOUND', 'sweep ' .. sid) end
  if state ~= 'running' then return 1 end
  local was = redis.call('HGET', skey, 'unschedulable')
  if reason ~= '' then
    redis.call('HSET', skey, 'unschedulable', reason)
    unready(P, sid)
    if was ~= reason then emit(P, 'sweep.unschedulable', sid, '', json_obj({reason = reason})) end
  elseif was then
    redis.call('HDEL', skey, 'unschedulable')
    if redis.call('LLEN', P .. 'queue:' .. sid) > 0 then make_ready(P, sid) end
    emit(P, 'sweep.schedulable', sid, '', '{}')
  end
  return 1
end

-- rank_heartbeat P tid attempt worker lease_ms -> 1 | 0
-- A gang follower renews its rank lease while the attempt it runs ranks of is
-- the trial's running one (1); 0: that attempt is over, its ranks stop.
local function rank_heartbeat(keys, a)
  local P, tid, attempt, worker = a[1], a[2], a[3], a[4]
  local st = redis.call('HMGET', P .. 'trial:' .. tid, 'state', 'attempt')
  if st[1] ~= 'running' or st[2] ~= attempt then return 0 end
  redis.call('SET', P .. 'rank_lease:' .. tid .. ':' .. attempt .. ':' .. worker, '1', 'PX', a[5])
  -- The share has arrived: it is not handed out again (see take_ranks).
  local sent = P .. 'ranks_sent:' .. worker
  for _, text in ipairs(redis.call('LRANGE', sent, 0, -1)) do
    local r = cjson.decode(text)
    if r.trial == tid and tostring(r.attempt) == attempt then redis.call('LREM', sent, 0, text) end
  end
  return 1
end

-- release_gang P tid attempt worker -> 1 | 0
-- A follower whose worker drains: the attempt's control becomes 'release'
-- (unless a stop is asked already), which the leader hears on its next
-- heartbeat or report and handles as its own drain (the gang stops together,
-- the trial is released, no failure counted). 0 when `worker` holds no rank
-- lease of that running attempt.
local function release_gang(keys, a)
  local P, tid, attempt, worker = a[1], a[2], a[3], a[4]
  if redis.call('EXISTS', P .. 'rank_lease:' .. tid .. ':' .. attempt .. ':' .. worker) == 0 then
    return 0
  end
  local tkey = P .. 'trial:' .. tid
  local st = redis.call('HMGET', tkey, 'state', 'attempt', 'control', 'sweep')
  if st[1] ~= 'running' or st[2] ~= attempt then return 0 end
  if (st[3] or 'none') == 'none' then
    redis.call('HSET', tkey, 'control', 'release')
    emit(P, 'trial.release_requested', st[4], tid, json_obj({worker = worker, attempt = tonumber(attempt)}))
  end
  return 1
end

-- publish_rendezvous P tid attempt worker address ttl_ms -> 1
-- The leader (the lease holder) says where its ranks' c10d store listens.
local function publish_rendezvous(keys, a)
  local P = a[1]
  local t, err = fenced(P, a[2], a[3], a[4])
  if not t then return err end
  redis.call('SET', P .. 'rendezvous:' .. a[2] .. ':' .. a[3], a[5], 'PX', a[6])
  return 1
end

-- rendezvous P tid attempt -> address | false
local function rendezvous(keys, a)
  return redis.call('GET', a[1] .. 'rendezvous:' .. a[2] .. ':' .. a[3])
end

-- put_worker P name info_json ttl_ms -> 1
local function put_worker(keys, a)
  local P, name = a[1], a[2]
  local now = now_ms()
  local alive = P .. 'worker:' .. name .. ':alive'
  local joined = redis.call('EXISTS', alive) == 0
  local info = cjson.decode(a[3])
  if not joined then
    -- Another process of this name on another host: each would release the
    -- other's trials (its leases are not the ones it runs) forever.
    local held = redis.call('HGET', P .. 'workers', name)
    if held then
      local was = cjson.decode(held)
      if was.instance and info.instance and was.instance ~= info.instance and
         (was.host or '') ~= (info.host or '') then
        return refuse('CONFLICT', 'a worker named ' .. name .. ' already runs on host ' ..
                      tostring(was.host) .. ' (this one is on ' .. tostring(info.host) ..
                      '): give each worker a name of its own (--name)')
      end
    end
  end
  -- A draining worker takes no new gang share: its offer goes.
  if info.draining then redis.call('HDEL', P .. 'offers', name) end
  redis.call('HSET', P .. 'workers', name, a[3])
  redis.call('HSET', P .. 'worker_hb', name, int(now))
  redis.call('SET', alive, int(now), 'PX', a[4])
  if joined then emit(P, 'worker.joined', '', '', json_obj({worker = name})) end
  return 1
end

-- remove_worker P name instance -> 1 | 0
-- A worker that exits deregisters at once (instead of living out its TTL):
-- no gang share is placed on it meanwhile. Only the process that registered
-- the name (its instance) removes it.
local function remove_worker(keys, a)
  local P, name, instance = a[1], a[2], a[3]
  local held = redis.call('HGET', P .. 'workers', name)
  if not held then return 0 end
  local was = cjson.decode(held)
  if was.instance and was.instance ~= instance then return 0 end
  redis.call('DEL', P .. 'worker:' .. name .. ':alive')
  redis.call('HDEL', P .. 'workers', name)
  redis.call('HDEL', P .. 'worker_hb', name)
  redis.call('HDEL', P .. 'offers', name)
  redis.call('DEL', P .. 'ranks:' .. name, P .. 'ranks_sent:' .. name)
  emit(P, 'worker.left', '', '', json_obj({worker = name}))
  return 1
end

-- list_workers P -> {name, info_json, last_heartbeat_ms, ...} of live workers;
-- workers whose TTL ran out are dropped (worker.lost).
local function list_workers(keys, a)
  local P = a[1]
  local out = {}
  for _, name in ipairs(redis.call('HKEYS', P .. 'workers')) do
    if redis.call('EXISTS', P .. 'worker:' .. name .. ':alive') == 1 then
      table.insert(out, name)
      table.insert(out, redis.call('HGET', P .. 'workers', name))
      table.insert(out, redis.call('HGET', P .. 'worker_hb', name) or '0')
    else
      redis.call('HDEL', P .. 'workers', name)
      redis.call('HDEL', P .. 'worker_hb', name)
      emit(P, 'worker.lost', '', '', json_obj({worker = name}))
    end
  end
  return out
end

-- Every function is registered through `waking`: a call that made trials
-- claimable (wake_pending) adds one entry to the wake stream, however many it
-- queued.
local function waking(fn)
  return function(keys, a)
    wake_pending = false
    local out = fn(keys, a)
    if wake_pending then
      wake_pending = false
      redis.call('XADD', a[1] .. 'wake', 'MAXLEN', '~', '100', '*', 'q', '1')
    end
    return out
  end
end

local function register(name, fn) redis.register_function('hpo_' .. name, waking(fn)) end

register('create_sweep', create_sweep)
register('import_sweep', import_sweep)
register('create_trial', create_trial)
register('create_trials', create_trials)
register('claim', claim)
register('claim_batch', claim_batch)
register('heartbeat', heartbeat)
register('heartbeat_batch', heartbeat_batch)
register('report', report)
register('complete', complete)
register('complete_batch', complete_batch)
register('reap', reap)
register('release', release)
register('put_artifact', put_artifact)
register('put_record', put_record)
register('put_sweep_record', put_sweep_record)
register('worker_leases', worker_leases)
register('delete_sweep', delete_sweep)
register('cancel_sweep', cancel_sweep)
register('finish_sweep', finish_sweep)
register('set_stage', set_stage)
register('set_control', set_control)
register('put_worker', put_worker)
register('remove_worker', remove_worker)
register('rank_heartbeat', rank_heartbeat)
register('release_gang', release_gang)
register('publish_rendezvous', publish_rendezvous)
register('rendezvous', rendezvous)
register('set_unschedulable', set_unschedulable)
register('list_workers', list_workers)
