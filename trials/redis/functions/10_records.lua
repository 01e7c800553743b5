-- Artifacts and records kept with trials and sweeps; a worker's leases.
-- put_artifact P tid attempt worker name bytes -> 1
-- Fenced like complete: only the attempt that holds the lease writes bytes, so
-- a stale attempt (paused past its lease) can never overwrite what the
-- accepted attempt stored, and a finished trial's artifacts never change.
local function put_artifact(keys, a)
  local P = a[1]
  local t, err = fenced(P, a[2], a[3], a[4])
  if not t then return err end
  return keep_named(P, 'artifact', t.id, a[5], a[6], t.sweep,
                    'artifact ' .. a[5] .. ' of trial ' .. t.id) or 1
end

-- put_record P tid name bytes -> 1
-- The scheduler's own records about a trial (the ensemble record and manifest
-- stored with the first member). Names are the caller's reserved ones; a
-- record never replaces an artifact a worker stored.
local function put_record(keys, a)
  local P, tid, name = a[1], a[2], a[3]
  local sid = redis.call('HGET', P .. 'trial:' .. tid, 'sweep')
  if not sid then return refuse('NOT_FOUND', 'trial ' .. tid) end
  keep_named(P, 'artifact', tid, name, a[4], sid)
  return 1
end

-- put_sweep_record P sid name bytes -> 1
-- A record of the sweep as a whole (the ensemble record and manifest).
local function put_sweep_record(keys, a)
  local P, sid, name = a[1], a[2], a[3]
  if redis.call('EXISTS', P .. 'sweep:' .. sid) == 0 then return refuse('NOT_FOUND', 'sweep ' .. sid) end
  keep_named(P, 'sweep_artifact', sid, name, a[4], sid)
  return 1
end

-- artifact_room P tid attempt worker name -> {store bytes, file bytes} that
-- artifact `name` of the trial may have (-1: no limit): its project's room
-- plus what the artifact holds now (a write replaces it). Fenced like
-- put_artifact: a worker asks before it streams gigabytes to the artifact
-- folder, so a checkpoint past the project's max_file_bytes stops at the
-- limit instead of filling the disk (put_artifact still decides).
local function artifact_room(keys, a)
  local P = a[1]
  local t, err = fenced(P, a[2], a[3], a[4])
  if not t then return err end
  local project = sweep_project_gpu(P, t.sweep)
  local held = {held_at(P, 'artifact', t.id, a[5])}
  local out = {}
  for i, field in ipairs({'store_bytes', 'file_bytes'}) do
    local room = bytes_room(P, project, field)
    out[i] = room and int(math.max(0, room + held[i])) or '-1'
  end
  return out
end

-- worker_leases P worker -> {tid, attempt, ...} of the trials running under that worker
local function worker_leases(keys, a)
  local P, worker = a[1], a[2]
  local out = {}
  for _, tid in ipairs(redis.call('ZRANGE', P .. 'leases', 0, -1)) do
    local ts = redis.call('HMGET', P .. 'trial:' .. tid, 'state', 'worker', 'attempt')
    if ts[1] == TrialState.running and ts[2] == worker then
      table.insert(out, tid)
      table.insert(out, ts[3])
    end
  end
  return out
end

