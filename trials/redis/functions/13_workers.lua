-- The worker registry: registration (one name, one host), removal, listing.
-- put_worker P name info_json ttl_ms -> 1
local function put_worker(keys, a)
  local P, name = a[1], a[2]
  local now = now_ms()
  local alive = P .. 'worker:' .. name .. ':alive'
  local joined = redis.call('EXISTS', alive) == 0
  local info = cjson.decode(a[3])
  if not joined then
    -- Another process of this name on another host: each would release the
    -- other's trials (its leases are not the ones it runs) forever.
    local held = redis.call('HGET', P .. 'workers', name)
    if held then
      local was = cjson.decode(held)
      if was.instance and info.instance and was.instance ~= info.instance and
         (was.host or '') ~= (info.host or '') then
        return refuse('CONFLICT', 'a worker named ' .. name .. ' already runs on host ' ..
                      tostring(was.host) .. ' (this one is on ' .. tostring(info.host) ..
                      '): give each worker a name of its own (--name)')
      end
    end
  end
  -- A draining worker takes no new gang share: its offer goes.
  if info.draining then redis.call('HDEL', P .. 'offers', name) end
  redis.call('HSET', P .. 'workers', name, a[3])
  redis.call('HSET', P .. 'worker_hb', name, int(now))
  redis.call('SET', alive, int(now), 'PX', a[4])
  if joined then emit(P, 'worker.joined', '', '', json_obj({worker = name})) end
  return 1
end

-- remove_worker P name instance -> 1 | 0
-- A worker that exits deregisters at once (instead of living out its TTL):
-- no gang share is placed on it meanwhile. Only the process that registered
-- the name (its instance) removes it.
local function remove_worker(keys, a)
  local P, name, instance = a[1], a[2], a[3]
  local held = redis.call('HGET', P .. 'workers', name)
  if not held then return 0 end
  local was = cjson.decode(held)
  if was.instance and was.instance ~= instance then return 0 end
  redis.call('DEL', P .. 'worker:' .. name .. ':alive')
  redis.call('HDEL', P .. 'workers', name)
  redis.call('HDEL', P .. 'worker_hb', name)
  redis.call('HDEL', P .. 'offers', name)
  redis.call('DEL', P .. 'ranks:' .. name, P .. 'ranks_sent:' .. name)
  emit(P, 'worker.left', '', '', json_obj({worker = name}))
  return 1
end

-- list_workers P -> {name, info_json, last_heartbeat_ms, ...} of live workers;
-- workers whose TTL ran out are dropped (worker.lost).
local function list_workers(keys, a)
  local P = a[1]
  local out = {}
  for _, name in ipairs(redis.call('HKEYS', P .. 'workers')) do
    if redis.call('EXISTS', P .. 'worker:' .. name .. ':alive') == 1 then
      table.insert(out, name)
      table.insert(out, redis.call('HGET', P .. 'workers', name))
      table.insert(out, redis.call('HGET', P .. 'worker_hb', name) or '0')
    else
      redis.call('HDEL', P .. 'workers', name)
      redis.call('HDEL', P .. 'worker_hb', name)
      emit(P, 'worker.lost', '', '', json_obj({worker = name}))
    end
  end
  return out
end

