-- Common helpers: server time, JSON, refusals, and the event stream (emit).

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function int(n) return string.format('%d', n) end

local function refuse(code, msg) return redis.error_reply(code .. ' ' .. msg) end

local function hgetall(key)
  local flat = redis.call('HGETALL', key)
  if #flat == 0 then return nil end
  local t = {}
  for i = 1, #flat, 2 do t[flat[i]] = flat[i + 1] end
  return t
end

-- JSON text of a string. cjson.encode costs more than the rest of a claim on
-- the hot path, so a string with nothing to escape is quoted directly.
local function jstr(v)
  if not string.find(v, '[%c"\\]') then return '"' .. v .. '"' end
  return cjson.encode(v)
end

local function jval(v)
  local ty = type(v)
  if ty == 'string' then return jstr(v) end
  if ty == 'number' then
    if v == math.floor(v) and v > -1e15 and v < 1e15 then return string.format('%d', v) end
    return string.format('%.17g', v)
  end
  if ty == 'boolean' then return v and 'true' or 'false' end
  return 'null'
end

-- JSON object from `tbl` (strings, numbers) plus `raw` fields whose values
-- are already JSON text (numbers that must not go through a double).
local function json_obj(tbl, raw)
  local parts = {}
  for k, v in pairs(tbl) do parts[#parts + 1] = jstr(k) .. ':' .. jval(v) end
  for k, v in pairs(raw or {}) do parts[#parts + 1] = jstr(k) .. ':' .. v end
  return '{' .. table.concat(parts, ',') .. '}'
end

-- The most bytes of one event's data and the most events kept: the stream is
-- bounded in bytes as well as entries. Readers that need more read the trial or
-- the sweep. The scheduler's flags (deployment hash) override the defaults.
local DEFAULT_EVENT_DATA = 4096
local DEFAULT_EVENTS = 100000

local function emit(P, typ, sweep, trial, data)
  data = data or '{}'
  local limits = redis.call('HMGET', P .. 'deployment', 'max_event_bytes', 'max_events')
  local max_data = tonumber(limits[1] or '') or DEFAULT_EVENT_DATA
  local max_events = tonumber(limits[2] or '') or DEFAULT_EVENTS
  if #data > max_data then data = '{"truncated":true,"bytes":' .. #data .. '}' end
  redis.call('XADD', P .. 'events', 'MAXLEN', '~', tostring(max_events), '*', 'type', typ,
             'sweep', sweep or '', 'trial', trial or '', 'data', data)
end

