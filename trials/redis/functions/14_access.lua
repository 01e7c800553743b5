-- Who may do what (trials/access.hpp): users, token digests, project members,
-- the audit log. These keys live under their own prefix A (P with '-access:'
-- for its last ':', "hpo-access:" by default), outside the pattern a worker's
-- Redis user may touch (acl.cpp): Redis checks a function's commands against
-- its caller's key patterns, so a worker's credential can neither read a
-- token digest nor make itself a member. Projects themselves (weight, and the
-- quotas the claim enforces) stay under P, where claims read them.
--
--   A..'users'                set   user names
--   A..'user:'<name>          hash  name service_admin(0|1) created_ms
--   A..'token:'<digest>       hash  id user label created_ms (digest: SHA-256 of the secret)
--   A..'token_ids'            hash  token id -> digest
--   A..'tokens:'<user>        hash  token id -> digest
--   A..'roles:'<user>         hash  project -> viewer|member|admin
--   A..'members:'<project>    hash  user -> role (the same pairs, by project)
--   A..'audit:'<project>      stream time user action target detail, MAXLEN ~ 100000
--                                    ('' project: the service's own, such as a new user)
--   P..'projects'             set   project names
--   P..'project:'<name>       hash  name weight created_ms, and its limits (0 or absent: none):
--                                    max_slots and max_gpus (what its running trials may hold
--                                    at once: the claim enforces them), max_queued (queued trials) and
--                                    max_active (running sweeps: a submit past either is refused)
--   P..'project_use:'<name>   hash  slots and gpus (held by its running trials), queued_trials (its
--                                    trials): kept by the transitions (02_transitions.lua)
--   P..'project_active:'<name> set  its running sweeps
--   P..'project_sweeps:'<name> zset sweep ids by the creation sequence of P..'sweeps'
--   (sweep hash fields 'project' and 'owner': the project and the submitting user)
-- A prefix that does not end in ':' could have the access prefix inside the
-- workers' pattern (P..'*'): every access function refuses it.
local function access_prefix(P)
  if #P < 2 or string.sub(P, -1) ~= ':' then
    error(redis.error_reply('INVALID a key prefix ends in ":" (users and tokens live beside it): ' ..
                            P))
  end
  return string.sub(P, 1, -2) .. '-access:'
end

-- User and project names (trials/access.hpp check_access_name), checked here
-- too: a name is part of keys.
local function plain_name(name)
  return type(name) == 'string' and #name >= 1 and #name <= 64 and
           string.find(name, '^[a-z0-9][a-z0-9._-]*$') ~= nil
end

local kAuditMax = 100000

-- The refusal for a project that does not exist, or nil.
local function missing_project(P, project)
  if redis.call('SISMEMBER', P .. 'projects', project) == 1 then return nil end
  return refuse('NOT_FOUND', 'project ' .. project)
end
local kRoles = {viewer = true, member = true, admin = true}

local function put_member(A, project, user, role)
  redis.call('HSET', A .. 'members:' .. project, user, role)
  redis.call('HSET', A .. 'roles:' .. user, project, role)
end

local function drop_token(A, id)
  local digest = redis.call('HGET', A .. 'token_ids', id)
  if not digest then return nil end
  local user = redis.call('HGET', A .. 'token:' .. digest, 'user')
  redis.call('DEL', A .. 'token:' .. digest)
  redis.call('HDEL', A .. 'token_ids', id)
  if user then redis.call('HDEL', A .. 'tokens:' .. user, id) end
  return user or ''
end

local function store_token(A, user, id, digest, label, now, expires_ms)
  redis.call('HSET', A .. 'token:' .. digest, 'id', id, 'user', user, 'label', label,
             'created_ms', int(now), 'expires_ms', int(expires_ms or 0))
  redis.call('HSET', A .. 'token_ids', id, digest)
  redis.call('HSET', A .. 'tokens:' .. user, id, digest)
end

-- access_bootstrap P admin digest project -> 'OK'
local function access_bootstrap(keys, a)
  local P, admin, digest, project = a[1], a[2], a[3], a[4]
  local A = access_prefix(P)
  local now = now_ms()
  local ukey = A .. 'user:' .. admin
  if redis.call('EXISTS', ukey) == 0 then
    redis.call('HSET', ukey, 'name', admin, 'created_ms', int(now))
    redis.call('SADD', A .. 'users', admin)
  end
  redis.call('HSET', ukey, 'service_admin', '1')
  local old = redis.call('HGET', A .. 'token_ids', 'bootstrap')
  if old ~= digest then
    drop_token(A, 'bootstrap')
    if redis.call('EXISTS', A .. 'token:' .. digest) == 1 then
      return refuse('CONFLICT', 'the scheduler token is already another token')
    end
    store_token(A, admin, 'bootstrap', digest, 'the scheduler\'s token', now)
  end
  ensure_project(P, project, '1', now)
  if not redis.call('HGET', A .. 'members:' .. project, admin) then
    put_member(A, project, admin, 'admin')
  end
  -- Sweeps of earlier versions have no project: they are the default one's.
  -- And what each project holds is counted afresh from the sweeps and the
  -- running trials (trials queued or running before projects existed were
  -- never counted by the transitions), and their bytes from the sweeps'
  -- (measured once for sweeps made before bytes were counted: 02b_bytes.lua).
  local queued, slots, gpus, store, file = {}, {}, {}, {}, {}
  local all = redis.call('ZRANGE', P .. 'sweeps', 0, -1, 'WITHSCORES')
  for i = 1, #all, 2 do
    local skey = P .. 'sweep:' .. all[i]
    if redis.call('HEXISTS', skey, 'project') == 0 then
      redis.call('HSET', skey, 'project', project, 'owner', '')
      redis.call('ZADD', P .. 'project_sweeps:' .. project, all[i + 1], all[i])
      if redis.call('HGET', skey, 'state') == SweepState.running then
        redis.call('SADD', P .. 'project_active:' .. project, all[i])
      end
    end
    if redis.call('HGET', skey, 'bytes_counted') ~= '1' then measure_sweep(P, all[i]) end
    local s = redis.call('HMGET', skey, 'project', Role.trial .. '.' .. TrialState.queued,
                         Role.member .. '.' .. TrialState.queued, 'store_bytes', 'file_bytes')
    if s[1] then
      queued[s[1]] = (queued[s[1]] or 0) + (tonumber(s[2]) or 0) + (tonumber(s[3]) or 0)
      store[s[1]] = (store[s[1]] or 0) + (tonumber(s[4]) or 0)
      file[s[1]] = (file[s[1]] or 0) + (tonumber(s[5]) or 0)
    end
  end
  for _, tid in ipairs(redis.call('ZRANGE', P .. 'leases', 0, -1)) do
    local t = redis.call('HMGET', P .. 'trial:' .. tid, 'sweep', 'slots', 'state')
    local live = t[1] and t[3] == TrialState.running
    if live and redis.call('EXISTS', P .. 'sweep:' .. t[1]) == 1 then
      local p, gpu = sweep_project_gpu(P, t[1])
      local n = tonumber(t[2]) or 1
      slots[p] = (slots[p] or 0) + n
      if gpu then gpus[p] = (gpus[p] or 0) + n end
    end
  end
  for _, name in ipairs(redis.call('SMEMBERS', P .. 'projects')) do
    redis.call('HSET', P .. 'project_use:' .. name, 'slots', int(slots[name] or 0), 'gpus',
               int(gpus[name] or 0), 'queued_trials', int(queued[name] or 0), 'store_bytes',
               int(store[name] or 0), 'file_bytes', int(file[name] or 0))
  end
  return 'OK'
end

-- create_user P name service_admin(0|1) -> 'OK'
local function create_user(keys, a)
  local P, name, admin = a[1], a[2], a[3]
  local A = access_prefix(P)
  if not plain_name(name) then return refuse('INVALID', 'user name ' .. tostring(name)) end
  if redis.call('SISMEMBER', A .. 'users', name) == 1 then
    return refuse('CONFLICT', 'user ' .. name .. ' exists')
  end
  redis.call('HSET', A .. 'user:' .. name, 'name', name, 'service_admin', admin == '1' and '1' or '0',
             'disabled', '0', 'created_ms', int(now_ms()))
  redis.call('SADD', A .. 'users', name)
  return 'OK'
end

-- update_user P name disabled(''|0|1) service_admin(''|0|1) -> 'OK'
-- ('' leaves it as it is). A disabled user's tokens are refused at once;
-- enabling them again gives them back.
local function update_user(keys, a)
  local P, name, disabled, admin = a[1], a[2], a[3], a[4]
  local A = access_prefix(P)
  if redis.call('SISMEMBER', A .. 'users', name) == 0 then return refuse('NOT_FOUND', 'user ' .. name) end
  if disabled ~= '' then redis.call('HSET', A .. 'user:' .. name, 'disabled', disabled == '1' and '1' or '0') end
  if admin ~= '' then redis.call('HSET', A .. 'user:' .. name, 'service_admin', admin == '1' and '1' or '0') end
  return 'OK'
end

-- list_users P -> {name, service_admin, created_ms}*
local function list_users(keys, a)
  local A = access_prefix(a[1])
  local out = {}
  for _, name in ipairs(redis.call('SMEMBERS', A .. 'users')) do
    local u = redis.call('HMGET', A .. 'user:' .. name, 'service_admin', 'created_ms', 'disabled')
    out[#out + 1] = name
    out[#out + 1] = u[1] or '0'
    out[#out + 1] = u[2] or '0'
    out[#out + 1] = u[3] or '0'
  end
  return out
end

-- add_token P user id digest label lifetime_ms(0: forever) -> 'OK'
local function add_token(keys, a)
  local P, user, id, digest, label, lifetime = a[1], a[2], a[3], a[4], a[5], tonumber(a[6]) or 0
  local A = access_prefix(P)
  if redis.call('SISMEMBER', A .. 'users', user) == 0 then return refuse('NOT_FOUND', 'user ' .. user) end
  if redis.call('EXISTS', A .. 'token:' .. digest) == 1 or
      redis.call('HEXISTS', A .. 'token_ids', id) == 1 then
    return refuse('CONFLICT', 'token ' .. id .. ' exists')
  end
  local now = now_ms()
  store_token(A, user, id, digest, label, now, lifetime > 0 and now + lifetime or 0)
  return 'OK'
end

-- revoke_token P id -> the user it belonged to
local function revoke_token(keys, a)
  local user = drop_token(access_prefix(a[1]), a[2])
  if not user then return refuse('NOT_FOUND', 'token ' .. a[2]) end
  return user
end

-- list_tokens P user -> {id, label, created_ms, expires_ms}*
local function list_tokens(keys, a)
  local A = access_prefix(a[1])
  if redis.call('SISMEMBER', A .. 'users', a[2]) == 0 then return refuse('NOT_FOUND', 'user ' .. a[2]) end
  local out = {}
  local flat = redis.call('HGETALL', A .. 'tokens:' .. a[2])
  for i = 1, #flat, 2 do
    local t = redis.call('HMGET', A .. 'token:' .. flat[i + 1], 'label', 'created_ms', 'expires_ms')
    out[#out + 1] = flat[i]
    out[#out + 1] = t[1] or ''
    out[#out + 1] = t[2] or '0'
    out[#out + 1] = t[3] or '0'
  end
  return out
end

-- resolve_token P digest -> {} or {user, service_admin, project, role, ...};
-- UNAUTHORIZED for a token past its expiry or of a disabled user.
local function resolve_token(keys, a)
  local A = access_prefix(a[1])
  local t = redis.call('HMGET', A .. 'token:' .. a[2], 'user', 'expires_ms', 'id')
  local user = t[1]
  if not user then return {} end
  local expires = tonumber(t[2]) or 0
  if expires > 0 and now_ms() >= expires then
    return refuse('UNAUTHORIZED', 'token ' .. (t[3] or '') .. ' of ' .. user .. ' has expired: ask for a new one')
  end
  local u = redis.call('HMGET', A .. 'user:' .. user, 'service_admin', 'disabled')
  if u[2] == '1' then
    return refuse('UNAUTHORIZED', 'user ' .. user .. ' is disabled (a service admin can enable them again)')
  end
  local out = {user, u[1] or '0'}
  local roles = redis.call('HGETALL', A .. 'roles:' .. user)
  for i = 1, #roles do out[#out + 1] = roles[i] end
  return out
end

-- A project's limits from a create or update's arguments a[4..9]
-- (max_slots max_queued max_active max_gpus max_store_bytes max_file_bytes;
-- the byte limits left as they are when an earlier caller sends none).
local function put_limits(P, name, a)
  redis.call('HSET', P .. 'project:' .. name, 'max_slots', a[4], 'max_queued', a[5], 'max_active', a[6],
             'max_gpus', a[7] or '0')
  if a[9] then
    redis.call('HSET', P .. 'project:' .. name, 'max_store_bytes', a[8], 'max_file_bytes', a[9])
  end
end

-- create_project P name weight max_slots max_queued max_active max_gpus
--   max_store_bytes max_file_bytes -> 'OK'
local function create_project(keys, a)
  local P, name = a[1], a[2]
  access_prefix(P)
  if not plain_name(name) then return refuse('INVALID', 'project name ' .. tostring(name)) end
  if not ensure_project(P, name, a[3], now_ms()) then
    return refuse('CONFLICT', 'project ' .. name .. ' exists')
  end
  put_limits(P, name, a)
  return 'OK'
end

-- update_project P name weight max_slots max_queued max_active max_gpus
--   max_store_bytes max_file_bytes -> 'OK' (the
-- claims and submits that follow obey the new values at once)
local function update_project(keys, a)
  local P, name = a[1], a[2]
  local missing = missing_project(P, name)
  if missing then return missing end
  redis.call('HSET', P .. 'project:' .. name, 'weight', a[3])
  put_limits(P, name, a)
  return 'OK'
end

-- list_projects P -> {name, weight, created_ms, max_slots, max_queued, max_active,
--   slots (held now), queued (trials now), active (running sweeps now), max_gpus,
--   gpus (held now), max_store_bytes, max_file_bytes (its own: 0 the pool's default),
--   store_bytes, file_bytes (held now), and the byte limits in force (0: none)}*
local function list_projects(keys, a)
  local P = a[1]
  local out = {}
  for _, name in ipairs(redis.call('SMEMBERS', P .. 'projects')) do
    local p = redis.call('HMGET', P .. 'project:' .. name, 'weight', 'created_ms', 'max_slots',
                         'max_queued', 'max_active', 'max_gpus', 'max_store_bytes', 'max_file_bytes')
    local use = redis.call('HMGET', P .. 'project_use:' .. name, 'slots', 'queued_trials', 'gpus',
                           'store_bytes', 'file_bytes')
    out[#out + 1] = name
    out[#out + 1] = p[1] or '1'
    out[#out + 1] = p[2] or '0'
    out[#out + 1] = p[3] or '0'
    out[#out + 1] = p[4] or '0'
    out[#out + 1] = p[5] or '0'
    out[#out + 1] = use[1] or '0'
    out[#out + 1] = use[2] or '0'
    out[#out + 1] = tostring(redis.call('SCARD', P .. 'project_active:' .. name))
    out[#out + 1] = p[6] or '0'
    out[#out + 1] = use[3] or '0'
    out[#out + 1] = p[7] or '0'
    out[#out + 1] = p[8] or '0'
    out[#out + 1] = use[4] or '0'
    out[#out + 1] = use[5] or '0'
    out[#out + 1] = int(bytes_limit(P, name, 'store_bytes'))
    out[#out + 1] = int(bytes_limit(P, name, 'file_bytes'))
  end
  return out
end

-- set_member P project user role ('' removes) -> 'OK'
local function set_member(keys, a)
  local P, project, user, role = a[1], a[2], a[3], a[4]
  local A = access_prefix(P)
  local missing = missing_project(P, project)
  if missing then return missing end
  if redis.call('SISMEMBER', A .. 'users', user) == 0 then return refuse('NOT_FOUND', 'user ' .. user) end
  if role == '' then
    redis.call('HDEL', A .. 'members:' .. project, user)
    redis.call('HDEL', A .. 'roles:' .. user, project)
    return 'OK'
  end
  if not kRoles[role] then return refuse('INVALID', 'role ' .. role) end
  put_member(A, project, user, role)
  return 'OK'
end

-- list_members P project -> {user, role}*
local function list_members(keys, a)
  local P, project = a[1], a[2]
  local missing = missing_project(P, project)
  if missing then return missing end
  return redis.call('HGETALL', access_prefix(P) .. 'members:' .. project)
end

-- audit_record P project user action target detail -> entry id
local function audit_record(keys, a)
  local A = access_prefix(a[1])
  return redis.call('XADD', A .. 'audit:' .. a[2], 'MAXLEN', '~', tostring(kAuditMax), '*',
                    'time', int(now_ms()), 'user', a[3], 'action', a[4], 'target', a[5],
                    'detail', a[6])
end

-- audit_read P project after count -> XRANGE entries after `after` ('' from the first)
local function audit_read(keys, a)
  local A = access_prefix(a[1])
  local from = a[3] == '' and '-' or ('(' .. a[3])
  return redis.call('XRANGE', A .. 'audit:' .. a[2], from, '+', 'COUNT', tonumber(a[4]) or 100)
end

-- list_sweeps_in P offset limit project... -> sweep ids, newest first, of those projects
local function list_sweeps_in(keys, a)
  local P, offset, limit = a[1], tonumber(a[2]), tonumber(a[3])
  local all = {}
  for i = 4, #a do
    local page = redis.call('ZREVRANGE', P .. 'project_sweeps:' .. a[i], 0, offset + limit - 1,
                            'WITHSCORES')
    for j = 1, #page, 2 do all[#all + 1] = {tonumber(page[j + 1]), page[j]} end
  end
  table.sort(all, function(x, y) return x[1] > y[1] end)
  local out = {}
  for i = offset + 1, math.min(#all, offset + limit) do out[#out + 1] = all[i][2] end
  return out
end
