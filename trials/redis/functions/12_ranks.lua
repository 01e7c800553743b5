-- Gang ranks: rank leases, a gang's release, the rendezvous address.
-- rank_heartbeat P tid attempt worker lease_ms -> 1 | 0
-- A gang follower renews its rank lease while the attempt it runs ranks of is
-- the trial's running one (1); 0: that attempt is over, its ranks stop.
local function rank_heartbeat(keys, a)
  local P, tid, attempt, worker = a[1], a[2], a[3], a[4]
  local st = redis.call('HMGET', P .. 'trial:' .. tid, 'state', 'attempt')
  if st[1] ~= TrialState.running or st[2] ~= attempt then return 0 end
  -- Only a rank lease the gang's placement made (XX): a worker that was given
  -- no share of this attempt gets none by asking (version 8).
  local renewed = redis.call('SET', P .. 'rank_lease:' .. tid .. ':' .. attempt .. ':' .. worker,
                             '1', 'XX', 'PX', a[5])
  if not renewed then return 0 end
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
  if st[1] ~= TrialState.running or st[2] ~= attempt then return 0 end
  if (st[3] or Control.none) == Control.none then
    redis.call('HSET', tkey, 'control', Control.release)
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

-- rendezvous P tid attempt worker -> address | false
local function rendezvous(keys, a)
  -- Only to a worker holding a rank lease of that attempt (version 8).
  if redis.call('EXISTS', a[1] .. 'rank_lease:' .. a[2] .. ':' .. a[3] .. ':' .. a[4]) == 0 then
    return false
  end
  return redis.call('GET', a[1] .. 'rendezvous:' .. a[2] .. ':' .. a[3])
end

