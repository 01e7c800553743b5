-- Placement: whether a trial fits a worker's offer (trials/placement.hpp is
-- the same rule in C++), and reservations of big trials.
local function claim_row(t)
  local out = {}
  for i, f in ipairs(kClaimFields) do out[i] = t[f] or '' end
  return out
end

-- The wake stream's newest id: a worker that found too little waits for
-- entries after it (wait_for_work), so nothing queued after this call is missed.
local function wake_cursor(P)
  local last = redis.call('XREVRANGE', P .. 'wake', '+', '-', 'COUNT', 1)
  if #last == 0 then return '0-0' end
  return last[1][1]
end

-- Placement (trials/placement.hpp has the rules; these mirror fits_now/take).
-- `o` is the claiming worker's offer (to_json(Offer)): what it has free now
-- (slots, gpus, cpus, memory_gb; cpus/memory < 0: not counted) and what it is
-- (total_slots, all_gpus, total_cpus, total_memory_gb, torch, cuda, labels).
-- `need` is the sweep's request (to_json(ResourceRequest), field 'needs' of
-- the sweep; sweeps stored before requests existed have none: {}).
local function gpu_ok(need, g)
  if need.gpu_mb and (g.mb or 0) < need.gpu_mb then return false end
  if need.gpu_model and not string.find(g.model or '', need.gpu_model, 1, true) then
    return false
  end
  return true
end

local function count_gpus(need, list)
  local n = 0
  for _, g in ipairs(list) do if gpu_ok(need, g) then n = n + 1 end end
  return n
end

local function labels_ok(need, labels)
  for _, want in ipairs(need.labels or {}) do
    local eq = string.find(want, '=', 1, true)
    if eq then
      if labels[string.sub(want, 1, eq - 1)] ~= string.sub(want, eq + 1) then return false end
    elseif labels[want] == nil then
      return false
    end
  end
  return true
end

local function kinds_ok(need, o)
  if need.torch and not o.torch then return false end
  if need.torch and (need.gpus or 0) > 0 and not o.cuda then return false end
  return labels_ok(need, o.labels or {})
end

local function amounts_ok(need, slots, free_slots, gpus, cpus, mem)
  if slots > free_slots then return false end
  if (need.gpus or 0) > 0 and count_gpus(need, gpus) < slots then return false end
  if need.cpus and cpus >= 0 and need.cpus > cpus + 1e-9 then return false end
  if need.memory_gb and mem >= 0 and need.memory_gb > mem + 1e-9 then return false end
  return true
end

local function fits_now(need, slots, o)
  return kinds_ok(need, o) and amounts_ok(need, slots, o.slots, o.gpus, o.cpus, o.memory_gb)
end

-- Could it fit once the worker is idle? (Then a worker short of room now may reserve it.)
local function fits_idle(need, slots, o)
  return kinds_ok(need, o) and
           amounts_ok(need, slots, o.total_slots, o.all_gpus, o.total_cpus, o.total_memory_gb)
end

local function take(need, slots, o)
  local cpu_free = o.slots - #o.gpus
  o.slots = o.slots - slots
  if (need.gpus or 0) == 0 then  -- slots without a GPU first, then the last GPU slots
    for _ = 1, math.min(#o.gpus, math.max(0, slots - cpu_free)) do table.remove(o.gpus) end
  else
    local left, kept = slots, {}
    for _, g in ipairs(o.gpus) do
      if left > 0 and gpu_ok(need, g) then left = left - 1 else kept[#kept + 1] = g end
    end
    o.gpus = kept
  end
  if need.cpus and o.cpus >= 0 then o.cpus = o.cpus - need.cpus end
  if need.memory_gb and o.memory_gb >= 0 then o.memory_gb = o.memory_gb - need.memory_gb end
end

-- The offer of a caller that sends only a free-slot count (earlier versions, tests).
local function parse_offer(text)
  if string.sub(text, 1, 1) == '{' then
    local o = cjson.decode(text)
    o.gpus, o.all_gpus, o.labels = o.gpus or {}, o.all_gpus or {}, o.labels or {}
    return o
  end
  local n = tonumber(text)
  return {slots = n, gpus = {}, cpus = -1, memory_gb = -1, total_slots = n, all_gpus = {},
          total_cpus = -1, total_memory_gb = -1, torch = true, cuda = false, labels = {}}
end

local function needs_of(P, sid, cache)
  local need = cache[sid]
  if need then return need end
  local text = redis.call('HGET', P .. 'sweep:' .. sid, 'needs')
  need = (text and text ~= '') and cjson.decode(text) or {}
  cache[sid] = need
  return need
end

-- Reservations keep a wide trial from starving behind a stream of narrow
-- ones: a worker that could run the head of a sweep's queue once idle, but is
-- short of room now, reserves it (P..'reserve:'<tid> -> worker, and
-- P..'reserving:'<worker> -> tid, both expiring after reserve_ms unless
-- renewed) and claims nothing else until that trial fits, or is gone, or
-- another worker took it. At most one worker reserves a trial. Field
-- 'skipped' of a trial counts the claims that passed it over for want of room.
-- A trial is reserved once claims have passed it over kReserveAfter times for
-- want of room (until then smaller trials behind it may fill the gap).
local kReserveAfter = 3
local function reserve_ms(lease_ms) return math.max(2000, lease_ms) end

