-- Bytes per project: what each project keeps in Redis and in the artifact
-- folder, counted where it is written and bounded by the project's limits.
--
--   P..'project_use:'<name>  fields store_bytes (the values hpo keeps in Redis for it: specs,
--                            params, reports, results, logs, artifacts kept inline, records)
--                            and file_bytes (the sizes of its artifact files in the artifact
--                            folder, as their references say)
--   P..'sweep:'<sid>         the same two fields, what that sweep holds (delete_sweep gives
--                            them back), and bytes_counted '1' once they count everything
--                            (sweeps made before version 9 are measured once by
--                            access_bootstrap)
--   P..'project:'<name>      max_store_bytes, max_file_bytes: its limits (0 or absent: the
--                            scheduler's defaults, deployment fields project_store_bytes and
--                            project_file_bytes; there 0 is none)
--
-- Counted are the values' bytes, not Redis's own overhead per key, nor the
-- attempt records (~150 bytes an attempt) and error texts (the worker's,
-- a few KiB), both bounded by max_attempts. A write a
-- tenant shapes (a submit, an import, a report, an artifact, a log) is
-- refused or left out past the limit; what only follows from work already
-- admitted (a trial's params, its result, the scheduler's records) is
-- counted and never refused, so a full project still finishes what runs.
local DEFAULT_STORE_BYTES = 1073741824    -- 1 GiB
local DEFAULT_FILE_BYTES = 107374182400   -- 100 GiB

-- The project's limit on `field` (store_bytes, file_bytes); 0: none.
local function bytes_limit(P, project, field)
  local own = tonumber(redis.call('HGET', P .. 'project:' .. project, 'max_' .. field) or '') or 0
  if own > 0 then return own end
  local pool = tonumber(redis.call('HGET', P .. 'deployment', 'project_' .. field) or '')
  if pool then return pool end
  return field == 'store_bytes' and DEFAULT_STORE_BYTES or DEFAULT_FILE_BYTES
end

-- How many more bytes of `field` `project` may hold (nil: no limit), the
-- limit, and what it holds.
local function bytes_room(P, project, field)
  local limit = bytes_limit(P, project, field)
  local used = tonumber(redis.call('HGET', P .. 'project_use:' .. project, field) or '0') or 0
  if limit <= 0 then return nil, 0, used end
  return limit - used, limit, used
end

-- `by` more bytes of `field` (store_bytes, file_bytes) for `what` (a submit,
-- an artifact) past `project`'s limit: the refusal naming the limit, or nil.
local function over_bytes(P, project, field, by, what)
  local room, limit, used = bytes_room(P, project, field)
  if not room or by <= room then return nil end
  local where = field == 'store_bytes' and 'in the store' or 'in artifact files'
  return refuse('QUOTA', what .. ' (' .. int(by) .. ' bytes) would pass project ' .. project ..
                '\'s limit max_' .. field .. ' ' .. int(limit) .. ': it holds ' .. int(used) ..
                ' bytes ' .. where .. '; delete sweeps it no longer needs, or ask an admin to ' ..
                'raise the limit')
end

-- Adds `store` and `file` bytes (either may be negative) to sweep `sid` and
-- its project. With `what` (a description of the write) a growth past the
-- project's limit is refused instead (nothing changes); returns nil or that
-- refusal.
local function charge(P, sid, store, file, what)
  if store == 0 and file == 0 then return nil end
  local project = sweep_project_gpu(P, sid)
  local growth = {store_bytes = store, file_bytes = file}
  if what then
    for field, by in pairs(growth) do
      local over = by > 0 and over_bytes(P, project, field, by, what)
      if over then return over end
    end
  end
  local ukey, skey = P .. 'project_use:' .. project, P .. 'sweep:' .. sid
  for field, by in pairs(growth) do
    if by ~= 0 then
      if redis.call('HINCRBY', ukey, field, int(by)) < 0 then redis.call('HSET', ukey, field, '0') end
      if redis.call('EXISTS', skey) == 1 and redis.call('HINCRBY', skey, field, int(by)) < 0 then
        redis.call('HSET', skey, field, '0')
      end
    end
  end
  return nil
end

local kFileRefHeader = 'hpo-artifact-file/1\n'

-- The bytes of artifact files a Redis value stands for (a reference's size,
-- trials/artifact_dir.hpp), 0 for bytes kept in Redis.
local function file_size_of(value)
  if not value or string.sub(value, 1, #kFileRefHeader) ~= kFileRefHeader then return 0 end
  local ok, ref = pcall(cjson.decode, string.sub(value, #kFileRefHeader + 1))
  if not ok or type(ref) ~= 'table' then return 0 end
  return math.max(0, tonumber(ref.size) or 0)
end

-- What artifact `name` of `owner` holds ('artifact': a trial's,
-- 'sweep_artifact': a sweep's record): store bytes, and the file bytes its
-- reference stands for. Kept beside it (P..kind..'_bytes:'<owner>, name ->
-- "store file"), so that a write never reads the value it replaces (an
-- artifact kept inline may be hundreds of MiB); one written before version 9
-- is read once.
local function held_at(P, kind, owner, name)
  local rec = redis.call('HGET', P .. kind .. '_bytes:' .. owner, name)
  if rec then
    local s, f = string.match(rec, '^(%d+) (%d+)$')
    return tonumber(s) or 0, tonumber(f) or 0
  end
  local old = redis.call('GET', P .. kind .. ':' .. owner .. ':' .. name)
  if not old then return 0, 0 end
  return #old, file_size_of(old)
end

-- Notes what artifact `name` of `owner` now holds (see held_at).
local function note_held(P, kind, owner, name, value)
  redis.call('HSET', P .. kind .. '_bytes:' .. owner, name,
             int(#value) .. ' ' .. int(file_size_of(value)))
end

-- A value's length (a missing one: 0).
local function len(v) return type(v) == 'string' and #v or 0 end

-- Sweep `sid`'s bytes measured from what it holds, for a sweep made before
-- they were counted (version 9): its fields, its trials' params, metrics
-- and reports, its artifacts and records. Written into the
-- sweep (store_bytes, file_bytes, bytes_counted); its project's totals are
-- the caller's (access_bootstrap adds up every sweep's).
local function measure_sweep(P, sid)
  local skey = P .. 'sweep:' .. sid
  local f = redis.call('HMGET', skey, 'name', 'spec', 'needs', 'constraints')
  local store, file = len(f[1]) + len(f[2]) + len(f[3]) + len(f[4]), 0
  local function named(kind, owner)
    for _, name in ipairs(redis.call('SMEMBERS', P .. kind .. 's:' .. owner)) do
      local s, f = held_at(P, kind, owner, name)
      store, file = store + s, file + f
    end
  end
  for _, kind in ipairs({Role.trial, Role.member}) do
    for _, tid in ipairs(redis.call('LRANGE', P .. 'trials:' .. sid .. ':' .. kind, 0, -1)) do
      local t = redis.call('HMGET', P .. 'trial:' .. tid, 'params', 'extra', 'metrics',
                           'report_bytes')
      store = store + len(t[1]) + len(t[2]) + len(t[3])
      if t[4] then
        store = store + (tonumber(t[4]) or 0)
      else
        for _, r in ipairs(redis.call('LRANGE', P .. 'reports:' .. tid, 0, -1)) do store = store + #r end
      end
      named('artifact', tid)
    end
  end
  named('sweep_artifact', sid)
  redis.call('HSET', skey, 'store_bytes', int(store), 'file_bytes', int(file), 'bytes_counted', '1')
end
