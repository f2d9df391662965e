-- The load client's script for wrk (C, one thread): the request of a LoadSpec (scripts/bench/lib.ts)
-- written by the runner as lines "<key> <value>" in the file given after `--`. Counts every answer
-- that is not 2xx with the expected body, optionally paces requests to an overall rate, and prints
-- one JSON line (LoadResult, without the client's CPU time, which the runner measures).
local ffi = require("ffi")
ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } bench_timespec;
int clock_gettime(int clock, bench_timespec *time);
]]
local CLOCK_MONOTONIC = 1
local timespec = ffi.new("bench_timespec")
local function now_ms()
  ffi.C.clock_gettime(CLOCK_MONOTONIC, timespec)
  return tonumber(timespec.tv_sec) * 1000 + tonumber(timespec.tv_nsec) / 1e6
end

local spec = { headers = {}, invoices = {} }
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  for line in io.lines(args[1]) do
    local key, value = line:match("^(%S+) ?(.*)$")
    if key == "header" then
      local name, text = value:match("^([^:]+): (.*)$")
      spec.headers[name] = text
    elseif key == "invoice" then
      table.insert(spec.invoices, value)
    elseif key then
      spec[key] = value
    end
  end
  spec.rate = tonumber(spec.rate)
  sent, non2xx, mismatches = 0, 0, 0
end

-- Without `rate`, as fast as the connections go; with it, one request every 1000/rate ms across all
-- connections (each waits for the next free slot), so the overall rate holds while answers are fast.
-- A backlog of at most a second is caught up.
function delay()
  if not spec.rate then return 0 end
  local now = now_ms()
  local slot = math.max(next_slot_ms or now, now - 1000)
  next_slot_ms = slot + 1000 / spec.rate
  return math.max(0, slot - now)
end

function request()
  local body = spec.body
  if spec.part1 then
    -- One notification per request, invoices in turn; its transaction id per request or per invoice.
    local invoice = spec.invoices[sent % #spec.invoices + 1]
    local transaction = spec.prefix .. (spec.transactions == "per-request" and tostring(sent) or invoice)
    body = spec.part1 .. invoice .. spec.part2 .. transaction .. spec.part3
  end
  sent = sent + 1
  return wrk.format(spec.method, nil, spec.headers, body)
end

function response(status, headers, body)
  if status < 200 or status > 299 then
    non2xx = non2xx + 1
  elseif (spec.expect_start and body:sub(1, #spec.expect) or body) ~= spec.expect then
    mismatches = mismatches + 1
  end
end

function done(summary, latency, requests)
  local failed, mismatched = 0, 0
  for _, thread in ipairs(threads) do
    failed = failed + thread:get("non2xx")
    mismatched = mismatched + thread:get("mismatches")
  end
  local errors = summary.errors
  io.write(string.format(
    '{"requestsPerSecond":%.2f,"p50":%.3f,"p99":%.3f,"total":%d,"non2xx":%d,"errors":%d,"timeouts":%d,"mismatches":%d}\n',
    summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000,
    latency:percentile(99) / 1000,
    summary.requests,
    failed,
    errors.connect + errors.read + errors.write,
    errors.timeout,
    mismatched
  ))
end
