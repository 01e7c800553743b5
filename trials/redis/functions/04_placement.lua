-- Placement: whether a trial fits a worker's offer and which of its slots it
-- takes (decided here only: the claim names the slots and the worker books
-- them), and reservations of big trials. trials/placement.hpp states the rules
-- and explains, in words, a request that can never fit.
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

-- Placement (trials/placement.hpp has the rules).
-- `o` is the claiming worker's offer (to_json(Offer)): what it has free now
-- (free: the free slots' indices, ascending; slots: how many; gpus: the free
-- GPU slots' devices; cpus, memory_gb: < 0 not counted) and what it is
-- (total_slots, all_gpus: slot i < #all_gpus owns all_gpus[i + 1];
-- total_cpus, total_memory_gb, torch, cuda, labels).
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

-- Could it fit once the worker is idle? (Then a worker short of room now may reserve it.)
local function fits_idle(need, slots, o)
  return kinds_ok(need, o) and
           amounts_ok(need, slots, o.total_slots, o.all_gpus, o.total_cpus, o.total_memory_gb)
end

-- How many of the worker's slots own a GPU (slots 0 .. n-1).
local function gpu_slot_count(o)
  local g = #o.all_gpus
  if (o.total_slots or 0) > 0 then g = math.min(g, o.total_slots) end
  return g
end

-- Which free slots an attempt takes: a GPU request the lowest free slots
-- whose GPU matches it; any other the free slots without a GPU first, then
-- the highest free GPU slots. Ascending; fewer than `slots` when they are not free.
local function pick_slots(need, slots, o)
  local g, picked = gpu_slot_count(o), {}
  if (need.gpus or 0) > 0 then
    for _, i in ipairs(o.free) do
      if #picked < slots and i < g and gpu_ok(need, o.all_gpus[i + 1]) then picked[#picked + 1] = i end
    end
  else
    for _, i in ipairs(o.free) do
      if #picked < slots and i >= g then picked[#picked + 1] = i end
    end
    for j = #o.free, 1, -1 do
      if #picked < slots and o.free[j] < g then picked[#picked + 1] = o.free[j] end
    end
    table.sort(picked)
  end
  return picked, g
end

-- Does it fit the offer now: its kind, its amounts, and `slots` free slots to
-- pick (an offer whose counts and free list disagree leases nothing).
local function fits_now(need, slots, o)
  return kinds_ok(need, o) and amounts_ok(need, slots, o.slots, o.gpus, o.cpus, o.memory_gb) and
           #(pick_slots(need, slots, o)) >= slots
end

-- Takes what an attempt that fits uses out of the offer; returns the slots it
-- takes (their indices, ascending: what the claim tells the worker).
local function take(need, slots, o)
  if need.cpus and o.cpus >= 0 then o.cpus = o.cpus - need.cpus end
  if need.memory_gb and o.memory_gb >= 0 then o.memory_gb = o.memory_gb - need.memory_gb end
  local picked, g = pick_slots(need, slots, o)
  local taken, left, gpus = {}, {}, {}
  for _, i in ipairs(picked) do taken[i] = true end
  for _, i in ipairs(o.free) do
    if not taken[i] then
      left[#left + 1] = i
      if i < g then gpus[#gpus + 1] = o.all_gpus[i + 1] end
    end
  end
  o.free, o.gpus, o.slots = left, gpus, #left
  return picked
end

-- A gang share handed out again (its claim's reply was lost): when its slots
-- `list` are all free in the offer, the worker never booked them, so they are
-- taken out of the offer again (with one rank's cores and memory each);
-- otherwise the worker holds them already and the offer stays as it is.
local function take_these(need, list, o)
  local free = {}
  for _, i in ipairs(o.free) do free[i] = true end
  for _, i in ipairs(list) do
    if not free[i] then return end
  end
  for _, i in ipairs(list) do
    if need.cpus and o.cpus >= 0 then o.cpus = o.cpus - need.cpus end
    if need.memory_gb and o.memory_gb >= 0 then o.memory_gb = o.memory_gb - need.memory_gb end
    free[i] = nil
  end
  local g, left, gpus = gpu_slot_count(o), {}, {}
  for _, i in ipairs(o.free) do
    if free[i] then
      left[#left + 1] = i
      if i < g then gpus[#gpus + 1] = o.all_gpus[i + 1] end
    end
  end
  o.free, o.gpus, o.slots = left, gpus, #left
end

-- Slot indices as a claim row carries them: '0,2'.
local function slot_list(picked)
  return table.concat(picked, ',')
end

-- The free slots of an offer that does not name them (an earlier version's,
-- one written by hand): each free GPU is the first slot of all_gpus with that
-- device, and the free CPU slots the first ones after the GPU slots.
local function free_slots_of(o)
  local g = gpu_slot_count(o)
  local free, used = {}, {}
  for _, d in ipairs(o.gpus) do
    for i = 1, g do
      local a = o.all_gpus[i]
      if not used[i] and a.model == d.model and a.mb == d.mb then
        used[i] = true
        free[#free + 1] = i - 1
        break
      end
    end
  end
  for i = g, g + (o.slots or 0) - #free - 1 do free[#free + 1] = i end
  table.sort(free)
  return free
end

-- An offer as JSON, or a free-slot count (the slot-count claim: slots 0 .. n-1,
-- no GPUs).
local function parse_offer(text)
  if string.sub(text, 1, 1) == '{' then
    local o = cjson.decode(text)
    o.gpus, o.all_gpus, o.labels = o.gpus or {}, o.all_gpus or {}, o.labels or {}
    if type(o.free) ~= 'table' then o.free = free_slots_of(o) end
    return o
  end
  local n = tonumber(text)
  local free = {}
  for i = 1, n do free[i] = i - 1 end
  return {slots = n, free = free, gpus = {}, cpus = -1, memory_gb = -1, total_slots = n,
          all_gpus = {}, total_cpus = -1, total_memory_gb = -1, torch = true, cuda = false,
          labels = {}}
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

