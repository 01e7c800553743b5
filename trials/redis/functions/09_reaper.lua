-- The reaper (expired leases, outages) and releases (bounded by max_releases).
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
    if t and t.state == TrialState.running then
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
    finish(P, t, now, TrialState.failed, nil, nil,
           'given back ' .. int(stopped) .. ' times without finishing (drains, preemptions), ' ..
           'more than the pool allows (hpo-scheduler --max-releases ' .. int(bound) ..
           '); the last time: ' .. a[5])
    return TrialState.failed
  end
  requeue(P, t, 'released: ' .. a[5], true)
  return TrialState.queued
end


