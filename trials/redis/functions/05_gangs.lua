-- Gangs: a data-parallel trial (need.ranks = k > 1) whose ranks span workers
-- (trials/placement.hpp has the rules). Every claim records what the claiming
-- worker still has free after it (P..'offers', worker -> offer JSON), so a
-- claim can place a gang on the claimer (rank 0, the leader, which holds the
-- trial's lease) and on other live workers' free slots at once, or not at all.
-- The followers' shares wait in P..'ranks:'<worker> (JSON {trial, sweep,
-- attempt, number, kind, params, extra, first, count, world, leader}) and are handed out by the
-- follower's next claim, ahead of anything else, from the slots (and devices) the record
-- promised (the worker's free slots only grow between its claims; its claims
-- alone take them). Each follower renews a rank lease
-- (P..'rank_lease:'<tid>':'<attempt>':'<worker>, rank_heartbeat) fenced by the
-- trial's attempt; the leader's heartbeat fails the attempt as a whole once a
-- follower's rank lease has lapsed, and the ranks of a stale attempt stop.
-- Rank 0 publishes its c10d TCPStore address in
-- P..'rendezvous:'<tid>':'<attempt>, the others join it.

-- What one rank asks: one slot (a GPU one for a GPU trial), its share of the cores and memory.
local function rank_need(need)
  local k = need.ranks or 1
  return {slots = 1, gpus = ((need.gpus or 0) > 0) and 1 or 0, gpu_mb = need.gpu_mb,
          gpu_model = need.gpu_model, cpus = need.cpus and need.cpus / k,
          memory_gb = need.memory_gb and need.memory_gb / k, torch = need.torch,
          labels = need.labels, project = need.project}
end

local function is_gang(need) return (need.ranks or 1) > 1 end

-- How many ranks of the request fit offer `o`, now or once idle.
local function ranks_fitting(rn, o, idle)
  if not kinds_ok(rn, o) then return 0 end
  local slots, gpus, cpus, mem = o.slots, o.gpus, o.cpus, o.memory_gb
  if idle then slots, gpus, cpus, mem = o.total_slots, o.all_gpus, o.total_cpus, o.total_memory_gb end
  local n = slots or 0
  if (rn.gpus or 0) > 0 then n = math.min(n, count_gpus(rn, gpus or {})) end
  if rn.cpus and (cpus or -1) >= 0 then n = math.min(n, math.floor(cpus / rn.cpus + 1e-9)) end
  if rn.memory_gb and (mem or -1) >= 0 then n = math.min(n, math.floor(mem / rn.memory_gb + 1e-9)) end
  -- Now: no more ranks than free slots it can pick (an offer whose counts
  -- and free list disagree places no rank on a slot it does not list).
  if not idle and n > 0 then
    local devices = pick_devices(rn, n, o)
    if wants_devices(rn) then n = math.min(n, #devices) end
    n = math.min(n, #(pick_slots(rn, n, o, devices)))
  end
  return math.max(0, n)
end

-- The live workers' recorded offers but `worker`'s, each {worker, offer}:
-- those holding a reservation for another trial than `tid` are left out.
local function other_offers(P, worker, tid)
  local out = {}
  local all = redis.call('HGETALL', P .. 'offers')
  for i = 1, #all, 2 do
    local w = all[i]
    if w ~= worker then
      if redis.call('EXISTS', P .. 'worker:' .. w .. ':alive') == 0 then
        redis.call('HDEL', P .. 'offers', w)
      else
        local held = redis.call('GET', P .. 'reserving:' .. w)
        if not held or held == tid then out[#out + 1] = {worker = w, offer = parse_offer(all[i + 1])} end
      end
    end
  end
  return out
end

-- Whether a live worker other than `worker` could hold all of it once idle
-- (then the trial waits for it rather than spreading over several).
local function another_holds_whole(P, worker, need, tid, slots)
  for _, c in ipairs(other_offers(P, worker, tid)) do
    if fits_idle(need, slots, c.offer) then return true end
  end
  return false
end

-- Where the gang's ranks go: {{worker, count, offer}, ...}, the claimer first
-- (rank 0), then the other workers that fit most ranks (by name among equals)
-- until all k have a slot; per_host m: exactly m on each; nil when they do not
-- all fit (now, or once idle when `idle`).
local function gang_plan(P, worker, o, need, tid, idle)
  local k, m = need.ranks, need.per_host
  local rn = rank_need(need)
  local function share(n, left)
    if m then return (n >= m and left >= m) and m or 0 end
    return math.min(n, left)
  end
  local first = share(ranks_fitting(rn, o, idle), k)
  if first < 1 then return nil end
  local plan, left = {{worker = worker, count = first, offer = o}}, k - first
  if left == 0 then return plan end
  local others = other_offers(P, worker, tid)
  for _, c in ipairs(others) do c.fit = ranks_fitting(rn, c.offer, idle) end
  table.sort(others, function(a, b)
    if a.fit ~= b.fit then return a.fit > b.fit end
    return a.worker < b.worker
  end)
  for _, c in ipairs(others) do
    if left == 0 then break end
    local n = share(c.fit, left)
    if n > 0 then
      plan[#plan + 1] = {worker = c.worker, count = n, offer = c.offer}
      left = left - n
    end
  end
  if left > 0 then return nil end
  return plan
end

-- The trial `t` (the fields claim_many reads) becomes running, leased to `worker`.
local function lease_to(P, t, worker, now, lease_ms, delta)
  move_counts(P, t, TrialState.running, delta)
  t.worker, t.started_ms, t.control, t.error = worker, int(now), Control.none, ''
  t.lease_ms, t.lease_deadline = int(lease_ms), int(now + lease_ms)
  redis.call('HSET', P .. 'trial:' .. t.id, 'state', TrialState.running, 'worker', worker, 'started_ms',
             t.started_ms, 'control', Control.none, 'error', '', 'lease_ms', t.lease_ms,
             'lease_deadline', t.lease_deadline, 'gang', '')
  redis.call('ZADD', P .. 'leases', t.lease_deadline, t.id)
  emit(P, 'trial.started', t.sweep, t.id, json_obj({worker = worker, attempt = tonumber(t.attempt)}))
end

-- Leases the gang trial `t` to the plan's first worker and hands the other
-- workers their shares (P..'ranks:'<worker>), their recorded offers reduced
-- by what their ranks take. The claim row's 'slots' becomes the leader's own
-- share and its 'gang' the layout {world, ranks = {{worker, first, count}}}.
-- A plan of one worker (the whole trial fits it) is a plain claim out of its offer.
local function place_gang(P, t, need, plan, now, lease_ms, delta)
  if #plan == 1 then
    t.placed = slot_list(take(need, tonumber(t.slots), plan[1].offer))
    lease_to(P, t, plan[1].worker, now, lease_ms, delta)
    return
  end
  local rn = rank_need(need)
  local layout, first, mine, mine_devs = {}, 0, {}, {}
  for i, p in ipairs(plan) do
    for _ = 1, p.count do
      local got = take(rn, 1, p.offer)
      if i == 1 then
        for _, s in ipairs(got) do mine[#mine + 1] = s end
        for _, d in ipairs(got.devs or {}) do mine_devs[#mine_devs + 1] = d end
      end
    end
    layout[i] = {worker = p.worker, first = first, count = p.count}
    first = first + p.count
  end
  local leader = plan[1].worker
  table.sort(mine)
  t.placed = slot_list(mine, (not plan[1].offer.legacy) and mine_devs or nil)
  lease_to(P, t, leader, now, lease_ms, delta)
  t.gang = cjson.encode({world = first, ranks = layout})
  t.slots = int(plan[1].count)
  redis.call('HSET', P .. 'trial:' .. t.id, 'gang', t.gang)
  for i = 2, #plan do
    local p = plan[i]
    redis.call('HSET', P .. 'offers', p.worker, cjson.encode(p.offer))
    redis.call('RPUSH', P .. 'ranks:' .. p.worker,
               cjson.encode({trial = t.id, sweep = t.sweep, attempt = tonumber(t.attempt),
                             number = tonumber(t.number), kind = t.kind, params = t.params,
                             extra = t.extra, first = layout[i].first, count = p.count,
                             world = first, leader = leader}))
    -- Until it first renews it, the follower's rank lease is the claim's.
    redis.call('SET', P .. 'rank_lease:' .. t.id .. ':' .. t.attempt .. ':' .. p.worker, '1',
               'PX', int(lease_ms))
  end
  wake_pending = true  -- idle followers wake and pick their shares up at once
end

-- A follower's claim first takes the gang shares waiting for it (those of
-- attempts still running), out of its offer: {{share JSON, spec, slots}, ...}
-- (slots: the indices its ranks take).
-- A share handed out stays in P..'ranks_sent:'<worker>, with its slots, until
-- the follower first renews its rank lease (rank_heartbeat): a claim whose
-- reply was lost on the way hands it out again with the next one, on the same
-- slots (the worker knows a share it already runs by its trial, attempt and
-- first rank; one that does not finds those slots free, and the claim takes
-- them out of its offer).
local function take_ranks(P, worker, o, cache)
  local key, sent = P .. 'ranks:' .. worker, P .. 'ranks_sent:' .. worker
  local waiting = redis.call('LRANGE', sent, 0, -1)
  local resent = #waiting  -- the first ones: the worker's slots hold them already
  for _, text in ipairs(redis.call('LRANGE', key, 0, -1)) do waiting[#waiting + 1] = text end
  if #waiting == 0 then return {} end
  redis.call('DEL', key, sent)
  local out = {}
  for i, text in ipairs(waiting) do
    local r = cjson.decode(text)
    local st = redis.call('HMGET', P .. 'trial:' .. r.trial, 'state', 'attempt')
    if st[1] == TrialState.running and tonumber(st[2]) == r.attempt then
      local rn = rank_need(needs_of(P, r.sweep, cache))
      if i > resent then
        local placed, devices = {}, {}
        for _ = 1, r.count do
          local got = take(rn, 1, o)
          for _, s in ipairs(got) do placed[#placed + 1] = s end
          for _, d in ipairs(got.devs or {}) do devices[#devices + 1] = d end
        end
        table.sort(placed)
        r.slots = placed
        if not o.legacy then r.devs = devices end
        text = cjson.encode(r)
      else
        take_these(rn, r.slots or {}, r.devs, o)  -- only when the reply was lost: they are free
      end
      out[#out + 1] = {text, redis.call('HGET', P .. 'sweep:' .. r.sweep, 'spec') or '',
                       slot_list(r.slots or {}, r.devs)}
      redis.call('RPUSH', sent, text)
    end
  end
  return out
end

