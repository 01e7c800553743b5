-- A trial's state moves: per-sweep counters, attempt records, best values,
-- the per-sweep queues and the ready round robin, finishing, fencing.
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

-- Whether a sweep's trials hold GPUs: its request (field 'needs',
-- to_json(ResourceRequest)) asks for them, and each of its trials then holds
-- one GPU per slot.
local function needs_gpus(needs)
  if not needs or needs == '' then return false end
  local ok, need = pcall(cjson.decode, needs)
  return ok and type(need) == 'table' and (tonumber(need.gpus) or 0) > 0
end

-- A sweep's project, and whether its trials hold GPUs (field 'gpu', written
-- at creation; worked out once from 'needs' for sweeps made before it).
local function sweep_project_gpu(P, sweep)
  local skey = P .. 'sweep:' .. sweep
  local v = redis.call('HMGET', skey, 'project', 'gpu')
  local gpu = v[2]
  if not gpu then
    gpu = needs_gpus(redis.call('HGET', skey, 'needs')) and '1' or '0'
    if redis.call('EXISTS', skey) == 1 then redis.call('HSET', skey, 'gpu', gpu) end
  end
  return v[1] or 'default', gpu == '1'
end

-- What a project holds now, P..'project_use:'<name>: 'slots' its running
-- trials take, 'gpus' the GPUs among them (the slots of trials that asked for
-- GPUs) and 'queued_trials' its queued trials (what its quotas limit and the
-- claim's fair share weighs), kept in step with the sweeps' counters. Trials
-- that were running or queued before projects existed were never counted: a
-- count that would go below 0 stays at 0.
local function project_use(P, sweep, field, by)
  if by == 0 then return end
  local project, gpu = sweep_project_gpu(P, sweep)
  local key = P .. 'project_use:' .. project
  if redis.call('HINCRBY', key, field, by) < 0 then redis.call('HSET', key, field, '0') end
  if field == 'slots' and gpu and redis.call('HINCRBY', key, 'gpus', by) < 0 then
    redis.call('HSET', key, 'gpus', '0')
  end
end

local function apply_counts(P, delta)
  for sweep, d in pairs(delta) do
    local queued = 0
    for field, by in pairs(d) do
      if by ~= 0 then
        if field == 'slots.running' then
          project_use(P, sweep, 'slots', by)
        else
          redis.call('HINCRBY', P .. 'sweep:' .. sweep, field, by)
          if string.sub(field, -7) == '.queued' then queued = queued + by end
        end
      end
    end
    project_use(P, sweep, 'queued_trials', queued)
  end
end

local function move_counts(P, t, to, delta)
  local slots = tonumber(t.slots) or 1
  if delta then
    count(delta, t.sweep, t.kind .. '.' .. t.state, -1)
    count(delta, t.sweep, t.kind .. '.' .. to, 1)
    if t.state == TrialState.running then count(delta, t.sweep, 'slots.running', -slots) end
    if to == TrialState.running then count(delta, t.sweep, 'slots.running', slots) end
  else
    local skey = P .. 'sweep:' .. t.sweep
    redis.call('HINCRBY', skey, t.kind .. '.' .. t.state, -1)
    redis.call('HINCRBY', skey, t.kind .. '.' .. to, 1)
    if t.state == TrialState.queued then project_use(P, t.sweep, 'queued_trials', -1) end
    if to == TrialState.queued then project_use(P, t.sweep, 'queued_trials', 1) end
    if t.state == TrialState.running then project_use(P, t.sweep, 'slots', -slots) end
    if to == TrialState.running then project_use(P, t.sweep, 'slots', slots) end
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
  if t.kind ~= Role.trial or value == nil or value == '' then return end
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
  move(P, t, TrialState.queued)
  redis.call('HSET', P .. 'trial:' .. t.id, 'attempt', int(next_attempt), 'control', Control.none,
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
  if t.control == Control.cancel or sweep_state ~= SweepState.running then return TrialState.cancelled end
  if t.control == Control.prune then return TrialState.pruned end
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
  if state == TrialState.completed then update_best(P, t, value, metrics, bests) end
  emit(P, 'trial.finished', t.sweep, t.id,
       json_obj({state = state, attempt = tonumber(t.attempt), error = err or ''}, raw))
end

-- The fencing check shared by heartbeat, report and complete.
local function fenced(P, tid, attempt, worker)
  local t = hgetall(P .. 'trial:' .. tid)
  if not t then return nil, refuse('NOT_FOUND', 'trial ' .. tid) end
  if t.state ~= TrialState.running or t.attempt ~= attempt or t.worker ~= worker then
    return nil, refuse('LEASE_LOST', 'trial ' .. tid .. ' is ' .. t.state .. ' at attempt ' ..
                       t.attempt .. ' by ' .. (t.worker or '') .. '; caller has attempt ' .. attempt ..
                       ' by ' .. worker)
  end
  return t
end

