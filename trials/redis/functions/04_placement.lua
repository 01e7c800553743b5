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
-- (free: the free slots' indices, ascending; slots: how many; devs: per
-- device, the share of it (in thousandths) and the MB of its memory not yet
-- promised; cpus, memory_gb: < 0 not counted) and what it is (total_slots,
-- all_gpus: its devices, GPUs or MIG instances; total_cpus, total_memory_gb,
-- torch, cuda, labels). parse_offer adds gpus: the devices wholly free.
-- An offer without devs (an earlier version's worker) has slot i own device
-- i: the claim then places GPU trials on the slots of their devices and its
-- rows name slots only.
-- `need` is the sweep's request (to_json(ResourceRequest), field 'needs' of
-- the sweep; sweeps stored before requests existed have none: {}): gpus is a
-- count of whole devices (>= 1) or a share of one (0 < gpus < 1).
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

local kWhole = 1000  -- a device's share, in thousandths

-- A share of one device (resources.gpus below 1), on an offer that counts shares.
local function is_shared(need, o)
  local g = need.gpus or 0
  return g > 0 and g < 1 and not o.legacy
end

local function wants_devices(need) return (need.gpus or 0) > 0 end

-- What a shared request takes of device g: its share and its memory (MB):
-- gpu_mb when given, else its share of the device's memory.
local function share_of(need) return math.floor((need.gpus or 0) * kWhole + 0.5) end
local function mb_of(need, g)
  if need.gpu_mb then return math.ceil(need.gpu_mb) end  -- as trials::gpu_take books it
  return math.floor((g.mb or 0) * share_of(need) / kWhole)
end

local function whole_free(o, i)
  local d = o.devs[i]
  return d ~= nil and d.share >= kWhole and d.mb >= (o.all_gpus[i].mb or 0)
end

local function shared_fits(need, o, i)
  local g, d = o.all_gpus[i], o.devs[i]
  return d ~= nil and gpu_ok(need, g) and d.share >= share_of(need) and d.mb >= mb_of(need, g)
end

-- The devices wholly free, in order (offer field gpus).
local function free_devices(o)
  local out = {}
  for i = 1, #o.all_gpus do if whole_free(o, i) then out[#out + 1] = o.all_gpus[i] end end
  return out
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

-- A worker bound to one project (hpo-worker --project; its trials run as
-- itself) takes that project's trials only: need.project is the sweep's.
local function project_ok(need, o)
  return o.project == nil or o.project == '' or need.project == nil or o.project == need.project
end

local function kinds_ok(need, o)
  if not project_ok(need, o) then return false end
  if need.torch and not o.torch then return false end
  if need.torch and wants_devices(need) and not o.cuda then return false end
  return labels_ok(need, o.labels or {})
end

local function amounts_ok(need, slots, free_slots, cpus, mem)
  if slots > free_slots then return false end
  if need.cpus and cpus >= 0 and need.cpus > cpus + 1e-9 then return false end
  if need.memory_gb and mem >= 0 and need.memory_gb > mem + 1e-9 then return false end
  return true
end

-- Could it fit once the worker is idle? (Then a worker short of room now may reserve it.)
local function fits_idle(need, slots, o)
  if not (kinds_ok(need, o) and
            amounts_ok(need, slots, o.total_slots, o.total_cpus, o.total_memory_gb)) then
    return false
  end
  if not wants_devices(need) then return true end
  if is_shared(need, o) then
    for _, g in ipairs(o.all_gpus) do
      if gpu_ok(need, g) and mb_of(need, g) <= (g.mb or 0) then return true end
    end
    return false
  end
  local n = #o.all_gpus
  if o.legacy then n = math.min(n, o.total_slots or 0) end
  local k = 0
  for i = 1, n do if gpu_ok(need, o.all_gpus[i]) then k = k + 1 end end
  return k >= slots
end

-- The devices an attempt takes (indices into all_gpus, from 0): a whole
-- request the lowest wholly free devices that match; a shared one the
-- matching device with room for it that is shared the most already (so
-- whole devices stay free for whole requests). Fewer than it needs when
-- they are not free.
local function pick_devices(need, slots, o)
  local picked = {}
  if not wants_devices(need) then return picked end
  if is_shared(need, o) then
    local best
    for i = 1, #o.all_gpus do
      if shared_fits(need, o, i) and
          (not best or o.devs[i].share < o.devs[best].share or
             (o.devs[i].share == o.devs[best].share and o.devs[i].mb < o.devs[best].mb)) then
        best = i
      end
    end
    if best then picked[1] = best - 1 end
    return picked
  end
  for i = 1, #o.all_gpus do
    if #picked < slots and whole_free(o, i) and gpu_ok(need, o.all_gpus[i]) then
      picked[#picked + 1] = i - 1
    end
  end
  return picked
end

-- Which free slots an attempt takes, `devices` being those it takes: for each
-- whole device, the slot of the same index when it is free (on an offer
-- without devs, that slot owns the device), then the lowest free slots; any
-- other request the free slots past the devices first, then the highest free
-- ones. Ascending; fewer than `slots` when they are not free.
local function pick_slots(need, slots, o, devices)
  local picked, taken, g = {}, {}, #o.all_gpus
  local free = {}
  for _, i in ipairs(o.free) do free[i] = true end
  local function add(i)
    if #picked < slots and free[i] and not taken[i] then
      picked[#picked + 1], taken[i] = i, true
    end
  end
  if wants_devices(need) and not is_shared(need, o) then
    for _, d in ipairs(devices) do add(d) end
    if not o.legacy then for _, i in ipairs(o.free) do add(i) end end
  else
    for _, i in ipairs(o.free) do if i >= g then add(i) end end
    for j = #o.free, 1, -1 do add(o.free[j]) end
  end
  table.sort(picked)
  return picked
end

-- What the attempt would take now: its slots and devices, nil when it does
-- not fit (its kind, its amounts, free slots and devices to pick).
local function placement(need, slots, o)
  if not (kinds_ok(need, o) and amounts_ok(need, slots, o.slots, o.cpus, o.memory_gb)) then
    return nil
  end
  local devices = pick_devices(need, slots, o)
  if wants_devices(need) and #devices < (is_shared(need, o) and 1 or slots) then return nil end
  local picked = pick_slots(need, slots, o, devices)
  if #picked < slots then return nil end
  return picked, devices
end

local function fits_now(need, slots, o)
  return placement(need, slots, o) ~= nil
end

-- Books what `picked` slots and `devices` take out of the offer (with
-- `ranks` times the request's cores and memory).
local function book(need, o, picked, devices, ranks)
  for _ = 1, ranks do
    if need.cpus and o.cpus >= 0 then o.cpus = o.cpus - need.cpus end
    if need.memory_gb and o.memory_gb >= 0 then o.memory_gb = o.memory_gb - need.memory_gb end
  end
  local taken, left = {}, {}
  for _, i in ipairs(picked) do taken[i] = true end
  for _, i in ipairs(o.free) do if not taken[i] then left[#left + 1] = i end end
  if o.legacy then  -- its slots own the devices of their index, whatever the request
    devices = {}
    for _, i in ipairs(picked) do if i < #o.all_gpus then devices[#devices + 1] = i end end
  end
  for _, i in ipairs(devices) do
    local d, g = o.devs[i + 1], o.all_gpus[i + 1]
    if d then
      if is_shared(need, o) then
        d.share, d.mb = d.share - share_of(need), d.mb - mb_of(need, g)
      else
        d.share, d.mb = 0, 0
      end
    end
  end
  o.free, o.slots, o.gpus = left, #left, free_devices(o)
end

-- Takes what an attempt that fits uses out of the offer; returns the slots it
-- takes (their indices, ascending: what the claim tells the worker) with
-- field devs: the devices (nil on an offer without devs: its slots own them).
local function take(need, slots, o)
  local picked, devices = placement(need, slots, o)
  if not picked then return {} end  -- callers ask only for what fits
  book(need, o, picked, devices, 1)
  if not o.legacy then picked.devs = devices end
  return picked
end

-- A gang share handed out again (its claim's reply was lost): when its slots
-- `list` are all free in the offer, the worker never booked them, so they are
-- taken out of the offer again (with its devices `devices`, one rank's cores
-- and memory each); otherwise the worker holds them already and the offer
-- stays as it is.
local function take_these(need, list, devices, o)
  local free = {}
  for _, i in ipairs(o.free) do free[i] = true end
  for _, i in ipairs(list) do
    if not free[i] then return end
  end
  if not wants_devices(need) then devices = {} end
  book(need, o, list, devices or {}, #list)
end

-- Slot indices as a claim row carries them: '0,2', then the devices after a
-- bar when the offer counts them: '0,2|1,3'.
local function slot_list(picked, devices)
  local text = table.concat(picked, ',')
  devices = devices or picked.devs
  if devices then text = text .. '|' .. table.concat(devices, ',') end
  return text
end

-- The free slots of an offer that does not name them (an earlier version's,
-- one written by hand): each free GPU is the first slot of all_gpus with that
-- device, and the free CPU slots the first ones after the GPU slots.
local function free_slots_of(o)
  local g = #o.all_gpus
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

-- An earlier version's offer, without devs: slot i owns device i (its
-- devices past its slots are none of its own), wholly free when the slot is.
local function legacy_devices(o)
  if (o.total_slots or 0) > 0 then
    while #o.all_gpus > o.total_slots do table.remove(o.all_gpus) end
  end
  if type(o.free) ~= 'table' then o.free = free_slots_of(o) end
  local free = {}
  for _, i in ipairs(o.free) do free[i] = true end
  o.devs, o.legacy = {}, true
  for i, g in ipairs(o.all_gpus) do
    o.devs[i] = free[i - 1] and {share = kWhole, mb = g.mb or 0} or {share = 0, mb = 0}
  end
end

-- An offer as JSON, or a free-slot count (the slot-count claim: slots 0 .. n-1,
-- no GPUs).
local function parse_offer(text)
  if string.sub(text, 1, 1) == '{' then
    local o = cjson.decode(text)
    o.gpus, o.all_gpus, o.labels = o.gpus or {}, o.all_gpus or {}, o.labels or {}
    if type(o.devs) ~= 'table' then
      legacy_devices(o)
    elseif type(o.free) ~= 'table' then
      o.free = free_slots_of(o)
    end
    o.gpus = free_devices(o)
    return o
  end
  local n = tonumber(text)
  local free = {}
  for i = 1, n do free[i] = i - 1 end
  return {slots = n, free = free, gpus = {}, devs = {}, cpus = -1, memory_gb = -1, total_slots = n,
          all_gpus = {}, total_cpus = -1, total_memory_gb = -1, torch = true, cuda = false,
          labels = {}}
end

local function needs_of(P, sid, cache)
  local need = cache[sid]
  if need then return need end
  local v = redis.call('HMGET', P .. 'sweep:' .. sid, 'needs', 'project')
  local text = v[1]
  need = (text and text ~= '') and cjson.decode(text) or {}
  need.project = v[2] or 'default'  -- the sweep's, whatever the stored request says
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

