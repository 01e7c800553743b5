-- A sweep's life: delete, cancel, finish, stage, control, unschedulable.
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
  if state == SweepState.running then
    return refuse('CONFLICT', 'sweep ' .. sid .. ' is running: cancel it first')
  end
  local still = redis.call('HMGET', skey, 'trial.running', 'member.running')
  local running = (tonumber(still[1]) or 0) + (tonumber(still[2]) or 0)
  if running > 0 then
    return refuse('CONFLICT', 'sweep ' .. sid .. ' still has ' .. int(running) ..
                  ' running trial(s), stopping at their next heartbeat: try again shortly')
  end
  local left = 0
  for _, kind in ipairs({Role.trial, Role.member}) do
    local list = P .. 'trials:' .. sid .. ':' .. kind
    while max > 0 do
      local tid = redis.call('LPOP', list)
      if not tid then break end
      max = max - 1
      for _, name in ipairs(redis.call('SMEMBERS', P .. 'artifacts:' .. tid)) do
        redis.call('DEL', P .. 'artifact:' .. tid .. ':' .. name)
      end
      redis.call('DEL', P .. 'trial:' .. tid, P .. 'reports:' .. tid, P .. 'attempts:' .. tid,
                 P .. 'artifacts:' .. tid, P .. 'artifact_bytes:' .. tid)
      redis.call('ZREM', P .. 'leases', tid)
    end
    left = left + redis.call('LLEN', list)
  end
  if left == 0 then
    -- Last: until now the sweep stays listed, so an interrupted delete is found again.
    for _, name in ipairs(redis.call('SMEMBERS', P .. 'sweep_artifacts:' .. sid)) do
      redis.call('DEL', P .. 'sweep_artifact:' .. sid .. ':' .. name)
    end
    local project = redis.call('HGET', skey, 'project')
    if project then redis.call('ZREM', P .. 'project_sweeps:' .. project, sid) end
    local held = redis.call('HMGET', skey, 'store_bytes', 'file_bytes')
    charge(P, sid, -(tonumber(held[1]) or 0), -(tonumber(held[2]) or 0))
    redis.call('DEL', skey, P .. 'queue:' .. sid, P .. 'sweep_artifacts:' .. sid,
               P .. 'sweep_artifact_bytes:' .. sid, P .. 'notes:' .. sid)
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
  redis.call('SREM', P .. 'project_active:' ..
             (redis.call('HGET', P .. 'sweep:' .. sid, 'project') or 'default'), sid)
  for _, kind in ipairs({Role.trial, Role.member}) do
    for _, tid in ipairs(redis.call('LRANGE', P .. 'trials:' .. sid .. ':' .. kind, 0, -1)) do
      local tkey = P .. 'trial:' .. tid
      local ts = redis.call('HMGET', tkey, 'state', 'attempt', 'kind', 'number', 'params')
      if ts[1] == TrialState.queued then
        local t = {id = tid, sweep = sid, state = TrialState.queued, attempt = ts[2], kind = ts[3],
                   number = ts[4], params = ts[5]}
        finish(P, t, now, TrialState.cancelled, nil, nil, 'sweep ' .. to)
      elseif ts[1] == TrialState.running then
        redis.call('HSET', tkey, 'control', Control.cancel)
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
  if state == SweepState.cancelled then return 1 end
  if state ~= SweepState.running then return refuse('CONFLICT', 'sweep ' .. sid .. ' is ' .. state) end
  end_sweep(P, sid, SweepState.cancelled, 'cancelled by user')
  return 1
end

-- finish_sweep P sid state(finished|failed|cancelled) error -> 1
local function finish_sweep(keys, a)
  local P, sid, to = a[1], a[2], a[3]
  if to ~= SweepState.finished and to ~= SweepState.failed and to ~= SweepState.cancelled then
    return refuse('INVALID', 'sweep state ' .. to)
  end
  local state, err = sweep_state(P, sid)
  if not state then return err end
  if state ~= SweepState.running then return refuse('CONFLICT', 'sweep ' .. sid .. ' is ' .. state) end
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
  if control ~= Control.none and control ~= Control.prune and control ~= Control.cancel then
    return refuse('INVALID', 'control ' .. control)
  end
  local t = hgetall(P .. 'trial:' .. tid)
  if not t then return refuse('NOT_FOUND', 'trial ' .. tid) end
  if t.state == TrialState.running then
    redis.call('HSET', P .. 'trial:' .. tid, 'control', control)
    emit(P, 'trial.control', t.sweep, tid, json_obj({control = control}))
    return 1
  end
  if t.state == TrialState.queued and control == Control.cancel then
    finish(P, t, now_ms(), TrialState.cancelled, nil, nil, 'cancelled while queued')
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
  if state ~= SweepState.running then return 1 end
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

-- annotate P sid tid tags_json note -> 'OK': a user's tags and note on sweep
-- sid (tid '') or on its trial tid, replacing the last ones. A trial's are
-- kept beside its record (P..'notes:'<sid>, trial id -> {"tags", "note"}),
-- which stays as it ended.
local function annotate(keys, a)
  local P, sid, tid, tags, note = a[1], a[2], a[3], a[4], a[5]
  local skey = P .. 'sweep:' .. sid
  if redis.call('EXISTS', skey) == 0 then return refuse('NOT_FOUND', 'sweep ' .. sid) end
  if tid == '' then
    redis.call('HSET', skey, 'tags', tags, 'note', note)
    emit(P, 'sweep.annotated', sid, '', '{}')
    return 'OK'
  end
  if redis.call('HGET', P .. 'trial:' .. tid, 'sweep') ~= sid then
    return refuse('NOT_FOUND', 'trial ' .. tid)
  end
  if tags == '[]' and note == '' then
    redis.call('HDEL', P .. 'notes:' .. sid, tid)
  else
    redis.call('HSET', P .. 'notes:' .. sid, tid, '{"tags":' .. tags .. ',"note":' .. jstr(note) .. '}')
  end
  emit(P, 'trial.annotated', sid, tid, '{}')
  return 'OK'
end

-- set_priority P sid n -> 'OK': the sweep's priority within its project (the
-- claim serves a project's sweeps of the highest priority first).
local function set_priority(keys, a)
  local skey = a[1] .. 'sweep:' .. a[2]
  if redis.call('EXISTS', skey) == 0 then return refuse('NOT_FOUND', 'sweep ' .. a[2]) end
  local n = tonumber(a[3])
  if not n or n ~= math.floor(n) or n < -1000 or n > 1000 then
    return refuse('INVALID', 'priority ' .. tostring(a[3]) .. ': expected an integer in [-1000, 1000]')
  end
  redis.call('HSET', skey, 'priority', int(n))
  emit(a[1], 'sweep.annotated', a[2], '', '{}')
  return 'OK'
end
