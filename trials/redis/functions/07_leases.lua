-- Leases: expiry, a gang's lost rank, and renewal by heartbeats.
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
    finish(P, t, now, TrialState.failed, nil, nil, (final or reason) .. ' after ' .. int(attempts) .. ' attempts')
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
  if ts[1] ~= TrialState.running or ts[2] ~= attempt or ts[3] ~= worker then
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


