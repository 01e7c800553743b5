-- Claims: a worker takes trials (and the gang shares promised to it) that
-- fit what it offers, round robin over the ready sweeps.
local function claim_fields(P, tid)
  local v = redis.call('HMGET', P .. 'trial:' .. tid, 'state', 'slots', 'sweep', 'kind', 'number',
                       'params', 'attempt', 'released', 'max_attempts', 'created_ms', 'extra')
  if not v[1] then return nil end
  return {id = tid, state = v[1], slots = v[2], sweep = v[3], kind = v[4], number = v[5],
          params = v[6], attempt = v[7], released = v[8] or '0', max_attempts = v[9],
          created_ms = v[10], extra = v[11] or ''}
end

-- The projects of a claim's sweeps, read once per claim: weight (its share of
-- free slots), max_slots and max_gpus (its hard limits; 0: none), used and
-- gpus (the slots and GPUs its running trials hold, with those this claim
-- gave it).
local function project_state(P, sid, cache)
  if not cache.projects then cache.projects, cache.sweep_project = {}, {} end
  local byname = cache.projects
  local name = cache.sweep_project[sid]
  if not name then
    name = redis.call('HGET', P .. 'sweep:' .. sid, 'project') or 'default'
    cache.sweep_project[sid] = name
  end
  local p = byname[name]
  if not p then
    local v = redis.call('HMGET', P .. 'project:' .. name, 'weight', 'max_slots', 'max_gpus')
    local use = redis.call('HMGET', P .. 'project_use:' .. name, 'slots', 'gpus')
    p = {name = name, weight = tonumber(v[1] or '') or 1, max_slots = tonumber(v[2] or '') or 0,
         max_gpus = tonumber(v[3] or '') or 0, used = tonumber(use[1] or '0') or 0,
         gpus = tonumber(use[2] or '0') or 0, turn = 0}
    if not (p.weight > 0) then p.weight = 1 end
    byname[name] = p
  end
  return p
end

-- Whether `slots` more (GPU slots when `need` asks for GPUs) would take
-- project p past a hard limit.
local function over_limit(p, slots, need)
  if p.max_slots > 0 and p.used + slots > p.max_slots then return true end
  return p.max_gpus > 0 and (tonumber(need.gpus) or 0) > 0 and p.gpus + slots > p.max_gpus
end

-- What trial tid (of `slots` slots, a sweep needing `need`) now holds counts
-- against its project p.
local function hold(P, p, tid, need)
  local slots = tonumber(redis.call('HGET', P .. 'trial:' .. tid, 'slots')) or 1
  p.used = p.used + slots
  if (tonumber(need.gpus) or 0) > 0 then p.gpus = p.gpus + slots end
end

-- A reservation this worker holds: nil when it holds none (or it ended), else
-- true after claiming the reserved trial into `claimed` (it fit), false when
-- it still does not fit (the reservation is renewed; nothing else is claimed).
local function honour_reservation(P, worker, o, lease_ms, now, cache, claimed, specs, delta)
  local rkey = P .. 'reserving:' .. worker
  local tid = redis.call('GET', rkey)
  if not tid then return nil end
  local t = claim_fields(P, tid)
  local owner = redis.call('GET', P .. 'reserve:' .. tid)
  local mine = owner == worker
  local need = t and needs_of(P, t.sweep, cache)
  if t and t.state == TrialState.queued and owner and not mine and is_gang(need) then
    return false  -- held for the gang another worker reserved: its ranks may need our slots
  end
  -- A reservation of a project now at its limit is given up: the limit holds.
  if not t or t.state ~= TrialState.queued or not mine or
      over_limit(project_state(P, t.sweep, cache), tonumber(t.slots) or 1, need) then
    redis.call('DEL', rkey)
    if mine then redis.call('DEL', P .. 'reserve:' .. tid) end
    return nil
  end
  local gang = is_gang(need) and (need.per_host or not fits_idle(need, tonumber(t.slots), o))
  if gang then
    local plan = gang_plan(P, worker, o, need, tid, false)
    local held = cjson.decode(redis.call('HGET', P .. 'trial:' .. tid, 'reserved_for') or '[]')
    if not plan then
      for _, w in ipairs(held) do
        if redis.call('GET', P .. 'reserving:' .. w) == tid then
          redis.call('PEXPIRE', P .. 'reserving:' .. w, reserve_ms(lease_ms))
        end
      end
      redis.call('PEXPIRE', rkey, reserve_ms(lease_ms))
      redis.call('PEXPIRE', P .. 'reserve:' .. tid, reserve_ms(lease_ms))
      return false
    end
    for _, w in ipairs(held) do
      if redis.call('GET', P .. 'reserving:' .. w) == tid then redis.call('DEL', P .. 'reserving:' .. w) end
    end
    redis.call('DEL', rkey, P .. 'reserve:' .. tid)
    redis.call('HDEL', P .. 'trial:' .. tid, 'reserved_for')
    place_gang(P, t, need, plan, now, lease_ms, delta)
  elseif not fits_now(need, tonumber(t.slots), o) then
    redis.call('PEXPIRE', rkey, reserve_ms(lease_ms))
    redis.call('PEXPIRE', P .. 'reserve:' .. tid, reserve_ms(lease_ms))
    return false
  else
    redis.call('DEL', rkey, P .. 'reserve:' .. tid)
    t.placed = slot_list(take(need, tonumber(t.slots), o))
    lease_to(P, t, worker, now, lease_ms, delta)
  end
  local qkey = P .. 'queue:' .. t.sweep
  redis.call('LREM', qkey, 1, tid)
  if redis.call('LLEN', qkey) == 0 then unready(P, t.sweep) end
  claimed[#claimed + 1] = t
  specs[t.sweep] = redis.call('HGET', P .. 'sweep:' .. t.sweep, 'spec') or ''
  return true
end

-- The next id of sweep sid's queue for this claim, nil when none is left
-- within scan_max. The queue is read in chunks about the size of what is
-- wanted (up to scan_max in all), not scan_max ids on every call.
local function next_queued(P, sid, q, scan, wanted)
  if q.pos > #q.ids then
    if not q.more or #q.ids >= scan then return nil end
    local chunk = math.min(scan - #q.ids, math.max(8, 2 * wanted))
    local got = redis.call('LRANGE', P .. 'queue:' .. sid, #q.ids, #q.ids + chunk - 1)
    for _, id in ipairs(got) do q.ids[#q.ids + 1] = id end
    q.more = #got == chunk
    if #got == 0 then return nil end
  end
  local tid = q.ids[q.pos]
  q.pos = q.pos + 1
  return tid
end

-- Whether trial tid's reservation may be (re)made by this worker: none, its
-- own, or one whose worker no longer reserves anything.
local function may_reserve(P, worker, tid)
  local by = redis.call('GET', P .. 'reserve:' .. tid)
  return not by or by == worker or redis.call('EXISTS', P .. 'reserving:' .. by) == 0
end

-- A gang passed over kReserveAfter times: its leader-to-be and the workers of
-- its idle plan hold their slots for it.
local function reserve_gang(P, worker, tid, idle_plan, lease_ms)
  local ttl = reserve_ms(lease_ms)
  local held = {}
  redis.call('SET', P .. 'reserve:' .. tid, worker, 'PX', ttl)
  redis.call('SET', P .. 'reserving:' .. worker, tid, 'PX', ttl)
  for i = 2, #idle_plan do
    local w = idle_plan[i].worker
    if redis.call('SET', P .. 'reserving:' .. w, tid, 'PX', ttl, 'NX') then
      held[#held + 1] = w
    elseif redis.call('GET', P .. 'reserving:' .. w) == tid then
      held[#held + 1] = w
    end
  end
  redis.call('HSET', P .. 'trial:' .. tid, 'reserved_for', cjson.encode(held))
end

-- A trial wider than any one worker (or per_host): across workers, as a gang
-- or not at all; reserved once passed over often enough.
local function decide_gang(P, worker, o, need, q, tid, t, now, lease_ms, delta)
  local plan = gang_plan(P, worker, o, need, tid, false)
  if plan then
    q.drop[#q.drop + 1] = tid
    place_gang(P, t, need, plan, now, lease_ms, delta)
    return 'took'
  end
  local idle_plan = not q.passed and gang_plan(P, worker, o, need, tid, true)
  q.passed = true
  if idle_plan and redis.call('HINCRBY', P .. 'trial:' .. tid, 'skipped', 1) >= kReserveAfter and
       may_reserve(P, worker, tid) then
    reserve_gang(P, worker, tid, idle_plan, lease_ms)
    return 'reserved'
  end
  return nil
end

-- What the claim does with queued trial tid (t: its claim fields) of a sweep
-- needing `need`: 'took' (leased to the worker, or placed as a gang),
-- 'reserved' (the claim ends there), or nil (passed over: the next one).
local function decide(P, worker, o, need, q, tid, t, now, lease_ms, delta)
  if not t or t.state ~= TrialState.queued then
    q.drop[#q.drop + 1] = tid
    return nil
  end
  local slots = tonumber(t.slots)
  if fits_now(need, slots, o) and not need.per_host then
    q.drop[#q.drop + 1] = tid
    t.placed = slot_list(take(need, slots, o))
    lease_to(P, t, worker, now, lease_ms, delta)
    return 'took'
  end
  if is_gang(need) and (need.per_host or (not fits_idle(need, slots, o) and
       not another_holds_whole(P, worker, need, tid, slots))) then
    return decide_gang(P, worker, o, need, q, tid, t, now, lease_ms, delta)
  end
  if not q.passed and fits_idle(need, slots, o) and
       redis.call('HINCRBY', P .. 'trial:' .. tid, 'skipped', 1) >= kReserveAfter then
    q.passed = true
    if may_reserve(P, worker, tid) then
      redis.call('SET', P .. 'reserve:' .. tid, worker, 'PX', reserve_ms(lease_ms))
      redis.call('SET', P .. 'reserving:' .. worker, tid, 'PX', reserve_ms(lease_ms))
      return 'reserved'
    end
    return nil
  end
  q.passed = true  -- only the first trial passed over in a sweep counts a skip
  return nil
end

-- After a claim: the first `visited` sweeps of 'ready' go to its back, in
-- order (those the claim passed over among them too: their projects had had
-- their share); the ids taken or found gone leave their queues; then the
-- queues left empty leave.
local function settle_queues(P, order, queues, visited)
  local ready = P .. 'ready'
  for _ = 1, visited do redis.call('LMOVE', ready, ready, 'LEFT', 'RIGHT') end
  for i = 1, visited do
    local q, qkey = queues[i] or {ids = {}, drop = {}}, P .. 'queue:' .. order[i]
    local prefix = #q.drop
    for j = 1, #q.drop do
      if q.drop[j] ~= q.ids[j] then
        prefix = 0
        break
      end
    end
    if prefix > 0 then
      redis.call('LTRIM', qkey, prefix, -1)
    elseif #q.drop > 0 then
      for _, tid in ipairs(q.drop) do redis.call('LREM', qkey, 1, tid) end
    end
    if redis.call('LLEN', qkey) == 0 then unready(P, order[i]) end
  end
end

-- Takes up to `want` queued trials that fit the offer `o` (free slots, GPUs,
-- cores, memory, kinds, labels; see above) and leases them to `worker`: a
-- list of trial tables (running now) with the sweeps' specs by id.
-- Fair between projects, then between a project's sweeps: each trial goes to
-- the project with ready work that holds the fewest slots for its weight
-- (used / weight; weighted fair share over the ready sweeps, at most
-- sweeps_max of them in the claims' round-robin order), and within it to its
-- next sweep in that order; the sweeps it visited move to the back of
-- 'ready'. A project at its max_slots (or, for trials on GPUs, its
-- max_gpus) takes nothing more of that kind: the limit holds
-- atomically however many workers claim. A project alone with ready work
-- takes every free slot (idle share is lent, never hoarded). In each sweep
-- it takes the oldest queued trials that fit among the first scan_max of its
-- queue; ids no longer queued (cancelled while waiting) are dropped on the
-- way, and a sweep whose queue is empty leaves 'ready'. A trial that would
-- fit the worker idle but not now, passed over kReserveAfter times, is
-- reserved (above), and the claim ends there.
local function claim_many(P, worker, o, want, lease_ms, scan, sweeps_max)
  if redis.call('EXISTS', P .. 'queue') == 1 then migrate_shared_queue(P) end
  local claimed, specs = {}, {}
  local cache = {}  -- the visited sweeps' requests and projects
  local ranks = take_ranks(P, worker, o, cache)
  -- What is left after this claim, for the gangs other workers place (below).
  local function record() redis.call('HSET', P .. 'offers', worker, cjson.encode(o)) end
  if want < 1 or o.slots < 1 then
    record()
    return claimed, specs, ranks
  end
  local now = now_ms()
  local delta = {}
  local held = honour_reservation(P, worker, o, lease_ms, now, cache, claimed, specs, delta)
  if held == false then
    apply_counts(P, delta)
    record()
    return claimed, specs, ranks
  end
  for _, t in ipairs(claimed) do  -- a gang's row holds the leader's share: the trial's whole
    hold(P, project_state(P, t.sweep, cache), t.id, needs_of(P, t.sweep, cache))
  end
  local order = redis.call('LRANGE', P .. 'ready', 0, sweeps_max - 1)
  local queues = {}  -- per visited sweep: its scanned ids, next position, ids to drop
  local visited = 0
  local done = {}  -- sweeps (by index) with nothing more for this claim
  local reserved = false
  -- The projects' sweeps, in ready order.
  local members, projects = {}, {}
  for i, sid in ipairs(order) do
    local p = project_state(P, sid, cache)
    if not members[p.name] then
      members[p.name] = {}
      projects[#projects + 1] = p
    end
    table.insert(members[p.name], i)
  end
  local priority = {}  -- by sweep index
  for i, sid in ipairs(order) do
    local n = tonumber(redis.call('HGET', P .. 'sweep:' .. sid, 'priority') or '0') or 0
    priority[i] = n == n and n or 0  -- a NaN (written around the API) counts as 0
  end
  -- One trial of project p's next sweep with work, among those of its highest
  -- priority with work left: true when taken.
  local function take_one(p)
    local list = members[p.name]
    while true do
      local top
      for _, i in ipairs(list) do
        if not done[i] and (not top or priority[i] > top) then top = priority[i] end
      end
      if not top then return false end
      for k = 1, #list do
        local at = (p.turn + k - 1) % #list + 1
        local i = list[at]
        if not done[i] and priority[i] == top then
          local sid = order[i]
          local q = queues[i]
          if not q then
            q = {ids = {}, pos = 1, drop = {}, more = true}
            queues[i] = q
            if i > visited then visited = i end
          end
          local need = needs_of(P, sid, cache)
          while true do
            local tid = next_queued(P, sid, q, scan, want - #claimed)
            if not tid then break end
            -- What the claim decides on and the worker needs, not the whole hash.
            local t = claim_fields(P, tid)
            if t and t.state == TrialState.queued and over_limit(p, tonumber(t.slots) or 1, need) then
              q.pos = q.pos - 1  -- left queued: the project is at its limit
              break
            end
            local verdict = decide(P, worker, o, need, q, tid, t, now, lease_ms, delta)
            if verdict == 'took' then
              claimed[#claimed + 1] = t
              if not specs[sid] then specs[sid] = redis.call('HGET', P .. 'sweep:' .. sid, 'spec') or '' end
              hold(P, p, tid, need)
              p.turn = at
              return true
            elseif verdict == 'reserved' then
              reserved = true
              return false
            end
          end
          done[i] = true
        end
      end
    end  -- the next priority down, while a sweep has work
  end
  while not reserved and #claimed < want and o.slots > 0 do
    -- The project with work left that would hold the fewest slots for its
    -- weight once given one more ((used + 1) / weight: a slot freed by a
    -- trial whose end is still on its way from the worker counts as held, and
    -- this rule still hands it back to the project that should have it).
    local best
    for _, p in ipairs(projects) do
      if not p.exhausted and
           (not best or (p.used + 1) / p.weight < (best.used + 1) / best.weight) then
        best = p
      end
    end
    if not best then break end
    if not take_one(best) then best.exhausted = true end
  end
  apply_counts(P, delta)
  settle_queues(P, order, queues, visited)
  record()
  return claimed, specs, ranks
end

-- claim_batch P worker free_slots max_trials lease_ms scan_max [sweeps_max]
--   -> {{claim row (kClaimFields)...}, {sid, spec, ...}, wake cursor}
-- The cursor is '' when max_trials were claimed, else where wait_for_work
-- starts waiting.
local function claim_batch(keys, a)
  local P, worker = a[1], a[2]
  local claimed, specs, ranks = claim_many(P, worker, parse_offer(a[3]), tonumber(a[4]),
                                           tonumber(a[5]), tonumber(a[6]), tonumber(a[7] or '64'))
  local trials = {}
  for i, t in ipairs(claimed) do trials[i] = claim_row(t) end
  local spec_list = {}
  for sid, spec in pairs(specs) do
    table.insert(spec_list, sid)
    table.insert(spec_list, spec)
  end
  local cursor = ''
  if #claimed < tonumber(a[4]) then cursor = wake_cursor(P) end
  local shares = {}
  for i, r in ipairs(ranks) do shares[i] = r end
  return {trials, spec_list, cursor, shares}
end

-- claim P worker free_slots lease_ms scan_max [sweeps_max] -> nil | trial hash (flat)
--   followed by 'sweep_spec', the sweep's spec as submitted (one trial; kept
--   for callers of earlier versions)
local function claim(keys, a)
  local P = a[1]
  local claimed, specs = claim_many(P, a[2], parse_offer(a[3]), 1, tonumber(a[4]),
                                    tonumber(a[5]), tonumber(a[6] or '64'))
  if #claimed == 0 then return false end
  local out = flatten(P .. 'trial:' .. claimed[1].id)
  table.insert(out, 'sweep_spec')
  table.insert(out, specs[claimed[1].sweep])
  return out
end


