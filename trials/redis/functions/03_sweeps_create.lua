-- Creating sweeps (idempotent submits, imports) and their trials; the
-- migration of an earlier version's shared queue.
local function flatten(key)
  return redis.call('HGETALL', key)
end

-- A project (14_access.lua): made with `weight` unless it exists; true when made.
local function ensure_project(P, name, weight, now)
  if redis.call('SISMEMBER', P .. 'projects', name) == 1 then return false end
  redis.call('HSET', P .. 'project:' .. name, 'name', name, 'weight', weight, 'created_ms', int(now))
  redis.call('SADD', P .. 'projects', name)
  return true
end

-- A sweep's project must exist; the default one (trials/access.hpp) is made
-- when missing, so a store that never saw a scheduler's bootstrap works alone.
local function check_project(P, project)
  if project == 'default' then ensure_project(P, project, '1', now_ms()) end
  if redis.call('SISMEMBER', P .. 'projects', project) == 0 then
    return refuse('NOT_FOUND', 'project ' .. project)
  end
  return nil
end

-- How many more trials `project` may queue (its max_queued_trials, field
-- max_queued, less its queued trials); nil without a limit; and the refusal
-- to give when it has no room.
local function queue_room(P, project)
  local max_queued = tonumber(redis.call('HGET', P .. 'project:' .. project, 'max_queued') or '') or 0
  if max_queued <= 0 then return nil end
  local queued = tonumber(redis.call('HGET', P .. 'project_use:' .. project, 'queued_trials') or '0') or 0
  return max_queued - queued, refuse('QUOTA', 'project ' .. project .. ' has ' .. int(queued) ..
                                     ' queued trials, its limit max_queued_trials is ' .. int(max_queued))
end

-- A submit past one of the project's limits (P..'project:'<name> fields
-- max_active: running sweeps, and its queue above; absent or 0: none): the
-- refusal naming the limit, or nil. A retried submit whose first try was
-- stored returns that sweep before this is asked.
local function over_quota(P, project)
  local max_active = tonumber(redis.call('HGET', P .. 'project:' .. project, 'max_active') or '') or 0
  if max_active > 0 then
    local active = redis.call('SCARD', P .. 'project_active:' .. project)
    if active >= max_active then
      return refuse('QUOTA', 'project ' .. project .. ' has ' .. int(active) ..
                    ' running sweeps, its limit max_active_sweeps is ' .. int(max_active) ..
                    ': cancel one or wait for one to end')
    end
  end
  local room, full = queue_room(P, project)
  if room and room < 1 then return full end
  return nil
end

-- What a new sweep's own fields keep in the store.
local function sweep_bytes(name, spec, needs, constraints)
  return #(name or '') + #(spec or '') + #(needs or '') + #(constraints or '')
end

-- An idempotency key's first sweep: its id when that sweep was made with the
-- same spec (and, for an import, the same trials: `digest`), a refusal when
-- with others; nil when the key is unused or its sweep is gone.
-- Keys are per project: another project's key names nothing here.
local function idem_first(P, idem, spec, digest, project)
  if idem == '' then return nil end
  local first = redis.call('GET', P .. 'idem:' .. project .. ':' .. idem)
  if not first then return nil end
  local s = redis.call('HMGET', P .. 'sweep:' .. first, 'spec', 'import_digest')
  if not s[1] then return nil end
  if s[1] == spec and (s[2] or '') == digest then return first end
  return nil, refuse('CONFLICT', 'Idempotency-Key ' .. idem .. ' was used for sweep ' .. first ..
                     ' with another ' .. (digest ~= '' and 'import' or 'spec'))
end

-- A new running sweep's keys; nil or a refusal.
local function new_sweep(P, id, name, spec, maximize, needs, idem, idem_ttl, now, constraints,
                         project, owner)
  local skey = P .. 'sweep:' .. id
  if redis.call('EXISTS', skey) == 1 then return refuse('CONFLICT', 'sweep id ' .. id .. ' taken') end
  redis.call('HSET', skey, 'id', id, 'name', name, 'spec', spec, 'maximize', maximize, 'state',
             SweepState.running, 'stage', Stage.search, 'created_ms', int(now), 'finished_ms', '0',
             'next_trial', '0', 'next_member', '0', 'error', '', 'needs', needs or '',
             'gpu', needs_gpus(needs) and '1' or '0', 'constraints', constraints or '', 'project',
             project, 'owner', owner, 'bytes_counted', '1')
  for _, kind in ipairs({Role.trial, Role.member}) do
    for _, s in ipairs(kTrialStates) do redis.call('HSET', skey, kind .. '.' .. s, '0') end
  end
  local seq = redis.call('INCR', P .. 'seq:sweeps')
  redis.call('ZADD', P .. 'sweeps', seq, id)
  redis.call('ZADD', P .. 'project_sweeps:' .. project, seq, id)
  if idem ~= '' then
    redis.call('SET', P .. 'idem:' .. project .. ':' .. idem, id, 'EX', tonumber(idem_ttl or '86400'))
  end
  charge(P, id, sweep_bytes(name, spec, needs, constraints), 0)
  emit(P, 'sweep.created', id, '', json_obj({name = name, project = project}))
  return nil
end

-- create_sweep P id name spec maximize idem_key idem_ttl_s needs_json constraints_json
--   project owner -> sweep id (the project must exist)
-- With an Idempotency-Key: a key already used for a sweep that still exists
-- returns that sweep (the same spec) or refuses (another spec), so a client
-- that retries a submit whose reply it lost gets the first sweep back.
local function create_sweep(keys, a)
  local P, id = a[1], a[2]
  local idem, project = a[6] or '', a[10]
  local missing = check_project(P, project)
  if missing then return missing end
  local first, refusal = idem_first(P, idem, a[4], '', project)
  if first or refusal then return first or refusal end
  local over = over_quota(P, project) or
                 over_bytes(P, project, 'store_bytes', sweep_bytes(a[3], a[4], a[8], a[9]), 'the sweep')
  if over then return over end
  local err = new_sweep(P, id, a[3], a[4], a[5], a[8], idem, a[7], now_ms(), a[9], project, a[11])
  if err then return err end
  redis.call('SADD', P .. 'sweeps:active', id)
  redis.call('SADD', P .. 'project_active:' .. project, id)
  return id
end

local kEndedStates = {completed = true, failed = true, pruned = true, cancelled = true}

-- import_sweep P id name spec maximize idem_key idem_ttl_s needs constraints project owner
--   digest n {params state value metrics error worker started_ms finished_ms}*n -> sweep id
-- An ended sweep (finished, stage done) holding n ended trials, written at
-- once; `digest` (the trials' hash) makes a retry with other rows a conflict.
local function import_sweep(keys, a)
  local P, id, idem, project, owner, digest = a[1], a[2], a[6] or '', a[10], a[11], a[12]
  local n = tonumber(a[13])
  if n == nil or n < 0 then return refuse('INVALID', 'trial count ' .. tostring(a[13])) end
  local missing = check_project(P, project)
  if missing then return missing end
  for i = 1, n do
    local state = a[13 + 8 * (i - 1) + 2]
    if not kEndedStates[state] then
      return refuse('INVALID', 'imported trial ' .. int(i - 1) .. ' is ' .. tostring(state) ..
                    ', not ended')
    end
  end
  local first, refusal = idem_first(P, idem, a[4], digest, project)
  if first or refusal then return first or refusal end
  -- Its trials' bytes (their fields and attempt records) count like a submit's spec.
  local trial_bytes = 0
  for i = 1, n do
    local at = 13 + 8 * (i - 1)
    for f = 1, 8 do trial_bytes = trial_bytes + #a[at + f] end
  end
  local over = over_bytes(P, project, 'store_bytes', sweep_bytes(a[3], a[4], a[8], a[9]) + trial_bytes,
                          'the import of ' .. int(n) .. ' trials')
  if over then return over end
  local now = now_ms()
  local err = new_sweep(P, id, a[3], a[4], a[5], a[8], idem, a[7], now, a[9], project, owner)
  if err then return err end
  charge(P, id, trial_bytes, 0)
  local skey = P .. 'sweep:' .. id
  local ids, delta, bests = {}, {}, {}
  for i = 1, n do
    local at = 13 + 8 * (i - 1)
    local num = i - 1
    local tid = id .. '-' .. int(num)
    ids[i] = tid
    local state = a[at + 2]
    local fields = {'id', tid, 'sweep', id, 'number', int(num), 'kind', Role.trial, 'params', a[at + 1],
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
    if state == TrialState.completed then
      update_best(P, {kind = Role.trial, sweep = id, id = tid, number = int(num), params = a[at + 1]},
                  a[at + 3], a[at + 4], bests)
    end
  end
  -- RPUSH takes the ids in chunks (a call's arguments are bounded by Lua's stack).
  for from = 1, n, 1000 do
    redis.call('RPUSH', P .. 'trials:' .. id .. ':trial', unpack(ids, from, math.min(n, from + 999)))
  end
  apply_counts(P, delta)
  write_bests(P, bests)
  redis.call('HSET', skey, 'next_trial', int(n), 'state', SweepState.finished, 'stage', Stage.done, 'finished_ms',
             int(now), 'import_digest', digest)
  emit(P, 'sweep.finished', id, '', json_obj({state = SweepState.finished, error = ''}))
  return id
end

-- Creates trials number, number+1, ... of sweep `sid` and queues them; `items`
-- is {params, max_attempts, slots, extra} per trial. A compare-and-set on the
-- sweep's next number -> the new trial ids and the creation time, or a
-- refusal. The project's max_queued_trials holds here, where trials are made:
-- only the first items it has room for are created (the caller makes the
-- rest as trials leave the queue), none (QUOTA) when it has no room.
local function create_many(P, sid, kind, number, limit, items)
  if kind ~= Role.trial and kind ~= Role.member then return nil, refuse('INVALID', 'kind ' .. kind) end
  local skey = P .. 'sweep:' .. sid
  local s = redis.call('HMGET', skey, 'state', 'next_' .. kind)
  if not s[1] then return nil, refuse('NOT_FOUND', 'sweep ' .. sid) end
  if s[1] ~= SweepState.running then return nil, refuse('CONFLICT', 'sweep ' .. sid .. ' is ' .. s[1]) end
  if tonumber(s[2]) ~= number then
    return nil, refuse('CONFLICT', 'next ' .. kind .. ' number of ' .. sid .. ' is ' .. s[2] ..
                       ', not ' .. int(number))
  end
  if number + #items > limit then
    return nil, refuse('CONFLICT', kind .. ' limit ' .. int(limit) .. ' reached')
  end
  local room, full = queue_room(P, (sweep_project_gpu(P, sid)))
  if room and room < 1 then return nil, full end
  if room and room < #items then items = {unpack(items, 1, room)} end
  local now = now_ms()
  local ids = {}
  local bytes = 0
  for i, it in ipairs(items) do
    local n = number + i - 1
    local tid = sid .. '-' .. (kind == Role.member and 'm' or '') .. int(n)
    ids[i] = tid
    -- Only the fields with a value: the rest (worker, started_ms, finished_ms,
    -- value, metrics, error, control, lease_deadline, lease_ms, released,
    -- an empty extra) read as empty or 0 until a transition sets them, and a
    -- smaller hash is less to write to the AOF and to keep.
    local tkey = P .. 'trial:' .. tid
    redis.call('HSET', tkey, 'id', tid, 'sweep', sid, 'number', int(n), 'kind', kind, 'params',
               it[1], 'state', TrialState.queued, 'attempt', '0', 'max_attempts', it[2], 'slots', it[3],
               'created_ms', int(now))
    if it[4] ~= '' then redis.call('HSET', tkey, 'extra', it[4]) end
    bytes = bytes + #it[1] + #it[4]
    emit(P, 'trial.queued', sid, tid, json_obj({attempt = 0, number = n, kind = kind}))
  end
  redis.call('HSET', skey, 'next_' .. kind, int(number + #items))
  redis.call('HINCRBY', skey, kind .. '.queued', #items)
  project_use(P, sid, 'queued_trials', #items)
  charge(P, sid, bytes, 0)  -- admitted work: counted, never refused (02b_bytes.lua)
  redis.call('RPUSH', P .. 'trials:' .. sid .. ':' .. kind, unpack(ids))
  redis.call('RPUSH', P .. 'queue:' .. sid, unpack(ids))
  make_ready(P, sid)
  wake_pending = true
  return ids, now
end

-- create_trials P sweep kind number limit n {params max_attempts slots extra}*n
--   -> {created_ms, tid...} (the first ones only, where the project's queue limit stops the rest)
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
    if ts[1] == TrialState.queued then enqueue(P, ts[2], tid, false) end
  end
  redis.call('DEL', old)
end

-- What a worker needs of a claimed trial, by position (claim_batch's reply;
-- RedisStore reads it in this order): half the strings of a flat hash, and
-- 'placed', the worker's slots the claim put the attempt on ('0,2'; not stored).
local kClaimFields = {'id', 'sweep', 'number', 'kind', 'params', 'state', 'attempt', 'released',
                      'max_attempts', 'slots', 'worker', 'created_ms', 'started_ms', 'control',
                      'extra', 'lease_deadline', 'gang', 'placed'}

