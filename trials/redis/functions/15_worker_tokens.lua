-- Worker credentials: one per worker host, for the worker endpoint on the
-- scheduler (trials/redis/worker_relay.hpp), which relays a worker's calls to
-- these Functions only after checking that they are a worker's, for its own
-- name (and its own project's trials when the credential names one).
--   A..'worker_token:'<digest> hash id host project created_ms created_by
--   A..'worker_tokens'         hash id -> digest
-- (A: the access prefix, beside P: the workers' keys cannot reach it.)

-- add_worker_token P id digest host project created_by -> 'OK'
local function add_worker_token(keys, a)
  local P, id, digest, host, project, by = a[1], a[2], a[3], a[4], a[5], a[6]
  local A = access_prefix(P)
  if project ~= '' then
    local missing = missing_project(P, project)
    if missing then return missing end
  end
  if redis.call('EXISTS', A .. 'worker_token:' .. digest) == 1 or
      redis.call('HEXISTS', A .. 'worker_tokens', id) == 1 then
    return refuse('CONFLICT', 'worker token ' .. id .. ' exists')
  end
  redis.call('HSET', A .. 'worker_token:' .. digest, 'id', id, 'host', host, 'project', project,
             'created_ms', int(now_ms()), 'created_by', by)
  redis.call('HSET', A .. 'worker_tokens', id, digest)
  return 'OK'
end

-- list_worker_tokens P -> {id, host, project, created_ms, created_by}*
local function list_worker_tokens(keys, a)
  local A = access_prefix(a[1])
  local out = {}
  local flat = redis.call('HGETALL', A .. 'worker_tokens')
  for i = 1, #flat, 2 do
    local t = redis.call('HMGET', A .. 'worker_token:' .. flat[i + 1], 'host', 'project',
                         'created_ms', 'created_by')
    out[#out + 1] = flat[i]
    for j = 1, 4 do out[#out + 1] = t[j] or '' end
  end
  return out
end

-- revoke_worker_token P id -> {host, project}
local function revoke_worker_token(keys, a)
  local A = access_prefix(a[1])
  local digest = redis.call('HGET', A .. 'worker_tokens', a[2])
  if not digest then return refuse('NOT_FOUND', 'worker token ' .. a[2]) end
  local t = redis.call('HMGET', A .. 'worker_token:' .. digest, 'host', 'project')
  redis.call('DEL', A .. 'worker_token:' .. digest)
  redis.call('HDEL', A .. 'worker_tokens', a[2])
  return {t[1] or '', t[2] or ''}
end

-- resolve_worker_token P digest -> {} or {id, host, project}
local function resolve_worker_token(keys, a)
  local A = access_prefix(a[1])
  local t = redis.call('HMGET', A .. 'worker_token:' .. a[2], 'id', 'host', 'project')
  if not t[1] then return {} end
  return {t[1], t[2] or '', t[3] or ''}
end

-- worker_may_read P worker tid -> 1 | 0
-- Whether `worker` may read trial tid's artifacts: it holds tid's lease or a
-- rank lease of its running attempt, or it holds a trial of tid's sweep (a
-- resumed trial reads the checkpoint of the trial it goes on from).
local function worker_may_read(keys, a)
  local P, worker, tid = a[1], a[2], a[3]
  local t = redis.call('HMGET', P .. 'trial:' .. tid, 'state', 'worker', 'attempt', 'sweep')
  if not t[4] then return 0 end
  if t[1] == TrialState.running then
    if t[2] == worker then return 1 end
    if redis.call('EXISTS', P .. 'rank_lease:' .. tid .. ':' .. t[3] .. ':' .. worker) == 1 then
      return 1
    end
  end
  for _, held in ipairs(redis.call('ZRANGE', P .. 'leases', 0, -1)) do
    local h = redis.call('HMGET', P .. 'trial:' .. held, 'state', 'worker', 'sweep')
    if h[1] == TrialState.running and h[2] == worker and h[3] == t[4] then return 1 end
  end
  return 0
end
