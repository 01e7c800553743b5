-- Results: reports (bounded in count and bytes) and completions.
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
  -- The project's max_store_bytes (02b_bytes.lua) bounds them too.
  local project_room = bytes_room(P, (sweep_project_gpu(P, t.sweep)), 'store_bytes')
  local now = int(now_ms())
  local stored, added = 0, 0
  for i = 1, room do
    local step = int(tonumber(a[5 + 2 * i]))
    local entry = '{"step":' .. step .. ',"time_ms":' .. now .. ',"metrics":' .. a[6 + 2 * i] .. '}'
    if byte_cap > 0 and used + added + #entry > byte_cap then break end
    if project_room and added + #entry > project_room then break end
    redis.call('RPUSH', rkey, entry)
    stored = stored + 1
    added = added + #entry
  end
  if added > 0 then
    redis.call('HINCRBY', tkey, 'report_bytes', added)
    charge(P, t.sweep, added, 0)
  end
  if stored < n then redis.call('HINCRBY', tkey, 'reports_dropped', n - stored) end
  local last = int(tonumber(a[5 + 2 * n]))
  emit(P, 'trial.reported', t.sweep, t.id,
       '{"step":' .. last .. ',"metrics":' .. a[6 + 2 * n] .. ',"count":' .. int(n) .. '}')
  return t.control
end

-- Keeps bytes under a name for an owner: 'artifact' (a trial's) or
-- 'sweep_artifact' (a sweep's own), with the owner's name set (for
-- delete_sweep), counted against sweep `sid`'s project. With `what` (a
-- tenant's write) a growth past the project's byte limits is refused: the
-- refusal is returned and nothing is kept.
local function keep_named(P, kind, owner, name, bytes, sid, what)
  local store, file = held_at(P, kind, owner, name)
  local over = charge(P, sid, #bytes - store, file_size_of(bytes) - file, what)
  if over then return over end
  redis.call('SET', P .. kind .. ':' .. owner .. ':' .. name, bytes)
  redis.call('SADD', P .. kind .. 's:' .. owner, name)
  note_held(P, kind, owner, name, bytes)
  return nil
end

local function valid_outcome(o)
  return o == TrialState.completed or o == TrialState.failed or o == TrialState.pruned or o == TrialState.cancelled
end

-- complete_one's transition: retried, or ended for good -> the new state.
local function complete_transition(P, t, outcome, value, metrics, err, retryable, now, delta, bests)
  redis.call('ZREM', P .. 'leases', t.id)
  attempt_end(P, t, now, outcome, err)
  if outcome == TrialState.failed and retryable == '1' and failures_after(t) < tonumber(t.max_attempts) then
    local verdict = stop_verdict(P, t)  -- cancelled or pruned meanwhile: no retry
    if not verdict then
      redis.call('HSET', P .. 'trial:' .. t.id, 'lease_deadline', '0')
      requeue(P, t, err)
      return TrialState.queued
    end
    finish(P, t, now, verdict, nil, metrics, err, delta, bests)
    return verdict
  end
  finish(P, t, now, outcome, value, metrics, err, delta, bests)
  return outcome
end

-- Ends the current attempt of `tid` with a result -> the trial's new state, or
-- a refusal. `log` (may be '') is kept as the attempt's log artifact; `delta`
-- and `bests` defer a batch's counters and best trials to its end, `grown`
-- (sweep -> bytes) the growth of its trials' metrics (charged at once without).
local function complete_one(P, tid, attempt, worker, outcome, value, metrics, err, retryable, log,
                            now, delta, bests, grown)
  if not valid_outcome(outcome) then return nil, refuse('INVALID', 'outcome ' .. outcome) end
  local t, refusal = fenced(P, tid, attempt, worker)
  if not t then return nil, refusal end
  -- A log past the project's max_store_bytes is left out; the result never is.
  if log ~= '' then keep_named(P, 'artifact', t.id, 'log.txt', log, t.sweep, 'the log') end
  local state = complete_transition(P, t, outcome, value, metrics, err, retryable, now, delta, bests)
  -- finish() replaced the metrics when it was given some (a retry keeps them).
  if state ~= TrialState.queued and metrics and metrics ~= '' then
    local by = #metrics - #(t.metrics or '')
    if grown then
      grown[t.sweep] = (grown[t.sweep] or 0) + by
    else
      charge(P, t.sweep, by, 0)
    end
  end
  return state
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
  local delta, bests, grown = {}, {}, {}
  local out = {}
  for i = 1, n do
    local at = 3 + 8 * (i - 1)
    local state, err = complete_one(P, a[at + 1], a[at + 2], worker, a[at + 3], a[at + 4],
                                    a[at + 5], a[at + 6], a[at + 7], a[at + 8], now, delta, bests,
                                    grown)
    out[i] = state or err.err
  end
  apply_counts(P, delta)
  write_bests(P, bests)
  for sweep, by in pairs(grown) do charge(P, sweep, by, 0) end
  return out
end


